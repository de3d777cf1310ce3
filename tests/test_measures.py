"""Measures named as ir_measures writes them, each equal per query to trec_eval (pytrec_eval).

Generated data holds float32 ties, unjudged chunks, grades -1..4, queries with no relevant
chunk, queries only in the run or only in the qrels and several systems; the real data is
the vendored TREC DL 2019 slice. ``--trec`` text and ``--complete`` (trec_eval ``-c``) are
checked against pytrec_eval's per-query values too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labeler.scoring import results as scoring
from test_score_pytrec import generate as generate_runs
from labeler.errors import ConfigError
from labeler.scoring.measures import Measure, parse_measure, parse_measures

pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = ["nDCG@5", "nDCG@10", "P@5", "P@10", "P(rel=2)@10", "R@10", "R(rel=2)@100", "RR",
            "RR(rel=2)", "RR@3", "AP", "AP(rel=3)", "AP@10", "AP(rel=2)@100", "Judged@10"]


# --------------------------------------------------------------------------- names

@pytest.mark.parametrize("text", MEASURES)
def test_canonical_names_read_back(text: str) -> None:
    m = parse_measure(text)
    assert str(m) == repr(m) == m.key == text
    assert parse_measure(str(m)) == m


@pytest.mark.parametrize("alias,canonical", [
    ("ndcg_cut.10", "nDCG@10"), ("ndcg_cut_10", "nDCG@10"), ("NDCG@10", "nDCG@10"),
    ("P.10", "P@10"), ("P_10", "P@10"), ("recall.100", "R@100"), ("recall_100", "R@100"),
    ("recip_rank", "RR"), ("MRR@10", "RR@10"), ("map", "AP"), ("MAP@100", "AP@100"),
    ("map_cut.100", "AP@100"), ("judged@10", "Judged@10"), ("P(rel=1)@10", "P@10"),
    ("P( rel=2 )@10", "P(rel=2)@10"),
])
def test_aliases_and_trec_eval_names(alias: str, canonical: str) -> None:
    assert str(parse_measure(alias)) == canonical


def test_trec_names() -> None:
    names = [parse_measure(t).trec_name for t in
             ("nDCG@10", "P@10", "R@100", "RR", "AP", "AP@100", "P(rel=2)@10", "RR@10")]
    assert names == ["ndcg_cut_10", "P_10", "recall_100", "recip_rank", "map", "map_cut_100",
                     "P(rel=2)@10", "RR@10"]


@pytest.mark.parametrize("bad", ["nDCG", "P", "Judged", "F1@10", "P@0", "P(level=2)@10",
                                 "nDCG(rel=2)@10", "P(rel=0)@10", "P@ten", ""])
def test_bad_measures_say_what_is_known(bad: str) -> None:
    with pytest.raises(ConfigError, match="@|rel|cut-off|measure"):
        parse_measure(bad)


def test_each_measure_once_in_order() -> None:
    assert parse_measures(["AP", "P@10", "map", "P.10"]) == [Measure("AP"), Measure("P", 10)]


# --------------------------------------------------------------------------- generated data

def generate(seed: int, n_queries: int = 40) -> tuple[pd.DataFrame, pd.DataFrame]:
    return generate_runs(seed, "short", n_queries=n_queries, depth=40, wide_grades=True)


def _dicts(qrels: pd.DataFrame, run: pd.DataFrame) -> tuple[dict, dict]:
    qd: dict[str, dict[str, int]] = {}
    for q, c, g in qrels[["query_id", "chunk_id", "grade"]].itertuples(index=False):
        qd.setdefault(q, {})[c] = int(g)
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for q, c, s, system in run[["query_id", "chunk_id", "score", "system"]].itertuples(
            index=False):
        runs.setdefault(system, {}).setdefault(q, {})[c] = float(s)
    return qd, runs


def _trec_order(docs: dict[str, float]) -> list[str]:
    """trec_eval's ranking: score descending, then doc id descending (bytes)."""
    return sorted(docs, key=lambda d: (docs[d], d.encode()), reverse=True)


