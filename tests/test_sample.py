"""Which pairs to label next: reproducible, stratified by LLM grade and query, never a pair a
human already labelled."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from labeler import io
from labeler.errors import ConfigError, InputError
from labeler.reconciliation.sample import annotation_sheet, propose_sample, sample_queries

DATA = Path(__file__).parent / "data" / "llmjudge"


@pytest.fixture(scope="module")
def llm() -> pd.DataFrame:
    return io.read_labels(DATA / "willia-umbrela1.qrels")  # grades 0-3: 2335/1231/608/249


def test_same_seed_same_sample_other_seed_other_sample(llm: pd.DataFrame) -> None:
    a = propose_sample(llm, n=100, seed=1)
    b = propose_sample(llm, n=100, seed=1)
    c = propose_sample(llm, n=100, seed=2)
    pd.testing.assert_frame_equal(a, b)
    assert set(zip(a["query_id"], a["chunk_id"])) != set(zip(c["query_id"], c["chunk_id"]))


def test_every_llm_grade_gets_an_equal_share_spread_over_queries(llm: pd.DataFrame) -> None:
    s = propose_sample(llm, n=200, seed=0)
    assert len(s) == 200 and not s.duplicated(["query_id", "chunk_id"]).any()
    assert s["llm_grade"].value_counts().to_dict() == {0: 50, 1: 50, 2: 50, 3: 50}
    for grade, picks in s.groupby("llm_grade"):
        available = llm.loc[llm["grade"] == grade, "query_id"].nunique()
        assert picks["query_id"].nunique() == min(50, available)
        # round robin: a query is short of the busiest query by at most one, unless exhausted
        have = llm.loc[llm["grade"] == grade, "query_id"].value_counts()
        got = picks["query_id"].value_counts().reindex(have.index, fill_value=0)
        assert (got >= have.clip(upper=got.max() - 1)).all()
    merged = s.merge(llm, on=["query_id", "chunk_id"])
    assert (merged["llm_grade"] == merged["grade"]).all()  # the grade shown is the LLM's


def test_pairs_already_labelled_are_skipped(llm: pd.DataFrame) -> None:
    human = io.read_qrels(DATA / "test-human.qrels")
    done = human.sample(3000, random_state=0)
    s = propose_sample(llm, n=200, seed=0, exclude=done)
    keys = set(zip(done["query_id"], done["chunk_id"]))
    assert not any(k in keys for k in zip(s["query_id"], s["chunk_id"]))
    assert set(s["llm_grade"]) == {0, 1, 2, 3}


def test_a_rare_grade_gives_its_unused_share_to_the_others(llm: pd.DataFrame) -> None:
    rare = pd.concat([llm.loc[llm["grade"] != 3], llm.loc[llm["grade"] == 3].head(10)])
    s = propose_sample(rare, n=200, seed=0)
    counts = s["llm_grade"].value_counts().to_dict()
    assert len(s) == 200 and counts[3] == 10
    assert sorted(counts[g] for g in (0, 1, 2)) == [63, 63, 64]


def test_failed_labels_are_not_proposed_and_texts_come_from_pairs() -> None:
    labels = pd.DataFrame({"query_id": ["1", "1", "2", "2"], "chunk_id": ["a", "b", "c", "d"],
                           "grade": pd.array([0, pd.NA, 2, 3], dtype="Int64"),
                           "status": ["ok", "failed", "ok", "ok"]})
    pairs = pd.DataFrame({"query_id": ["1", "1", "2", "2"], "query": ["q one"] * 2 + ["q two"] * 2,
                          "chunk_id": ["a", "b", "c", "d"], "chunk": ["A", "B", "C", "D"]})
    s = propose_sample(labels, n=10, seed=0, pairs=pairs)
    assert sorted(s["chunk_id"]) == ["a", "c", "d"]
    assert dict(zip(s["chunk_id"], s["chunk"])) == {"a": "A", "c": "C", "d": "D"}
    sheet = annotation_sheet(s)
    assert list(sheet.columns) == ["query_id", "query", "chunk_id", "chunk", "grade"]
    assert (sheet["grade"] == "").all()
    assert "llm_grade" in annotation_sheet(s, show_llm_grade=True).columns


def test_nothing_left_to_label_is_a_clear_error(llm: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="already has a human label"):
        propose_sample(llm.head(20), n=5, exclude=llm.head(20))


# ---------------------------------------------------------------------- whole queries

def test_a_query_sample_holds_every_pooled_pair_of_n_queries(llm: pd.DataFrame) -> None:
    s = sample_queries(llm, n=5, seed=3)
    assert s["query_id"].nunique() == 5
    pool = llm.loc[llm["query_id"].isin(set(s["query_id"]))]
    assert len(s) == len(pool)  # every pair of those queries, none of the others
    assert set(zip(s["query_id"], s["chunk_id"])) == set(zip(pool["query_id"], pool["chunk_id"]))
    pd.testing.assert_frame_equal(s, sample_queries(llm, n=5, seed=3))
    assert set(s["query_id"]) != set(sample_queries(llm, n=5, seed=4)["query_id"])


def test_a_query_sample_is_uniform_over_queries(llm: pd.DataFrame) -> None:
    """No stratification: over many seeds every query is drawn about equally often (a
    chi-square test of the counts; queries have between 1 and several hundred pairs)."""
    from scipy import stats

    queries = sorted(llm["query_id"].unique())
    small = llm.groupby("query_id").head(3)  # how many pairs a query has must not matter:
    small = pd.concat([small, llm.loc[llm["query_id"] == queries[0]]]).drop_duplicates()
    counts = pd.Series(0, index=queries)
    draws = 200
    for seed in range(draws):
        counts[list(sample_queries(small, n=5, seed=seed)["query_id"].unique())] += 1
    assert counts.sum() == 5 * draws
    assert stats.chisquare(counts.to_numpy()).pvalue > 0.001
    # ...the query with every one of its pairs in the pool is drawn at the same rate
    assert stats.binomtest(int(counts[queries[0]]), draws, 5 / len(queries)).pvalue > 0.001


def test_a_query_sample_keeps_failed_pairs_and_skips_judged_queries() -> None:
    labels = pd.DataFrame({"query_id": ["1", "1", "2", "2", "3"],
                           "chunk_id": ["a", "b", "c", "d", "e"],
                           "grade": pd.array([0, pd.NA, 2, 3, 1], dtype="Int64"),
                           "status": ["ok", "failed", "ok", "ok", "ok"]})
    human = pd.DataFrame({"query_id": ["2"], "chunk_id": ["c"], "grade": [1]})
    s = sample_queries(labels, n=2, seed=0, exclude=human)
    assert sorted(s["chunk_id"]) == ["a", "b", "e"]  # the failed pair b is still to judge
    sheet = annotation_sheet(s)
    assert list(sheet.columns) == ["query_id", "chunk_id", "grade"]
    with pytest.raises(ConfigError, match="only 2 of the labelled queries.*human labels"):
        sample_queries(labels, n=3, exclude=human)
    with pytest.raises(ConfigError, match="at least 1"):
        sample_queries(labels, n=0)
