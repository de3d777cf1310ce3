"""The run orchestration: run directories, `latest`, the lock, drift, and a whole run."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from labeler.pipeline.drift import compute_drift
from labeler.pipeline.rundir import (LockedError, finish_run_dir, hold_lock, latest_run,
                                     new_run_dir, set_latest)

NOON = datetime(2026, 11, 21, 12, 0, 0, tzinfo=timezone.utc)


def _labels(grades: dict[tuple[str, str], int | None]) -> pd.DataFrame:
    rows = [{"query_id": q, "chunk_id": c, "grade": g, "status": "ok" if g is not None else
             "failed"} for (q, c), g in grades.items()]
    df = pd.DataFrame(rows)
    df["grade"] = df["grade"].astype("Int64")
    return df


def _scores(**means: float) -> dict:
    return {"k": [10], "runs": {tag: {"ndcg@10": {"mean": m, "median": m, "n_queries": 1,
                                                  "per_query": {"1": m}}}
                                for tag, m in means.items()}}


def test_drift_counts_changed_grades_and_moved_runs() -> None:
    prev = _labels({("1", "a"): 0, ("1", "b"): 2, ("1", "c"): 3, ("2", "x"): 1,
                    ("2", "gone"): 0})
    cur = _labels({("1", "a"): 0, ("1", "b"): 3, ("1", "c"): None, ("2", "x"): 0,
                   ("2", "new"): 2})
    d = compute_drift(prev, cur, _scores(bm25=0.50, bert=0.70), _scores(bm25=0.505, bert=0.60),
                      max_changed_share=0.5, max_ndcg_delta=0.02, previous="20261120T000000Z")
    # compared: a, b, x; graded only now: new; graded only before: gone, c (failed now)
    assert (d.n_compared, d.n_changed, d.n_added, d.n_removed) == (3, 2, 1, 2)
    assert d.changed[["chunk_id", "previous", "current"]].values.tolist() == [
        ["b", 2, 3], ["x", 1, 0]]
    assert d.drifted
    assert d.reasons == ["2 of 3 LLM grades changed (66.7% > 50.0%)",
                         "run bert: NDCG@10 moved -0.1000 (|Δ| > 0.02; noise not testable: "
                         "1 query scored by both jobs)"]
    out = d.to_dict()
    assert out["labels"]["n_changed"] == 2 and out["previous"] == "20261120T000000Z"
    assert {r["system"]: r["drifted"] for r in out["ndcg"]} == {"bert": True, "bm25": False}
    json.dumps(out)  # JSON-ready


def test_no_previous_run_means_no_drift() -> None:
    d = compute_drift(None, _labels({("1", "a"): 2}), None, _scores(a=0.1))
    assert not d.drifted and d.previous is None and d.to_dict()["labels"]["n_compared"] == 0


def test_identical_runs_do_not_drift() -> None:
    labels = _labels({("1", "a"): 2, ("1", "b"): 0})
    d = compute_drift(labels, labels.copy(), _scores(a=0.3), _scores(a=0.3),
                      max_changed_share=0.0, max_ndcg_delta=0.0)
    assert not d.drifted and d.n_changed == 0 and d.n_compared == 2


def test_second_lock_holder_is_refused(tmp_path: Path) -> None:
    with hold_lock(tmp_path / "out"):
        with pytest.raises(LockedError) as err:
            with hold_lock(tmp_path / "out"):
                pass
        assert "another run holds the lock" in str(err.value)
        assert err.value.exit_code == 2
    with hold_lock(tmp_path / "out"):  # released: free again
        pass


def test_run_dirs_are_dated_unique_and_latest_follows(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert latest_run(out) is None
    first = new_run_dir(out, NOON)
    second = new_run_dir(out, NOON)
    assert first.name == "20261121T120000Z.partial"
    assert second.name == "20261121T120000Z-2.partial"
    done = finish_run_dir(first)
    set_latest(out, done)
    assert done.name == "20261121T120000Z" and not first.exists()
    assert latest_run(out) == done
    assert (out / "latest.txt").read_text() == "runs/20261121T120000Z\n"
    assert (out / "latest").resolve() == done.resolve()


def _sample_job(tmp_path: Path, text: str) -> Path:
    from labeler.demo import copy_sample

    copy_sample(tmp_path / "data")
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_calibrated_run_merges_calibrated_llm_grades(tmp_path: Path) -> None:
    from labeler import io
    from labeler.pipeline.config import load_config
    from labeler.pipeline.nightly import run_pipeline

    job = _sample_job(tmp_path, """\
out_dir = "out"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 5
[judge]
model = "lexical"
[human]
qrels = "half.qrels"
calibrate = true
bootstrap = 0
""")
    human = io.read_qrels(tmp_path / "data" / "human.qrels")
    half = human.loc[human["query_id"].isin(sorted(set(human["query_id"]))[:5])]
    io.write_qrels(half, tmp_path / "half.qrels")
    outcome = run_pipeline(load_config(job))
    assert outcome.exit_code == 0
    cal = json.loads((outcome.run_dir / "calibration.json").read_text())
    assert cal["report"]["evaluation"].startswith("k-fold held out")
    table = {int(k): v for k, v in cal["report"]["mapping"].items()}
    merged = io.read_labels(outcome.run_dir / "merged.jsonl")
    applied = cal["applied"]  # only where the held-out alpha beats the raw grades
    assert cal["report"]["reason"].startswith("applied" if applied else "not applied")
    machine = merged.loc[merged["source"] == ("llm-calibrated" if applied else "llm")]
    assert len(machine) > 0 and (merged["source"] == "human").sum() == len(half)
    assert machine["grade"].tolist() == ([table[g] for g in machine["llm_grade"]] if applied
                                         else machine["llm_grade"].tolist())
    assert (outcome.run_dir / "scores-merged.json").is_file()
    assert outcome.manifest["counts"]["human_labels"] == len(half)


def test_pairs_without_runs_or_humans_label_only(tmp_path: Path) -> None:
    from labeler import io
    from labeler.pipeline.config import load_config
    from labeler.pipeline.nightly import run_pipeline

    pairs = pd.DataFrame({"query_id": ["1", "1"], "query": ["what is a qrel"] * 2,
                          "chunk_id": ["a", "b"],
                          "chunk": ["A qrel is a relevance judgement.", "Bananas."]})
    io.write_table(pairs, tmp_path / "pairs.csv")
    job = _sample_job(tmp_path, 'out_dir = "out"\n[inputs]\npairs = "pairs.csv"\n'
                                '[judge]\nmodel = "lexical"\n')
    outcome = run_pipeline(load_config(job))
    names = sorted(p.name for p in outcome.run_dir.iterdir())
    assert names == ["drift.json", "labels.jsonl", "labels.qrels", "manifest.json", "run.log"]
    assert outcome.report_html is None and outcome.scores is None
    labels = io.read_labels(outcome.run_dir / "labels.jsonl")
    assert labels.set_index("chunk_id")["grade"]["a"] > labels.set_index("chunk_id")["grade"]["b"]