def reference(qrels: pd.DataFrame, run: pd.DataFrame, text: str) -> dict[str, dict[str, float]]:
    """{system: {query: value}} of one measure, from pytrec_eval."""
    m = parse_measure(text)
    qd, runs = _dicts(qrels, run)
    out: dict[str, dict[str, float]] = {}
    for system, rd in runs.items():
        if m.name == "Judged":   # P@k at a level below every grade, over min(k, ranked)
            low = min(g for docs in qd.values() for g in docs.values())
            shifted = {q: {d: g - low + 1 for d, g in docs.items()} for q, docs in qd.items()}
            ev = pytrec_eval.RelevanceEvaluator(shifted, {f"P.{m.cutoff}"}, relevance_level=1)
            res = ev.evaluate(rd)
            k = int(m.cutoff or 0)
            out[system] = {q: v[f"P_{k}"] * k / min(k, len(rd[q])) for q, v in res.items()}
            continue
        if m.name == "RR" and m.cutoff:   # recip_rank of the run cut to its top k
            rd = {q: {d: docs[d] for d in _trec_order(docs)[:m.cutoff]} for q, docs in rd.items()}
        name = {"nDCG": "ndcg_cut", "P": "P", "R": "recall", "RR": "recip_rank",
                "AP": "map_cut" if m.cutoff else "map"}[m.name]
        spec = f"{name}.{m.cutoff}" if m.cutoff and m.name != "RR" else name
        ev = pytrec_eval.RelevanceEvaluator(qd, {spec}, relevance_level=m.rel)
        key = spec.replace(".", "_")
        out[system] = {q: v[key] for q, v in ev.evaluate(rd).items()}
    return out


def _ours(res: scoring.ScoreResult, key: str, system: str) -> dict[str, float]:
    v = res.values
    mine = v[(v["measure"] == key) & (v["system"] == system) & v["in_run"]]
    return dict(zip(mine["query_id"], mine["value"]))


@pytest.mark.parametrize("seed,order", [(0, "as made"), (1, "as made"), (2, "shuffled"),
                                        (3, "one run, ranked")])
def test_every_measure_equals_pytrec_eval_per_query(seed: int, order: str) -> None:
    # rows shuffled, or one system's rows grouped by query and ranked (as run files come):
    # the scorer ranks whole rankings by different paths, and ties must fall as trec_eval's
    qrels, run = generate(seed)
    if order == "shuffled":
        run = run.sample(frac=1, random_state=seed).reset_index(drop=True)
    elif order == "one run, ranked":
        run = run[run["system"] == run["system"].iloc[0]].sort_values(
            ["query_id", "score"], ascending=[True, False], kind="stable").reset_index(drop=True)
        assert run.duplicated(["query_id", "score"]).any()   # ties to put in order
    res = scoring.evaluate(qrels, run, k=10, measures=MEASURES, include_empty=True)
    default = scoring.evaluate(qrels, run, k=10, measures=MEASURES)
    for text in MEASURES:
        m = parse_measure(text)
        level = 1 if m.name in ("nDCG", "Judged") else m.rel
        relevant = set(qrels.loc[qrels["grade"] >= level, "query_id"])
        for system, expected in reference(qrels, run, text).items():
            ours = _ours(res, text, system)
            assert set(ours) == set(expected), (text, system)   # run ∩ qrels, as trec_eval
            for q, value in expected.items():
                assert ours[q] == pytest.approx(value, abs=1e-9), (text, system, q)
            assert res.mean(system, measure=text) == pytest.approx(
                np.mean(list(expected.values())), abs=1e-9)
            kept = [v for q, v in expected.items() if q in relevant]
            assert default.mean(system, measure=text) == pytest.approx(np.mean(kept), abs=1e-9)
            assert default.to_dict()["runs"][system][text]["n_queries"] == len(kept)


