"""The same TREC DL 2019 data handed over as the field holds it — a path, an ir_datasets id,
a dataset object, ir_measures tuples, PyTerrier frames, ranx objects, pytrec_eval dicts —
gives the same results through score, pool and label. The local ir_datasets dataset is built
from tests/data/dl19_irds (no network)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import labeler
from labeler import io
from labeler.errors import InputError

import irdskit

SLICE = irdskit.SLICE
QRELS, QUERIES, DOCS = SLICE / "qrels-pass.qrels", SLICE / "queries.tsv", SLICE / "docs.tsv"
RUNS = {"bm25": SLICE / "runs" / "bm25tuned_p.run", "bert": SLICE / "runs" / "p_exp_bert.run"}
MEASURES = ["AP", "P(rel=2)@10", "RR", "R@20"]


@pytest.fixture(scope="module")
def ds_id(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("ir_datasets")
    return irdskit.register(tmp_path_factory.mktemp("irds"))


def _same_scores(got: Any, expected: Any, name: str) -> None:
    keys = ["system", "measure", "query_id"]
    _frames_equal(got.values, expected.values, keys, name)
    _frames_equal(got.per_query, expected.per_query, ["system", "k", "query_id"], name)


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], name: str = "") -> None:
    a = a.sort_values(keys).reset_index(drop=True)
    b = b.sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_dtype=False, obj=name or "DataFrame")


def _pt_qrels() -> pd.DataFrame:   # PyTerrier's qrels columns
    q = io.read_qrels(QRELS)
    return pd.DataFrame({"qid": q.query_id, "docno": q.chunk_id, "label": q.grade})


def _pt_run(path: Path) -> pd.DataFrame:   # PyTerrier's result columns
    r = io.read_run(path)
    return pd.DataFrame({"qid": r.query_id, "docno": r.chunk_id, "score": r.score,
                         "rank": r.groupby("query_id").cumcount()})


def _qrels_forms(ds_id: str) -> dict[str, Callable[[], Any]]:
    import ir_datasets

    forms: dict[str, Callable[[], Any]] = {
        "irds id": lambda: f"irds:{ds_id}",
        "dataset": lambda: ir_datasets.load(ds_id),
        "ir_datasets qrels tuples": lambda: list(ir_datasets.load(ds_id).qrels_iter()),
        "PyTerrier frame": _pt_qrels,
        "ir_measures frame": lambda: _pt_qrels().rename(columns={
            "qid": "query_id", "docno": "doc_id", "label": "relevance"}),
    }
    try:
        import ir_measures
        forms["ir_measures Qrel"] = lambda: list(ir_measures.read_trec_qrels(str(QRELS)))
    except ImportError:
        pass
    try:
        import pytrec_eval
        forms["pytrec_eval dict"] = lambda: pytrec_eval.parse_qrel(QRELS.read_text().splitlines())
    except ImportError:
        pass
    try:
        import ranx
        # from_dict, as the other ranx calls of the suite (with numba's JIT on, each new ranx
        # call costs seconds of compilation)
        forms["ranx Qrels"] = lambda: ranx.Qrels.from_dict(io.to_pytrec_eval(io.read_qrels(QRELS)))
    except ImportError:
        pass
    return forms


def _run_forms(ds_id: str) -> dict[str, Callable[[], Any]]:
    path = RUNS["bm25"]
    forms: dict[str, Callable[[], Any]] = {
        "irds id (scored docs)": lambda: f"irds:{ds_id}",
        "PyTerrier frame": lambda: _pt_run(path),
        "records": lambda: io.read_run(path)[["query_id", "chunk_id", "score"]]
        .to_dict("records"),
    }
    try:
        import ir_measures
        forms["ir_measures ScoredDoc"] = lambda: list(ir_measures.read_trec_run(str(path)))
    except ImportError:
        pass
    try:
        import pytrec_eval
        forms["pytrec_eval dict"] = lambda: pytrec_eval.parse_run(path.read_text().splitlines())
    except ImportError:
        pass
    try:
        import ranx
        forms["ranx Run"] = lambda: ranx.Run.from_dict(io.to_pytrec_eval(io.read_run(path)))
    except ImportError:
        pass
    return forms


def test_qrels_in_every_form_read_and_score_the_same(ds_id: str) -> None:
    reference = io.read_qrels(QRELS)
    expected = labeler.score(QRELS, {"bm25": RUNS["bm25"]}, measures=MEASURES)
    for name, make in _qrels_forms(ds_id).items():
        _frames_equal(io.read_qrels(make()), reference, ["query_id", "chunk_id"])
        _same_scores(labeler.score(make(), {"bm25": RUNS["bm25"]}, measures=MEASURES),
                     expected, name)


def test_runs_in_every_form_score_the_same(ds_id: str) -> None:
    expected = labeler.score(QRELS, {"bm25": RUNS["bm25"]}, measures=MEASURES)
    for name, make in _run_forms(ds_id).items():
        _same_scores(labeler.score(f"irds:{ds_id}", {"bm25": make()}, measures=MEASURES),
                     expected, name)
        unnamed = labeler.score(QRELS, make(), measures=MEASURES)   # one run, not in a dict
        _frames_equal(unnamed.values.assign(system="bm25"), expected.values,
                      ["measure", "query_id"], name)


def test_several_ranx_runs_keep_their_names() -> None:
    ranx = pytest.importorskip("ranx")
    runs = [ranx.Run.from_dict(io.to_pytrec_eval(io.read_run(p)), name=n)
            for n, p in RUNS.items()]
    got = labeler.score(QRELS, runs)
    expected = labeler.score(QRELS, {n: p for n, p in RUNS.items()})
    _frames_equal(got.per_query, expected.per_query, ["system", "k", "query_id"])


def _query_forms(ds_id: str) -> dict[str, Any]:
    import ir_datasets

    q = io.read_queries(QUERIES)
    return {"irds id": f"irds:{ds_id}", "dataset": ir_datasets.load(ds_id),
            "ir_datasets query tuples": list(ir_datasets.load(ds_id).queries_iter()),
            "PyTerrier topics": q.rename(columns={"query_id": "qid"}),
            "ir_datasets frame": q.rename(columns={"query": "text"}),
            "dict": dict(zip(q["query_id"], q["query"]))}


def _corpus_forms(ds_id: str) -> dict[str, Any]:
    import ir_datasets

    c = io.read_corpus(DOCS)
    return {"irds id": f"irds:{ds_id}", "dataset": ir_datasets.load(ds_id),
            "ir_datasets doc tuples": list(ir_datasets.load(ds_id).docs_iter()),
            "docid, doc": c.rename(columns={"chunk_id": "docid", "chunk": "doc"}),
            "ir_datasets frame": c.rename(columns={"chunk_id": "doc_id", "chunk": "text"}),
            "PyTerrier frame": c.rename(columns={"chunk_id": "docno", "chunk": "text"})}


def test_pool_takes_every_form_and_fetches_only_the_pooled_documents(
        ds_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from ir_datasets.indices import PickleLz4FullStore

    expected = labeler.pool(QUERIES, DOCS, [str(p) for p in RUNS.values()], depth=7)
    asked: list[list[str]] = []
    get_many = PickleLz4FullStore.get_many

    def spy(self: Any, doc_ids: Any, field: Any = None) -> Any:
        asked.append(list(doc_ids))
        return get_many(self, doc_ids, field)

    monkeypatch.setattr(PickleLz4FullStore, "get_many", spy)
    monkeypatch.setattr(io.irds, "corpus", lambda ds: pytest.fail("the corpus was exported"))
    runs = {n: _pt_run(p) for n, p in RUNS.items()}
    for qname, queries in _query_forms(ds_id).items():
        got = labeler.pool(queries, f"irds:{ds_id}", runs, depth=7)
        _frames_equal(got, expected, ["query_id", "chunk_id"], qname)
    assert all(sorted(ids) == sorted(set(expected.chunk_id)) for ids in asked) and asked
    monkeypatch.undo()
    for cname, corpus in _corpus_forms(ds_id).items():
        got = labeler.pool(QUERIES, corpus, [str(p) for p in RUNS.values()], depth=7)
        _frames_equal(got, expected, ["query_id", "chunk_id"], cname)


def test_label_takes_every_form_of_pairs(ds_id: str) -> None:
    pairs = labeler.pool(QUERIES, DOCS, [str(p) for p in RUNS.values()], depth=3)
    expected = labeler.label(pairs, model="lexical").records
    pt_frame = pairs.rename(columns={"query_id": "qid", "chunk_id": "docno", "chunk": "text"})
    for name, form in {"PyTerrier frame": pt_frame, "records": pairs.to_dict("records"),
                       "pooled from irds": labeler.pool(f"irds:{ds_id}", f"irds:{ds_id}",
                                                        [str(p) for p in RUNS.values()],
                                                        depth=3)}.items():
        got = labeler.label(form, model="lexical").records
        _frames_equal(got, expected, ["query_id", "chunk_id"], name)


def test_a_dataset_labels_its_judged_pairs_with_its_topic_fields(
        ds_id: str, tmp_path: Path) -> None:
    import ir_datasets

    from labeler.testing import FakeLLMServer

    ds = ir_datasets.load(irdskit.TOPICS_ID)
    judged = io.read_qrels(ds)
    with FakeLLMServer() as srv:
        result = labeler.label(f"irds:{irdskit.TOPICS_ID}", model="fake", base_url=srv.base_url,
                               prompt="dna-style", cache_dir=tmp_path / "c")
        bodies = [r["body"] for r in srv.requests]
        again = labeler.label(ds, model="fake", base_url=srv.base_url, prompt="dna-style",
                              cache_dir=tmp_path / "c")
    records = result.records
    assert len(records) == len(judged) and (records.status == "ok").all()
    _frames_equal(records[["query_id", "chunk_id"]], judged[["query_id", "chunk_id"]],
                  ["query_id", "chunk_id"])
    text = " ".join(str(m["content"]) for b in bodies for m in b["messages"])
    assert "Passages that answer: causes of military suicide" in text
    assert again.summary.cached == len(judged)   # the dataset object: the same pairs, cached
    assert again.records["grade"].tolist() == records["grade"].tolist()


def test_errors_name_the_callers_columns_and_objects(tmp_path: Path) -> None:
    bad = tmp_path / "q.csv"
    bad.write_text("qid,doc,rel\n1,d1,2\n")
    with pytest.raises(InputError, match=r"found qid, doc, rel") as exc:
        io.read_qrels(bad)
    assert "docno" in str(exc.value)   # the names that would have been understood
    frame = pd.DataFrame({"topic": ["1"], "passage_text": ["x"]})
    with pytest.raises(InputError, match=r"found topic, passage_text"):
        labeler.pool(QUERIES, frame, [str(RUNS["bm25"])])
    with pytest.raises(TypeError, match="qrels must be"):
        io.read_qrels(3.5)
    with pytest.raises(InputError, match=r"'x' is ranked twice"):   # records: a run's checks
        io.as_run([{"qid": "1", "docno": "x", "score": 1.0}, {"qid": "1", "docno": "x",
                                                             "score": 2.0}])


def test_an_unknown_dataset_id_is_named(ds_id: str) -> None:
    with pytest.raises(InputError, match=r"irds:no-such/dataset: no such ir_datasets dataset"):
        io.read_qrels("irds:no-such/dataset")
    with pytest.raises(InputError, match=r"irds:labeler-test/dl19-topics: the dataset has no "
                                         r"scored documents"):
        labeler.score(QRELS, f"irds:{irdskit.TOPICS_ID}")


def test_several_systems_in_one_pyterrier_frame_keep_their_names() -> None:
    runs = io.read_runs([f"{n}={p}" for n, p in RUNS.items()])
    frame = io.to_pyterrier(runs)                    # name, qid, docno, score, rank
    got = labeler.score(QRELS, frame)
    _frames_equal(got.per_query, labeler.score(QRELS, runs).per_query,
                  ["system", "k", "query_id"])


def test_ir_datasets_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from labeler.errors import ConfigError

    monkeypatch.setitem(sys.modules, "ir_datasets", None)
    with pytest.raises(ConfigError, match=r"labeler\[irds\]"):
        io.read_queries("irds:msmarco-passage/trec-dl-2019")
