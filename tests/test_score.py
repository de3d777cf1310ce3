"""NDCG: every worked example of the seeds at its exact value, and evaluate()'s semantics.

Exact values from ../shared/seeds/README.md. Two seeds print a wrong figure; the tests use
the right one and say so where it happens.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd
import pytest

from labeler.scoring import results as scoring
from labeler.errors import ConfigError, InputError

POOL_RAG = [3, 1, 1, 0, 0]          # seed 000: human labels of chunk_17, 42, 08, 91, 33


# --------------------------------------------------------------------------- seeds

def test_seed003_dcg_hand_check_and_edge_cases() -> None:
    assert scoring.dcg([3, 0, 2]) == 4.0                      # 3/1 + 0/log2(3) + 2/2
    assert scoring.ndcg_at_k([3, 2, 1, 0], 4) == 1.0          # perfect ordering
    assert scoring.ndcg_at_k([0, 1, 2, 3], 4) < 1.0           # reversed: strictly below 1
    assert scoring.ndcg_at_k([0, 0, 0], 3) == 0.0             # IDCG 0 → 0.0, no ZeroDivision


def test_seed002_five_documents_at_5() -> None:
    rels = [3, 2, 3, 0, 1]
    # the seed's code prints DCG 6.149, IDCG 6.323 (its prose rounds to 6.150 / 6.325)
    assert scoring.dcg(rels, 5) == pytest.approx(6.149, abs=5e-4)
    assert scoring.dcg(sorted(rels, reverse=True), 5) == pytest.approx(6.323, abs=5e-4)
    assert scoring.ndcg_at_k(rels, 5) == pytest.approx(0.972364, abs=1e-6)


def test_seed001_step_by_step() -> None:
    # "ranks them 2, 1, 3": DCG 4.1, IDCG 4.7 (4.76), NDCG 0.87
    assert scoring.dcg([2, 1, 3]) == pytest.approx(4.1309, abs=1e-4)
    assert scoring.ndcg_at_k([2, 1, 3], 3) == pytest.approx(0.867503, abs=1e-6)
    # "your AI produced [2, 3, 1]": DCG 4.39, IDCG 4.76, NDCG 0.92
    assert scoring.dcg([2, 3, 1]) == pytest.approx(4.3928, abs=1e-4)
    assert scoring.dcg([3, 2, 1]) == pytest.approx(4.761860, abs=1e-6)
    assert scoring.ndcg_at_k([2, 3, 1], 3) == pytest.approx(0.922495, abs=1e-6)


def test_seed000_concierges_with_the_pool_ideal() -> None:
    a, b, pool = [3, 2, 0, 0, 0], [2, 1, 3, 0, 0], [3, 2, 1, 0, 0]
    assert (sum(a), sum(b)) == (5, 6)                          # CG prefers B …
    assert scoring.dcg(a) == pytest.approx(4.26, abs=5e-3)       # … DCG prefers A
    assert scoring.dcg(b) == pytest.approx(4.13, abs=5e-3)
    assert scoring.dcg(pool) == pytest.approx(4.761860, abs=1e-6)
    assert scoring.ndcg_at_k(a, 5, ideal_rels=pool) == pytest.approx(0.894999, abs=1e-6)
    assert scoring.ndcg_at_k(b, 5, ideal_rels=pool) == pytest.approx(0.867503, abs=1e-6)


def test_seed000_rag_retrievers() -> None:
    a, b = [3, 0, 1, 1, 0], [1, 3, 1, 0, 0]
    assert scoring.dcg(POOL_RAG) == pytest.approx(4.13, abs=5e-3)   # IDCG@5 = IDCG@3
    assert scoring.dcg(a) == pytest.approx(3.93, abs=5e-3)
    assert scoring.ndcg_at_k(a, 5, ideal_rels=POOL_RAG) == pytest.approx(0.951523, abs=1e-6)
    assert scoring.dcg(a, 3) == pytest.approx(3.5, abs=1e-12)
    assert scoring.ndcg_at_k(a, 3, ideal_rels=POOL_RAG) == pytest.approx(0.847267, abs=1e-6)
    # The seed prints DCG_B = 3.40 and NDCG_B = 0.823 at 5 and at 3 (= 3.40 / 4.13); the exact
    # DCG is 1 + 3/log2(3) + 1/2 = 3.392789, so NDCG_B = 3.392789 / 4.130930 = 0.821314.
    assert scoring.dcg(b) == pytest.approx(3.392789, abs=1e-6)
    assert scoring.ndcg_at_k(b, 5, ideal_rels=POOL_RAG) == pytest.approx(0.821314, abs=1e-6)
    assert scoring.ndcg_at_k(b, 3, ideal_rels=POOL_RAG) == pytest.approx(0.821314, abs=1e-6)


def test_seed004_example_ranking() -> None:
    rels = [3, 1, 2, 0, 1]
    assert scoring.dcg(rels) == pytest.approx(5.018, abs=5e-4)
    # The seed's IDCG 5.149 uses the rank-5 discount 0.387 at rank 4; the right one is
    # 1/log2(5) = 0.431, so IDCG = 5.193 and NDCG@5 = 0.966345, not 0.975.
    assert scoring.dcg(sorted(rels, reverse=True)) == pytest.approx(5.193, abs=5e-4)
    assert scoring.ndcg_at_k(rels, 5) == pytest.approx(0.966345, abs=1e-6)


def _frames(rankings: dict[str, list[str]], grades: dict[str, dict[str, int]], system: str = "A"
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = pd.DataFrame([(q, c, float(len(docs) - i), system) for q, docs in rankings.items()
                        for i, c in enumerate(docs)],
                       columns=["query_id", "chunk_id", "score", "system"])
    qrels = pd.DataFrame([(q, c, g) for q, d in grades.items() for c, g in d.items()],
                         columns=["query_id", "chunk_id", "grade"])
    return qrels, run


RAG_GRADES = {"chunk_17": 3, "chunk_42": 1, "chunk_08": 1, "chunk_91": 0, "chunk_33": 0}


def test_seed000_rag_through_evaluate_and_seed001_question() -> None:
    # Qrels = the human-labelled pool, run = Retriever A's ranking; trec_eval's IDCG (from
    # every judged chunk) gives the seed's numbers.
    qrels, run = _frames({"maternity": ["chunk_17", "chunk_91", "chunk_42", "chunk_08",
                                        "chunk_33"]}, {"maternity": RAG_GRADES})
    res = scoring.evaluate(qrels, run, k=[5, 3])
    assert res.mean("A", 5) == pytest.approx(0.951523, abs=1e-6)
    assert res.mean("A", 3) == pytest.approx(0.847267, abs=1e-6)
    # Seed 001's reader asks whether the ideal uses only the returned items or every judged
    # one. SPEC §6: every judged one. Return only the top 3: the ideal stays (3, 1, 1) ...
    short = run.iloc[:3]
    trec = scoring.evaluate(qrels, short, k=3)
    assert trec.mean("A") == pytest.approx(3.5 / scoring.dcg([3, 1, 1]), abs=1e-12)
    # ... whereas the seed-003 "same list re-sorted" ideal only sees (3, 0, 1) → (3, 1, 0).
    resorted = scoring.evaluate(qrels, short, k=3, ideal="run")
    assert resorted.mean("A") == pytest.approx(3.5 / scoring.dcg([3, 1, 0]), abs=1e-12)
    assert resorted.mean("A") > trec.mean("A")


def test_seed004_mean_median_and_queries_without_relevant_chunks() -> None:
    rankings = {"q1": ["a", "b", "c", "d", "e"],      # grades 3,1,2,0,1 → 0.966345
                "q2": ["x", "y"],                      # grades 2,0 → 1.0
                "q3": ["m", "n"],                      # judged, nothing relevant → IDCG 0
                "q4": ["s", "t"]}                      # no judgement at all → IDCG 0
    grades = {"q1": dict(zip("abcde", [3, 1, 2, 0, 1])), "q2": {"x": 2, "y": 0},
              "q3": {"m": 0, "n": 0}}
    qrels, run = _frames(rankings, grades)
    res = scoring.evaluate(qrels, run, k=5)
    row = res.summary.iloc[0]
    assert row["mean"] == pytest.approx((0.966345 + 1.0) / 2, abs=1e-6)
    assert row["median"] == pytest.approx((0.966345 + 1.0) / 2, abs=1e-6)
    assert (row["n_queries"], row["n_empty"], row["n_not_in_qrels"]) == (2, 2, 1)
    pq = res.per_query.set_index("query_id")["ndcg"]
    assert math.isnan(pq["q3"]) and math.isnan(pq["q4"])
    # include_empty: trec_eval's mean over the run's queries that are in the qrels (q3 as 0,
    # q4 still out, as trec_eval skips queries it has no judgement for)
    full = scoring.evaluate(qrels, run, k=5, include_empty=True)
    assert full.mean("A") == pytest.approx((0.966345 + 1.0 + 0.0) / 3, abs=1e-6)
    assert full.median("A") == pytest.approx(0.966345, abs=1e-6)
    assert full.summary.iloc[0]["n_queries"] == 3
    assert full.to_dict()["runs"]["A"]["ndcg@5"]["per_query"]["q3"] == 0.0


# --------------------------------------------------------------------------- evaluate

def test_ties_broken_by_chunk_id_descending_bytes() -> None:
    # equal scores: trec_eval ranks the larger chunk id first (strcmp, descending); "é" is
    # after "z" in UTF-8 bytes, "Z" before "a".
    run = pd.DataFrame({"query_id": ["q"] * 4, "chunk_id": ["a", "é", "z", "Z"],
                        "score": [1.0] * 4})
    qrels = pd.DataFrame({"query_id": ["q"], "chunk_id": ["z"], "grade": [3]})
    res = scoring.evaluate(qrels, run, k=[1, 2])
    pq = res.per_query.set_index("k")
    assert pq.loc[1, "ndcg"] == 0.0                         # "é" first
    assert pq.loc[2, "ndcg"] == pytest.approx(1 / math.log2(3))  # "z" second


def test_leading_zero_ids_are_distinct_and_unjudged_share() -> None:
    run = pd.DataFrame({"query_id": ["007", "007", "7", "7"],
                        "chunk_id": ["01", "1", "01", "1"], "score": [2.0, 1.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query_id": ["007", "7"], "chunk_id": ["1", "01"], "grade": [2, 2]})
    res = scoring.evaluate(qrels, run, k=2)
    pq = res.per_query.set_index("query_id")
    assert pq.loc["007", "ndcg"] == pytest.approx(1 / math.log2(3))
    assert pq.loc["7", "ndcg"] == 1.0
    assert pq.loc["007", "judged_at_k"] == 0.5
    assert res.summary.iloc[0]["judged_share"] == 0.5
    assert res.systems == ["run"]                            # no system column: "run"


def test_queries_only_in_qrels_are_not_scored() -> None:
    qrels, run = _frames({"q1": ["a"]}, {"q1": {"a": 1}, "q9": {"z": 3}})
    res = scoring.evaluate(qrels, run, k=10)
    assert res.per_query["query_id"].tolist() == ["q1"]
    assert res.mean("A") == 1.0


def test_several_systems_and_result_api() -> None:
    q1, r1 = _frames({"q": ["a", "b"]}, {"q": {"a": 0, "b": 2}}, "bm25")
    _, r2 = _frames({"q": ["b", "a"]}, {}, "dense")
    res = scoring.evaluate(q1, pd.concat([r1, r2]), k=[2, 1])
    assert res.systems == ["bm25", "dense"] and res.ks == [2, 1]
    assert res.mean("dense", 1) == 1.0 and res.mean("bm25", 1) == 0.0
    assert res.mean("dense") == 1.0                          # first k by default
    assert list(res.per_query.columns) == scoring.PER_QUERY_COLUMNS
    assert list(res.summary.columns)[:7] == ["system", "k", "mean", "median", "n_queries",
                                             "n_empty", "judged_share"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.ks = [5]  # type: ignore[misc]
    with pytest.raises(KeyError):
        res.mean("nope")
    md = res.to_markdown()
    assert "| bm25 | 2 |" in md and "| dense | 1 | 1.0000 |" in md


def test_to_dict_is_the_spec_json_object() -> None:
    qrels, run = _frames({"1": ["a", "b"], "2": ["c"]}, {"1": {"a": 1, "b": 3}, "2": {"c": 0}},
                         "bm25")
    d = scoring.evaluate(qrels, run, k=[10, 5]).to_dict()
    assert d["k"] == [10, 5] and list(d["runs"]) == ["bm25"]
    entry = d["runs"]["bm25"]["ndcg@10"]
    assert {"mean", "median", "n_queries", "per_query"} <= set(entry)
    assert entry["n_queries"] == len(entry["per_query"]) == 1
    assert list(entry["per_query"]) == ["1"]                    # query 2: IDCG 0, left out
    assert entry["n_empty"] == 1
    json.dumps(d, allow_nan=False)                              # strict JSON


def test_exponential_gain() -> None:
    qrels, run = _frames({"q": ["a", "b"]}, {"q": {"a": 1, "b": 3}})
    res = scoring.evaluate(qrels, run, k=2, gain="exponential")
    expected = (1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3))
    assert res.mean("A") == pytest.approx(expected, abs=1e-12)
    assert scoring.ndcg_at_k([1, 3], 2, gain="exponential") == pytest.approx(expected, abs=1e-12)


def test_inputs_untouched_and_dicts_accepted() -> None:
    qrels, run = _frames({"q": ["b", "a"]}, {"q": {"a": 2}})
    run = run.sample(frac=1, random_state=1)
    before_q, before_r = qrels.copy(deep=True), run.copy(deep=True)
    res = scoring.evaluate(qrels, run, k=2)
    pd.testing.assert_frame_equal(qrels, before_q)
    pd.testing.assert_frame_equal(run, before_r)
    from_dicts = scoring.evaluate({"q": {"a": 2}}, {"q": {"b": 2.0, "a": 1.0}}, k=2)
    assert from_dicts.mean("run") == res.mean("A") == pytest.approx(1 / math.log2(3))


def test_dataframes_io_would_clean_are_scored_like_io() -> None:
    # integer ids and blanks around ids go through io.as_run / io.as_qrels, as files do
    run = pd.DataFrame({"query_id": [7, 7], "chunk_id": [" a", "b "], "score": [2, 1]})
    qrels = pd.DataFrame({"query_id": ["7", "7"], "chunk_id": ["a", "b"], "grade": [0, 1]})
    res = scoring.evaluate(qrels, run, k=2)
    assert res.per_query["query_id"].tolist() == ["7"]
    assert res.mean("run") == pytest.approx(1 / math.log2(3))


def test_bad_inputs_are_input_or_config_errors() -> None:
    qrels, run = _frames({"q": ["a", "b"]}, {"q": {"a": 2}})
    dup = pd.concat([run, run.iloc[[0]].assign(score=0.5)], ignore_index=True)
    with pytest.raises(InputError, match="ranked twice"):
        scoring.evaluate(qrels, dup)
    conflict = pd.concat([qrels, qrels.assign(grade=1)], ignore_index=True)
    with pytest.raises(InputError, match="judged twice"):
        scoring.evaluate(conflict, run)
    same_twice = pd.concat([qrels, qrels], ignore_index=True)   # identical rows: kept once
    assert scoring.evaluate(same_twice, run, k=2).mean("A") == 1.0
    # any integer grade scores (trec_eval); a grade that is not an integer is refused
    assert scoring.evaluate(qrels.assign(grade=[5]), run, k=2).mean("A") == 1.0
    with pytest.raises(InputError, match="must be an integer"):
        scoring.evaluate(qrels.assign(grade=["high"]), run)
    with pytest.raises(ConfigError):
        scoring.evaluate(qrels, run, k=0)
    with pytest.raises(ConfigError):
        scoring.evaluate(qrels, run, gain="log")
    with pytest.raises(ConfigError):
        scoring.ndcg_at_k([1, 2], k=-1)
