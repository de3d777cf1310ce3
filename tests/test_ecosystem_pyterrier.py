"""labeler inside PyTerrier (no Java): LLMJudge labels a result frame row for row through the
fake OpenAI-compatible server with the same cache as labeler.label, and pt.Experiment scores
runs on LLM qrels exactly as labeler.score does."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import labeler
from labeler import io
from labeler.errors import InputError
from labeler.testing import FakeLLMServer, FaultPlan

pt = pytest.importorskip("pyterrier")

from labeler.pyterrier import LLMJudge  # noqa: E402

SLICE = Path(__file__).parent / "data" / "dl19_irds"
RUNS = {"bm25": SLICE / "runs" / "bm25tuned_p.run", "bert": SLICE / "runs" / "p_exp_bert.run"}
MARK = "REFUSE-THIS-PASSAGE"


def _results(depth: int = 5) -> pd.DataFrame:
    """BM25's top ``depth`` as a PyTerrier result frame with texts, one row repeated."""
    pairs = labeler.pool(SLICE / "queries.tsv", SLICE / "docs.tsv", [str(RUNS["bm25"])],
                         depth=depth)
    frame = pairs.rename(columns={"query_id": "qid", "chunk_id": "docno", "chunk": "text"})
    frame["score"] = range(len(frame), 0, -1)
    return pd.concat([frame, frame.iloc[[0]]], ignore_index=True)


def test_llm_judge_labels_a_frame_row_for_row_with_the_same_cache(tmp_path: Path) -> None:
    frame = _results()
    frame.loc[3, "text"] = f"{frame.loc[3, 'text']} {MARK}"
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)   # any order
    with FakeLLMServer(faults=FaultPlan(refuse_marker=MARK)) as srv:
        judge = LLMJudge(model="fake", base_url=srv.base_url, cache_dir=tmp_path / "c",
                         max_retries=0)
        out = judge(frame)
        calls = srv.calls
        pairs = frame.rename(columns={"qid": "query_id", "docno": "chunk_id",
                                      "text": "chunk"})
        again = labeler.label(pairs, model="fake", base_url=srv.base_url,
                              cache_dir=tmp_path / "c", max_retries=0)
        # labeler.label finds every judged pair in the cache; only the refused one is asked again
        assert srv.calls == calls + 1
    assert len(out) == len(frame)
    pd.testing.assert_frame_equal(out[frame.columns], frame)   # rows and order kept
    failed = out["text"].str.contains(MARK)
    assert (out.loc[failed, "label_status"] == "failed").all()
    assert out.loc[failed, "label"].isna().all()
    assert (out.loc[~failed, "label_status"] == "ok").all()
    assert out.loc[~failed, "label"].between(0, 3).all()
    by_key = again.records.set_index(["query_id", "chunk_id"])["grade"]
    expected = [by_key[(q, d)] for q, d in zip(out["qid"], out["docno"])]
    assert out["label"].astype(object).where(out["label"].notna(), None).tolist() == [
        None if pd.isna(g) else int(g) for g in expected]
    distinct = out.drop_duplicates(["qid", "docno"])
    assert again.summary.cached == int((distinct["label_status"] == "ok").sum()) == 19


def test_llm_judge_refuses_a_frame_without_texts() -> None:
    with pytest.raises(InputError, match=r"needs the column\(s\) text; found qid, query, docno"):
        LLMJudge(model="lexical")(pd.DataFrame({"qid": ["1"], "query": ["q"], "docno": ["d"]}))


def test_experiment_on_llm_qrels_equals_labeler_score(tmp_path: Path) -> None:
    runs = {n: io.read_run(p) for n, p in RUNS.items()}
    topics = io.read_queries(SLICE / "queries.tsv").rename(columns={"query_id": "qid"})
    pooled = labeler.pool(SLICE / "queries.tsv", SLICE / "docs.tsv", runs, depth=10)
    frame = pooled.rename(columns={"query_id": "qid", "chunk_id": "docno", "chunk": "text"})
    judged = LLMJudge(model="lexical")(frame)
    llm_qrels = judged[judged.label_status == "ok"][["qid", "docno", "label"]]
    pipes = [pt.Transformer.from_df(io.to_pyterrier(r)) for r in runs.values()]
    from pyterrier.measures import AP, nDCG

    table = pt.Experiment(pipes, topics, llm_qrels, [nDCG @ 10, AP], names=list(runs))
    ours = labeler.score(labeler.label(pooled, model="lexical").records, runs,
                         measures=["nDCG@10", "AP"])
    for row in table.to_dict("records"):
        assert row["nDCG@10"] == pytest.approx(ours.mean(row["name"], 10), abs=1e-12)
        assert row["AP"] == pytest.approx(ours.mean(row["name"], measure="AP"), abs=1e-12)
    as_pt = ours.to_pyterrier().set_index("name")
    assert as_pt.loc["bert", "nDCG@10"] == pytest.approx(table.set_index("name").loc[
        "bert", "nDCG@10"], abs=1e-12)
    default = labeler.score(labeler.label(pooled, model="lexical").records, runs)
    assert list(default.to_pyterrier().columns) == ["name", "nDCG@10"]  # named as PyTerrier does
