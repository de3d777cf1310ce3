"""Shared fixtures: test data paths, and an isolated environment for every test.

Every test runs with no API key, no base URL and its own cache directory, so no test can
reach the internet or a user's real cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# The references that use numba (ranx, ppi_py) run their code interpreted: the same results,
# without compiling for half a minute of CPU on a fresh machine (numba's cache starts empty).
# Set before any test module imports numba; NUMBA_DISABLE_JIT=0 in the environment keeps the JIT.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")


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


SLOW_FIRST = ("tests/test_ray_engine.py", "tests/test_anchors.py",
              "tests/test_exact_ids.py", "tests/test_report_browser.py",
              "tests/test_hardening_signals.py", "tests/test_judges_versus.py",
              "tests/test_notebook.py", "tests/test_docs.py")
"""The longest files, handed out first (with ``--no-loadscope-reorder``): a long file started
last would leave the other workers idle at the end."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist (``--dist loadfile``) a test file runs on one worker, as a whole (its
    module fixtures are built once); the slowest files are handed out first."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return SLOW_FIRST.index(path) if path in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: the order within a file and among the rest is kept
