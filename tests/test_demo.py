"""`labeler demo`: the whole pipeline on the packaged sample, offline, from any directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main
from labeler.demo import copy_sample

RUNS = {"bm25tuned_p", "p_exp_bert", "ICT-CKNRM_B"}


def _labeler() -> list[str]:
    exe = shutil.which("labeler")
    return [exe] if exe else [sys.executable, "-m", "labeler"]


def test_demo_in_a_fresh_directory_writes_the_report(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # would fail loudly if the demo went online
    t0 = time.monotonic()
    proc = subprocess.run([*_labeler(), "demo"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 60
    latest = tmp_path / "labeler-demo" / "latest"
    report = latest / "report" / "report.html"
    assert report.is_file() and (latest / "report" / "report.md").is_file()
    assert f"report: {Path('labeler-demo') / 'runs'}" in proc.stdout
    assert "report.html" in proc.stdout and "Cohen's kappa" in proc.stdout
    data = json.loads((latest / "report" / "report.json").read_text())
    assert set(data["runs"]) == RUNS
    for r in data["runs"].values():
        assert 0 < r["human"] <= 1 and 0 <= r["llm"] <= 1
        assert abs(r["delta"] - (r["llm"] - r["human"])) < 1e-12
    labels = io.read_labels(latest / "labels.jsonl")
    assert len(labels) == 190 and (labels["status"] == "ok").all()
    assert set(labels["model"]) == {"lexical-baseline"}
    agreement = json.loads((latest / "agreement.json").read_text())
    assert agreement["n"] == 190 and agreement["cohen_kappa"] is not None

    # the demo's config is an ordinary job: run it again, a new run with no drift
    monkeypatch.chdir(tmp_path)
    again = CliRunner().invoke(main, ["run", "labeler-demo/demo.toml", "--fail-on-drift",
                                      "--log-level", "warning"], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    runs = sorted(p.name for p in (tmp_path / "labeler-demo" / "runs").iterdir())
    assert len(runs) == 2 and not any(r.endswith(".partial") for r in runs)
    drift = json.loads((latest / "drift.json").read_text())
    assert drift["previous"] == runs[0] and drift["labels"]["n_changed"] == 0
    assert "drift vs" in again.output


def test_sample_ndcg_equals_the_official_top10(tmp_path: Path) -> None:
    """Ranks 1-10 of the sample runs are the submitted ones, all judged."""
    sample = copy_sample(tmp_path / "data")
    runs = io.read_runs(sorted((sample / "runs").glob("*.run")))
    human = io.read_qrels(sample / "human.qrels")
    corpus = io.read_corpus(sample / "corpus.jsonl")
    ranked = runs.sort_values(["system", "query_id", "score"], ascending=[True, True, False])
    top10 = ranked.groupby(["system", "query_id"]).head(10)
    judged = top10.merge(human, on=["query_id", "chunk_id"])
    assert len(judged) == len(top10) == 3 * 10 * 10
    assert set(runs["chunk_id"]) <= set(corpus["chunk_id"])
