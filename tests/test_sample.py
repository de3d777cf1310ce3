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


# ---------------------------------------------------------------------- a sample that grows

def test_a_query_sample_is_the_front_of_one_seeded_permutation(llm: pd.DataFrame) -> None:
    """The queries drawn are those numpy's choice without replacement picks for the seed (the
    sampler before designs existed), and the front of the design's permutation."""
    import numpy as np

    from labeler.reconciliation.design import draw_queries, query_permutation

    queries = sorted(llm["query_id"].unique())
    for seed in range(5):
        for n in (1, 5, 12):
            reference = {queries[i] for i in
                         np.random.default_rng(seed).choice(len(queries), n, replace=False)}
            got = draw_queries(llm, n=n, seed=seed)
            assert set(got.pairs["query_id"]) == reference
            assert set(got.design.queries) == reference
            assert got.design.permutation == query_permutation(queries, seed, n)
            assert sorted(got.design.permutation) == queries
            pd.testing.assert_frame_equal(got.pairs, sample_queries(llm, n=n, seed=seed))


def test_more_queries_never_repeat_and_the_union_is_the_front(llm: pd.DataFrame) -> None:
    from labeler.reconciliation.design import draw_queries, more_queries

    first = draw_queries(llm, n=4, seed=11)
    second = more_queries(llm, first.design, m=6)
    third = more_queries(llm, second.design, m=5)
    drawn = [set(s.pairs["query_id"]) for s in (first, second, third)]
    assert not drawn[0] & drawn[1] and not drawn[1] & drawn[2] and not drawn[0] & drawn[2]
    assert drawn[0] | drawn[1] | drawn[2] == set(first.design.permutation[:15])
    assert third.design.drawn == 15 and [d.n for d in third.design.draws] == [4, 6, 5]
    assert third.new_queries == first.design.permutation[10:15]
    pool = llm.loc[llm["query_id"].isin(drawn[1])]
    assert len(second.pairs) == len(pool)  # every pooled pair of the new queries
    assert first.design.drawn == 4  # designs are values: drawing more leaves the old one


def test_the_design_round_trips_and_refuses_what_does_not_match(
        llm: pd.DataFrame, tmp_path: Path) -> None:
    from labeler.reconciliation.design import (draw_queries, more_queries, read_design,
                                               write_design)

    first = draw_queries(llm, n=20, seed=3, exclude=llm.loc[llm["query_id"] == "q0"])
    write_design(first.design, tmp_path / "design.json")
    back = read_design(tmp_path / "sheet.csv")  # a sheet: the design next to it
    assert back == first.design and back.excluded == ["q0"]
    left = back.left
    with pytest.raises(ConfigError, match=f"only {left} of the design"):
        more_queries(llm, back, m=left + 1)
    done = more_queries(llm, back, m=left).design
    with pytest.raises(ConfigError, match="every one of the design's"):
        more_queries(llm, done, m=1)
    with pytest.raises(InputError, match="does not match the label records"):
        more_queries(llm.loc[llm["query_id"] != "q1"], back, m=1)
    tampered = back.model_copy(update={"permutation": list(reversed(back.permutation))})
    with pytest.raises(InputError, match="not the one its seed gives"):
        more_queries(llm, tampered, m=1)
    ahead = llm.loc[llm["query_id"] == back.permutation[-1]]
    with pytest.raises(InputError, match="not drawn yet"):
        more_queries(llm, back, m=1, human=ahead)
    (tmp_path / "bad.json").write_text('{"seed": -1}', encoding="utf-8")
    with pytest.raises(InputError, match="not a sample design"):
        read_design(tmp_path / "bad.json")


def test_sample_more_from_the_command_line(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from labeler.cli import main

    labels = DATA / "willia-umbrela1.qrels"
    sheet = tmp_path / "sheets" / "todo.csv"
    run = CliRunner().invoke
    r = run(main, ["sample", "--unit", "query", "--labels", str(labels), "--n", "5",
                   "--seed", "2", "--out", str(sheet)])
    assert r.exit_code == 0, r.output
    design = json.loads((sheet.parent / "design.json").read_text())
    assert design["seed"] == 2 and design["drawn"] == 5 and len(design["permutation"]) == 25
    r = run(main, ["sample", "--more", "7", "--from", str(sheet)])  # labels from the design
    assert r.exit_code == 0, r.output
    second = tmp_path / "sheets" / "todo-2.csv"
    queries = [set(pd.read_csv(p, dtype=str)["query_id"]) for p in (sheet, second)]
    assert not queries[0] & queries[1]
    assert queries[0] | queries[1] == set(design["permutation"][:12])
    after = json.loads((sheet.parent / "design.json").read_text())
    assert after["drawn"] == 12 and [d["sheet"] for d in after["draws"]] == ["todo.csv",
                                                                           "todo-2.csv"]
    r = run(main, ["sample", "--more", "14", "--from", str(sheet.parent / "design.json")])
    assert r.exit_code == 2 and "only 13 of the design's 25" in r.output
    assert json.loads((sheet.parent / "design.json").read_text()) == after  # untouched
    r = run(main, ["sample", "--more", "2", "--from", str(sheet), "--n", "3"])
    assert r.exit_code == 2 and "--n does not go with --more" in r.output
    other = tmp_path / "other.qrels"
    other.write_text("".join(line for line in labels.read_text().splitlines(True)
                             if not line.startswith(design["permutation"][-1] + " ")))
    r = run(main, ["sample", "--more", "2", "--from", str(sheet), "--labels", str(other)])
    assert r.exit_code == 2 and "does not match the label records" in r.output
    r = run(main, ["sample", "--more", "13", "--from", str(second)])
    assert r.exit_code == 0, r.output
    r = run(main, ["sample", "--more", "1", "--from", str(sheet)])
    assert r.exit_code == 2 and "nothing more to draw" in r.output


def test_the_queries_drawn_later_are_uniform_too() -> None:
    """Whatever the first draw, the next query of the order is any of the queries with the
    same chance (a chi-square test over seeds)."""
    from scipy import stats

    from labeler.reconciliation.design import query_permutation

    queries = [f"q{i}" for i in range(12)]
    counts = dict.fromkeys(queries, 0)
    for seed in range(600):
        counts[query_permutation(queries, seed, first=3)[3]] += 1
    assert stats.chisquare(list(counts.values())).pvalue > 0.001


def test_a_design_that_contradicts_itself_is_refused(tmp_path: Path) -> None:
    import json

    from labeler.reconciliation.design import read_design

    good = {"seed": 0, "drawn": 2, "queries_drawn": ["b", "a"], "permutation": ["b", "a", "c"]}
    path = tmp_path / "design.json"
    for bad, why in (({"drawn": 4, "queries_drawn": []}, "only 3 queries"),
                     ({"queries_drawn": ["a", "b"]}, "front of the permutation"),
                     ({"permutation": ["b", "a", "b"]}, "twice")):
        path.write_text(json.dumps({**good, **bad}), encoding="utf-8")
        with pytest.raises(InputError, match=why):
            read_design(path)
    path.write_text(json.dumps(good), encoding="utf-8")
    assert read_design(path).queries == ["b", "a"]
