"""Shared fixtures: test data paths, and an isolated environment for every test.

Every test runs with no API key, no base URL and its own cache directory, so no test can
reach the internet or a user's real cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
                  ) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
                "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LABELER_CACHE_DIR", str(tmp_path_factory.mktemp("labeler-cache")))
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.fixture
def data_dir() -> Path:
    """``tests/data``, resolved relative to this file."""
    return DATA


@pytest.fixture
def fake_llm():
    """A started in-process ``FakeLLMServer`` with default settings; stopped after the test."""
    from labeler.testing import FakeLLMServer

    with FakeLLMServer() as server:
        yield server


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than there are cores — many tests wait on a local server,
    a subprocess or Ray, and the extra worker uses that time (2 cores: 3 workers)."""
    return (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1) + 1


SLOW_FIRST = ("tests/test_ray_engine.py", "ranx", "tests/test_anchors.py",
              "tests/test_exact_ids.py", "tests/test_report_browser.py",
              "tests/test_hardening_signals.py", "tests/test_judges_versus.py",
              "tests/test_notebook.py", "tests/test_docs.py")
"""The longest groups, handed out first (with ``--no-loadscope-reorder``): a long group
started last would leave the other worker idle at the end."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist (``--dist loadgroup``): a test file runs on one worker, as a whole
    (its module fixtures are built once), unless a test names another group — the ranx tests
    share one worker, so ranx compiles its numba code once. The slowest groups go first."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))

    def rank(item: pytest.Item) -> int:
        marker = item.get_closest_marker("xdist_group")
        if marker is None:
            return len(SLOW_FIRST)
        group = marker.args[0] if marker.args else marker.kwargs.get("name")
        return SLOW_FIRST.index(group) if group in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: the order within a group and among the rest is kept
