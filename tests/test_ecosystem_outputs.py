"""Results out again: label and reconcile results as ir_measures / pytrec_eval / ranx /
PyTerrier qrels, runs as their run objects, labels written as TREC qrels every tool reads —
and each tool then scores them as labeler does (the tools are the reference)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import labeler
from labeler import io
from labeler.errors import ConfigError
from labeler.testing import FakeLLMServer, FaultPlan

SLICE = Path(__file__).parent / "data" / "dl19_irds"
RUNS = {"bm25": SLICE / "runs" / "bm25tuned_p.run", "bert": SLICE / "runs" / "p_exp_bert.run"}
MARK = "REFUSE-THIS-PASSAGE"


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> labeler.LabelResult:
    """LLM labels of the two runs' top 10 through the fake server, one pair refused."""
    pairs = labeler.pool(SLICE / "queries.tsv", SLICE / "docs.tsv", list(map(str, RUNS.values())),
                         depth=10)
    pairs.loc[5, "chunk"] += f" {MARK}"
    with FakeLLMServer(faults=FaultPlan(refuse_marker=MARK)) as srv:
        result = labeler.label(pairs, model="fake", base_url=srv.base_url, max_retries=0,
                               cache_dir=tmp_path_factory.mktemp("cache"))
    assert result.summary.failed == 1
    return result


def _ok(records: pd.DataFrame) -> set[tuple[str, str, int]]:
    ok = records[records.status == "ok"]
    return set(zip(ok.query_id, ok.chunk_id, ok.grade.astype(int)))


def test_label_results_convert_to_each_tools_qrels(llm: labeler.LabelResult) -> None:
    expected = _ok(llm.records)
    im = llm.to_ir_measures()
    assert list(im.columns) == ["query_id", "doc_id", "relevance"]
    assert set(zip(im.query_id, im.doc_id, im.relevance)) == expected
    pt = llm.to_pyterrier()
    assert list(pt.columns) == ["qid", "docno", "label"]
    assert set(zip(pt.qid, pt.docno, pt.label)) == expected
    nested = llm.to_pytrec_eval()
    assert {(q, d, g) for q, docs in nested.items() for d, g in docs.items()} == expected
    assert all(type(g) is int for docs in nested.values() for g in docs.values())


def test_ir_measures_and_pytrec_eval_score_the_converted_labels_as_labeler(
        llm: labeler.LabelResult) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ours = labeler.score(llm.records, {n: str(p) for n, p in RUNS.items()}, measures=["AP"])
    for name, path in RUNS.items():
        run = io.read_run(path)
        got = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.AP],
                                         llm.to_ir_measures(), io.to_ir_measures(run))
        assert got[ir_measures.nDCG @ 10] == pytest.approx(ours.mean(name, 10), abs=1e-12)
        assert got[ir_measures.AP] == pytest.approx(ours.mean(name, measure="AP"), abs=1e-12)
        per_query = pytrec_eval.RelevanceEvaluator(llm.to_pytrec_eval(), {"ndcg_cut.10"}
                                                   ).evaluate(io.to_pytrec_eval(run))
        table = ours.per_query[ours.per_query.system == name]
        assert dict(zip(table.query_id, table.ndcg)) == pytest.approx(
            {q: v["ndcg_cut_10"] for q, v in per_query.items()}, abs=1e-12)


def test_ranx_objects_hold_the_labels_and_runs(llm: labeler.LabelResult) -> None:
    # ranx.evaluate would compile its kernels for a minute here: the objects' contents are
    # checked instead (ranx scores them as pytrec_eval does, above)
    ranx = pytest.importorskip("ranx")
    run = io.read_runs([f"{n}={p}" for n, p in RUNS.items()])
    runs = io.to_ranx(run)
    assert sorted(runs) == ["bert", "bm25"] and runs["bm25"].name == "bm25"
    assert isinstance(runs["bm25"], ranx.Run)
    back = io.as_runs(list(runs.values()))
    pd.testing.assert_frame_equal(
        back.sort_values(["system", "query_id", "chunk_id"]).reset_index(drop=True),
        run.sort_values(["system", "query_id", "chunk_id"]).reset_index(drop=True),
        check_dtype=False, check_categorical=False)
    qrels = llm.to_ranx()
    assert isinstance(qrels, ranx.Qrels)
    assert set(io.as_qrels(qrels).itertuples(index=False, name=None)) == _ok(llm.records)


def test_labels_written_as_trec_qrels_read_back_by_every_tool(llm: labeler.LabelResult,
                                                              tmp_path: Path) -> None:
    path = io.write_labels(llm.records, tmp_path / "llm.qrels")
    expected = llm.to_pytrec_eval()
    assert io.to_pytrec_eval(io.read_qrels(path)) == expected
    pytrec_eval = pytest.importorskip("pytrec_eval")
    assert pytrec_eval.parse_qrel(path.read_text().splitlines()) == expected
    ir_measures = pytest.importorskip("ir_measures")
    assert {(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(
        str(path))} == _ok(llm.records)


def test_reconcile_merged_labels_convert_and_runs_become_pyterrier_results(
        llm: labeler.LabelResult) -> None:
    human = io.read_qrels(SLICE / "qrels-pass.qrels")
    rec = labeler.reconcile(llm=llm.records, human=human, bootstrap=0)
    merged = rec.to_pyterrier()
    assert len(merged) == int((rec.merged.status == "ok").sum())
    human_keys = set(zip(human.query_id, human.chunk_id, human.grade))
    assert human_keys <= set(zip(merged.qid, merged.docno, merged.label))   # human wins
    run = io.read_runs([f"{n}={p}" for n, p in RUNS.items()])
    frame = io.to_pyterrier(run)
    assert list(frame.columns) == ["name", "qid", "docno", "score", "rank"]
    first = frame[(frame.name == "bm25") & (frame["rank"] == 0)].set_index("qid")["docno"]
    top = run[run.system == "bm25"].sort_values("score", ascending=False).drop_duplicates(
        "query_id").set_index("query_id")["chunk_id"]
    assert first.sort_index().tolist() == top.sort_index().tolist()
    with pytest.raises(ConfigError, match="2 systems"):
        io.to_ir_measures(run)


def test_results_are_inputs_too(llm: labeler.LabelResult) -> None:
    runs = {n: str(p) for n, p in RUNS.items()}
    pd.testing.assert_frame_equal(labeler.score(llm, runs).per_query,
                                  labeler.score(llm.records, runs).per_query)
    rec = labeler.reconcile(llm=llm, human=SLICE / "qrels-pass.qrels", bootstrap=0)
    assert labeler.score(rec, runs).summary.equals(labeler.score(rec.merged, runs).summary)


def test_the_pyterrier_module_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "pyterrier", None)
    monkeypatch.delitem(sys.modules, "labeler.pyterrier", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'labeler\[pyterrier\]'"):
        importlib.import_module("labeler.pyterrier")
