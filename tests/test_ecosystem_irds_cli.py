"""irds:<id> wherever a command reads queries, documents, qrels or runs: the same output as
the files the local ir_datasets dataset was built from (tests/data/dl19_irds)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from labeler.cli import main

import irdskit

SLICE = irdskit.SLICE
RUNS = [f"bm25={SLICE / 'runs' / 'bm25tuned_p.run'}", f"bert={SLICE / 'runs' / 'p_exp_bert.run'}"]


@pytest.fixture(scope="module")
def irds(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("ir_datasets")
    return "irds:" + irdskit.register(tmp_path_factory.mktemp("irds"))


def _ok(*args: str) -> str:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


def test_score_reads_qrels_and_runs_from_a_dataset(irds: str) -> None:
    measures = ["--measure", "AP", "--measure", "P(rel=2)@10", "--json"]
    files = json.loads(_ok("score", "--qrels", str(SLICE / "qrels-pass.qrels"), "--run",
                           RUNS[0], *measures))
    ids = json.loads(_ok("score", "--qrels", irds, "--run", f"bm25={irds}", *measures,
                         "--format", "qrels=trec"))   # a forced format leaves an id alone
    assert ids == files


def test_pool_and_label_read_queries_and_corpus_from_a_dataset(irds: str, tmp_path: Path
                                                               ) -> None:
    for tag, queries, corpus in (("files", SLICE / "queries.tsv", SLICE / "docs.tsv"),
                                 ("irds", irds, irds)):
        _ok("pool", "--queries", str(queries), "--corpus", str(corpus), "--run", RUNS[0],
            "--run", RUNS[1], "--depth", "5", "--out", str(tmp_path / f"{tag}.jsonl"))
        _ok("label", "--queries", str(queries), "--corpus", str(corpus), "--run", RUNS[0],
            "--run", RUNS[1], "--depth", "5", "--model", "lexical",
            "--out", str(tmp_path / f"{tag}.qrels"))
    pooled = pd.read_json(tmp_path / "irds.jsonl", lines=True, dtype=False)
    assert len(pooled) > 20
    pd.testing.assert_frame_equal(pooled, pd.read_json(tmp_path / "files.jsonl", lines=True,
                                                       dtype=False))
    assert (tmp_path / "irds.qrels").read_text() == (tmp_path / "files.qrels").read_text()


def test_label_judges_a_datasets_pairs_and_reconcile_reads_its_qrels(irds: str,
                                                                     tmp_path: Path) -> None:
    topics = f"irds:{irdskit.TOPICS_ID}"
    _ok("label", "--pairs", topics, "--model", "lexical", "--out", str(tmp_path / "l.jsonl"))
    import ir_datasets

    labels = pd.read_json(tmp_path / "l.jsonl", lines=True, dtype=False)
    judged = {(q.query_id, q.doc_id) for q in ir_datasets.load(irdskit.TOPICS_ID).qrels_iter()}
    assert set(zip(labels["query_id"], labels["chunk_id"])) == judged and len(labels) == len(
        judged)
    assert (labels["status"] == "ok").all()
    out = _ok("reconcile", "--llm", str(tmp_path / "l.jsonl"), "--human", topics,
              "--queries", topics, "--corpus", topics, "--out", str(tmp_path / "m.jsonl"),
              "--audit", str(tmp_path / "audit.csv"), "--bootstrap", "0")
    assert "kappa" in out.lower()
    audit = pd.read_csv(tmp_path / "audit.csv", dtype=str)
    assert {"query", "chunk"} <= set(audit.columns) and audit["chunk"].notna().all()
