"""Helpers shared by the labelling tests: synthetic pairs, a fast retry policy, the
grades the fake server decided (read from its request log), and `labeler run` job files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from labeler.demo import copy_sample
from labeler.judges.openai_judge import OpenAIJudge
from labeler.labelling.limits import RetryPolicy
from labeler.testing import FakeLLMServer, messages_text

FAST = RetryPolicy(max_retries=4, backoff_base=0.005, backoff_max=0.05)
"""Real backoff shape, test-sized waits."""

_MARK = re.compile(r"\[(c\d{4})\]")


def make_pairs(n: int, n_queries: int = 5) -> pd.DataFrame:
    """``n`` pairs; every chunk text carries its id as ``[cNNNN]`` so requests can be traced."""
    return pd.DataFrame({
        "query_id": [f"q{i % n_queries}" for i in range(n)],
        "query": [f"what is topic {i % n_queries}" for i in range(n)],
        "chunk_id": [f"c{i:04d}" for i in range(n)],
        "chunk": [f"[c{i:04d}] a passage about topic {i % 7} and things" for i in range(n)],
    })


def server_grades(srv: FakeLLMServer) -> dict[str, int]:
    """chunk_id → the grade the server answered for it (successful, unfaulted requests)."""
    out: dict[str, int] = {}
    for req in srv.requests:
        if req["status"] != 200 or req["fault"] is not None:
            continue
        found = _MARK.search(messages_text(req["body"]["messages"]))
        if found:
            cid = found.group(1)
            if out.setdefault(cid, req["grade"]) != req["grade"]:
                raise AssertionError(f"the server answered two grades for {cid}")
    return out


def judge_for(srv: FakeLLMServer, **options: Any) -> OpenAIJudge:
    """An OpenAI judge pointed at the fake server (short timeout)."""
    options.setdefault("timeout", 5.0)
    return OpenAIJudge("fake-judge", base_url=srv.base_url, **options)


def write_pairs(df: pd.DataFrame, path: Any) -> Any:
    """Write pairs as JSONL (for CLI tests); returns the path."""
    df.to_json(path, orient="records", lines=True)
    return path


def write_job(tmp_path: Path, toml: str) -> Path:
    """``tmp_path/job.toml`` holding ``toml``, next to a copy of the sample data in ``data/``."""
    if not (tmp_path / "data").exists():
        copy_sample(tmp_path / "data")
    path = tmp_path / "job.toml"
    path.write_text(toml, encoding="utf-8")
    return path