def test_complete_counts_missing_queries_as_zero() -> None:
    qrels, run = generate(2)
    measures = ["P@10", "AP", "nDCG@10"]
    res = scoring.evaluate(qrels, run, k=10, measures=measures, include_empty=True, complete=True)
    every_query = set(qrels["query_id"])
    for text in measures:
        for system, expected in reference(qrels, run, text).items():
            assert len(expected) < len(every_query)      # the run lacks some judged queries
            total = sum(expected.values())
            assert res.mean(system, measure=text) == pytest.approx(total / len(every_query),
                                                                   abs=1e-12)
    # the SPEC's default leaves out queries with no relevant chunk, missing ones included
    dflt = scoring.evaluate(qrels, run, k=10, measures=["AP"], complete=True).to_dict()
    relevant = set(qrels.loc[qrels["grade"] >= 1, "query_id"])
    for system, expected in reference(qrels, run, "AP").items():
        entry = dflt["runs"][system]["AP"]
        assert set(entry["per_query"]) == relevant
        assert entry["mean"] == pytest.approx(
            sum(v for q, v in expected.items() if q in relevant) / len(relevant), abs=1e-12)
        ndcg = dflt["runs"][system]["ndcg@10"]
        assert set(ndcg["per_query"]) == relevant and ndcg["n_queries"] == len(relevant)


def test_trec_text_is_trec_eval_output() -> None:
    qrels, run = generate(3, n_queries=12)
    run = run[run["system"] == "bm25"]
    res = scoring.evaluate(qrels, run, k=10, measures=["P@5", "AP", "RR"])
    text = res.to_trec(per_query=True)
    lines = text.splitlines()
    expected = {t: reference(qrels, run, t)["bm25"] for t in ("nDCG@10", "P@5", "AP", "RR")}
    names = {"ndcg_cut_10": "nDCG@10", "P_5": "P@5", "map": "AP", "recip_rank": "RR"}
    queries = sorted(expected["AP"], key=str.encode)
    per_query = [ln for ln in lines if "\tall\t" not in ln]
    assert len(per_query) == 4 * len(queries)
    assert [ln.split("\t")[1] for ln in per_query[::4]] == queries     # trec_eval's order
    for ln in lines:
        name, qid, value = ln.split("\t")
        assert len(name) == 22 and name == name.strip().ljust(22)
        name = name.strip()
        if name == "runid":
            assert (qid, value) == ("all", "bm25")
        elif name == "num_q":
            assert (qid, value) == ("all", str(len(queries)))
        else:
            ref = expected[names[name]]
            want = np.mean(list(ref.values())) if qid == "all" else ref[qid]
            assert value == f"{want:6.4f}", (name, qid)
    assert lines[-6] == "runid                 \tall\tbm25"
    assert res.to_trec().splitlines() == lines[-6:]


def test_trec_dl_2019_slice_equals_pytrec_eval(data_dir: Path) -> None:
    base = data_dir / "dl19"
    runs = sorted((base / "runs").glob("*.run"))
    wanted = ["nDCG@10", "P@10", "R@100", "RR", "AP", "AP@100", "P(rel=2)@10", "Judged@10"]
    res = scoring.evaluate_files(base / "qrels-pass.qrels", runs, k=10, measures=wanted,
                               include_empty=True)
    from labeler import io
    qrels = io.read_qrels(base / "qrels-pass.qrels")
    run = io.read_runs(runs)
    for text in wanted:
        for system, expected in reference(qrels, run, text).items():
            assert len(expected) == 10
            ours = _ours(res, text, system)
            for q, value in expected.items():
                assert ours[q] == pytest.approx(value, abs=1e-9), (text, system, q)


def test_each_measure_has_the_t_interval_of_its_mean() -> None:
    from scipy import stats

    qrels, run = generate(4)
    entry = scoring.evaluate(qrels, run, k=10, measures=["AP"]).to_dict()["runs"]["bm25"]["AP"]
    values = np.array(list(entry["per_query"].values()))
    lo, hi = stats.t.interval(0.95, len(values) - 1, loc=values.mean(),
                              scale=stats.sem(values))
    assert entry["ci"] == pytest.approx([lo, hi], abs=1e-12)
