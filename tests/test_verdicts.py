"""Pair verdicts, run intervals, PPI estimates and the headline of a comparison, on real
TREC DL 2019 runs (NIST labels vs the lexical judge's), each figure against scipy / ppi_py /
a direct Holm, and the sentences a user reads."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import ppi_py
import pytest
from scipy import stats as sps

from dl19kit import lexical_slice

from labeler.reconciliation.comparison import Comparison, compare
from labeler.errors import ConfigError
from labeler.statistics.verdicts import StatsOptions, headline, significance

@pytest.fixture(scope="module")
def labels() -> dict[str, pd.DataFrame]:
    data = lexical_slice()
    return {**data, "llm": data["llm"][["query_id", "chunk_id", "grade"]]}


@pytest.fixture(scope="module")
def comparison(labels: dict[str, pd.DataFrame]) -> Comparison:
    return compare(human=labels["human"], llm=labels["llm"], runs=labels["runs"], k=10)


def _holm(p: list[float]) -> list[float]:
    m, order, out, running = len(p), sorted(range(len(p)), key=lambda i: p[i]), [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def test_every_pair_is_tested_under_each_label_set_as_scipy_does(
        comparison: Comparison) -> None:
    sig = significance(comparison.per_query, comparison.systems)
    systems = list(comparison.systems)
    assert list(zip(sig.pairs["a"], sig.pairs["b"])) == list(itertools.combinations(systems, 2))
    pq = comparison.per_query
    wide = {s: pq.pivot(index="query_id", columns="system", values=s) for s in ("human", "llm")}
    for s in ("human", "llm"):
        ps = []
        for r in sig.pairs.to_dict("records"):
            both = pd.concat([wide["human"][[r["a"], r["b"]]],
                              wide["llm"][[r["a"], r["b"]]]], axis=1).dropna().index
            x, y = wide[s].loc[both, r["a"]], wide[s].loc[both, r["b"]]
            assert r["n"] == len(both)
            assert r[f"{s}_delta"] == pytest.approx((x - y).mean())
            assert r[f"{s}_p"] == pytest.approx(sps.ttest_rel(x, y).pvalue, rel=1e-9)
            ps.append(r[f"{s}_p"])
        assert list(sig.pairs[f"{s}_p_adjusted"]) == pytest.approx(_holm(ps))
        for sys in systems:  # each run's interval is scipy's t-interval, clipped to [0, 1]
            v = wide[s][sys].dropna()
            lo, hi = sps.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=sps.sem(v))
            assert sig.run_ci(sys, s) == pytest.approx((max(lo, 0.0), min(hi, 1.0)))


def test_vectorised_pairs_equal_the_scalar_test(comparison: Comparison) -> None:
    from labeler.statistics.inference import paired_test

    sig = significance(comparison.per_query, comparison.systems)
    pq = comparison.per_query
    for r in sig.pairs.to_dict("records"):
        both = pq.loc[pq["system"].isin([r["a"], r["b"]])].pivot(
            index="query_id", columns="system", values=["human", "llm"]).dropna()
        for s in ("human", "llm"):
            t = paired_test(both[(s, r["a"])], both[(s, r["b"])])
            assert (t.n, r[f"{s}_delta"]) == (r["n"], pytest.approx(t.delta, abs=1e-12))
            assert r[f"{s}_p"] == pytest.approx(t.p, rel=1e-9)


def test_verdicts_follow_the_adjusted_p_values_and_signs(comparison: Comparison
                                                          ) -> None:
    for alpha in (0.05, 0.2, 0.5):
        sig = significance(comparison.per_query, comparison.systems,
                           options=StatsOptions(alpha=alpha))
        for r in sig.pairs.to_dict("records"):
            h, m = r["human_p_adjusted"] < alpha, r["llm_p_adjusted"] < alpha
            same = r["human_delta"] * r["llm_delta"] > 0
            want = ("confirmed" if h and m and same else "reversed" if h and m else
                    "human-only" if h else "llm-only" if m else "unresolved")
            assert r["verdict"] == want
        assert sum(sig.counts.values()) == len(sig.pairs) == 6
        assert set(sig.counts) == {"confirmed", "reversed", "human-only", "llm-only",
                                   "unresolved"}
    assert significance(comparison.per_query, comparison.systems,
                        options=StatsOptions(alpha=0.5)).counts["unresolved"] < 6


def test_the_randomization_test_is_seeded(comparison: Comparison) -> None:
    opts = StatsOptions(test="randomization", permutations=500, seed=1)
    a = significance(comparison.per_query, comparison.systems, options=opts)
    b = significance(comparison.per_query, comparison.systems, options=opts)
    pd.testing.assert_frame_equal(a.pairs, b.pairs)
    # 10 queries: 1,024 sign patterns; with at least that many asked, every one is counted
    exact = significance(comparison.per_query, comparison.systems,
                         options=StatsOptions(test="randomization", permutations=1024))
    wide = comparison.per_query.pivot(index="query_id", columns="system", values="human")
    r = exact.pairs.iloc[0]
    d = (wide[r["a"]] - wide[r["b"]]).to_numpy()
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
    means = (signs * d).mean(axis=1)
    p = 2 * min((means <= d.mean() + 1e-12).mean(), (means >= d.mean() - 1e-12).mean())
    assert r["human_p"] == pytest.approx(min(p, 1.0))


def test_bad_options_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="unknown test"):
        StatsOptions(test="z")
    with pytest.raises(ConfigError, match="alpha"):
        StatsOptions(alpha=0)
    with pytest.raises(ConfigError, match="permutations"):
        StatsOptions(permutations=0)
    with pytest.raises(ConfigError, match="ppi_target"):
        StatsOptions(ppi_target="world")
    with pytest.raises(ConfigError, match="pairs"):
        StatsOptions(pairs="some")


def _ppi_setup(comparison: Comparison, labels: dict[str, pd.DataFrame]
               ) -> tuple[list[str], list[str], dict[str, set[str]]]:
    queries = sorted(set(labels["human"]["query_id"]))
    lab, unl = queries[::2], queries[1::2]  # 5 of the 10 queries have human labels
    population = {s: set(labels["llm"]["query_id"]) for s in comparison.systems}
    return lab, unl, population


def _values(pq: pd.DataFrame, system: str, col: str, qs: list[str]) -> np.ndarray:
    return (pq.loc[pq["system"] == system].set_index("query_id")[col].reindex(qs)
            .fillna(0.0).to_numpy())


def test_ppi_runs_and_pairs_are_the_difference_estimator_by_hand(
        comparison: Comparison, labels: dict[str, pd.DataFrame]) -> None:
    lab, unl, population = _ppi_setup(comparison, labels)
    sig = significance(comparison.per_query, comparison.systems,
                       options=StatsOptions(ppi=True), ppi_population=population,
                       ppi_labelled=set(lab))
    pq = comparison.per_query
    big_n = len(lab) + len(unl)

    def by_hand(y: np.ndarray, yhat: np.ndarray, yu: np.ndarray) -> tuple[float, float, float]:
        d = y - yhat
        est = np.concatenate([yhat, yu]).mean() + d.mean()
        se = np.sqrt((1 - len(y) / big_n) * d.var(ddof=1) / len(y))
        return est, se, sps.t.ppf(0.975, len(y) - 1) * se

    for sys in comparison.systems:
        got = sig.run_ppi(sys)
        est, se, half = by_hand(_values(pq, sys, "human", lab), _values(pq, sys, "llm", lab),
                                _values(pq, sys, "llm", unl))
        assert got["estimate"] == pytest.approx(est) and got["se"] == pytest.approx(se)
        assert got["ci"] == pytest.approx([max(est - half, 0), min(est + half, 1)])
        assert (got["n_labelled"], got["n_unlabelled"], got["target"], got["lambda"]) == (
            5, 5, "queries", 1.0)
    items = sig.pairs_to_dicts()
    ps = []
    for item in items:
        a, b = item["a"], item["b"]
        est, se, half = by_hand(_values(pq, a, "human", lab) - _values(pq, b, "human", lab),
                                _values(pq, a, "llm", lab) - _values(pq, b, "llm", lab),
                                _values(pq, a, "llm", unl) - _values(pq, b, "llm", unl))
        ppi = item["ppi"]
        assert ppi["delta"] == pytest.approx(est)
        assert ppi["ci"] == pytest.approx([est - half, est + half])
        sim = sps.t.ppf(1 - 0.05 / len(items) / 2, 4) * se
        assert ppi["ci_simultaneous"] == pytest.approx([est - sim, est + sim])
        assert ppi["p"] == pytest.approx(2 * sps.t.sf(abs(est) / se, 4))
        ps.append(ppi["p"])
    assert [i["ppi"]["p_adjusted"] for i in items] == pytest.approx(_holm(ps))
    for i in items:
        want = ("unresolved" if i["ppi"]["p_adjusted"] >= 0.05 else
                "a-better" if i["ppi"]["delta"] > 0 else "b-better")
        assert i["ppi"]["verdict"] == want
    strict = significance(comparison.per_query, comparison.systems,
                          options=StatsOptions(ppi=True, alpha=0.01),
                          ppi_population=population, ppi_labelled=set(lab))
    for sys in comparison.systems:  # --alpha sets the verdicts, not the 95% intervals
        assert strict.run_ppi(sys) == sig.run_ppi(sys)


def test_ppi_population_target_equals_ppi_py(comparison: Comparison,
                                             labels: dict[str, pd.DataFrame]) -> None:
    lab, unl, population = _ppi_setup(comparison, labels)
    sig = significance(comparison.per_query, comparison.systems,
                       options=StatsOptions(ppi=True, ppi_target="population"),
                       ppi_population=population, ppi_labelled=set(lab))
    pq = comparison.per_query
    for sys in comparison.systems:
        y, yhat = _values(pq, sys, "human", lab), _values(pq, sys, "llm", lab)
        yu = _values(pq, sys, "llm", unl)
        lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=1)
        got = sig.run_ppi(sys)
        assert got["ci"] == pytest.approx([max(float(lo[0]), 0), min(float(hi[0]), 1)])
        assert got["target"] == "population"


def test_ppi_with_every_query_labelled(comparison: Comparison,
                                       labels: dict[str, pd.DataFrame]) -> None:
    everything = set(labels["human"]["query_id"])
    pop = {s: everything for s in comparison.systems}
    sig = significance(comparison.per_query, comparison.systems,
                       options=StatsOptions(ppi=True), ppi_population=pop,
                       ppi_labelled=everything)
    for sys in comparison.systems:  # the mean over these queries is known: width 0
        got = sig.run_ppi(sys)
        assert got["ci"][0] == pytest.approx(got["ci"][1])
    sig = significance(comparison.per_query, comparison.systems,
                       options=StatsOptions(ppi=True, ppi_target="population"),
                       ppi_population=pop, ppi_labelled=everything)
    assert all(sig.run_ppi(s)["reason"] == "no queries without human labels"
               for s in comparison.systems)
    few = set(sorted(everything)[:4])
    sig = significance(comparison.per_query, comparison.systems,
                       options=StatsOptions(ppi=True), ppi_population=pop, ppi_labelled=few)
    got = sig.run_ppi(comparison.systems[0])
    assert got["ci"] is None and got["reason"] == "only 4 human-labelled queries"
    assert "only 4 human-labelled queries" in sig.notes[0]


def _synthetic(human: dict[str, list[float]], llm: dict[str, list[float]]) -> pd.DataFrame:
    rows = [(s, f"q{i}", h, m) for s in human for i, (h, m) in
            enumerate(zip(human[s], llm[s]))]
    return pd.DataFrame(rows, columns=["system", "query_id", "human", "llm"])


def test_the_headline_and_counts_say_what_changed() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.6, 30)
    human = {"best": base + 0.3, "mid": base + 0.01 * rng.standard_normal(30), "low": base}
    llm = {"best": base + 0.3, "mid": base + 0.2 + 0.01 * rng.standard_normal(30),
           "low": base}
    pq = _synthetic({k: list(v) for k, v in human.items()}, {k: list(v) for k, v in llm.items()})
    sig = significance(pq, ["best", "mid", "low"])
    verdicts = dict(zip(zip(sig.pairs["a"], sig.pairs["b"]), sig.pairs["verdict"]))
    assert verdicts == {("best", "mid"): "confirmed", ("best", "low"): "confirmed",
                        ("mid", "low"): "llm-only"}
    assert sig.counts_line() == ("of 3 pairs: 2 confirmed, 0 reversed, 0 human-only, "
                                 "1 llm-only, 0 unresolved")
    means = pq.groupby("system", sort=False)[["human", "llm"]].mean().reset_index()
    assert headline(means, sig) == (
        "On the 30 queries every run scores under both label sets, best has the highest mean "
        "under human labels and is ahead of 2 of the 2 runs it was tested against by a real "
        "difference; the LLM labels keep it first but call 1 difference real that the human "
        "labels do not (llm-only).")
    flipped = _synthetic({"a": list(base + 0.2), "b": list(base)},
                         {"a": list(base), "b": list(base + 0.2)})
    sig2 = significance(flipped, ["a", "b"])
    means2 = flipped.groupby("system", sort=False)[["human", "llm"]].mean().reset_index()
    assert sig2.counts["reversed"] == 1
    assert headline(means2, sig2) == (
        "On the 30 queries every run scores under both label sets, a has the highest mean "
        "under human labels and is ahead of 1 of the 1 run it was tested against by a real "
        "difference; the LLM labels put b first but reverse 1 real difference.")
    same = _synthetic({"a": list(base), "b": list(base + 0.001 * rng.standard_normal(30))},
                      {"a": list(base), "b": list(base)})
    words = headline(same.groupby("system")[["human"]].mean().reset_index(),
                     significance(same, ["a", "b"]))
    assert "unresolved: no evidence of a difference, which is not evidence of none" in words
    assert "tie" not in words


def test_both_label_sets_test_a_pair_on_the_same_queries() -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.6, 12)
    human = {"a": list(base + 0.2 + rng.normal(0, 0.05, 12)), "b": list(base)}
    llm = {"a": list(base + 0.2), "b": list(base)}
    for q in (9, 10, 11):  # the LLM labels find nothing relevant for three queries
        llm["a"][q] = llm["b"][q] = float("nan")
    pq = _synthetic(human, llm)
    sig = significance(pq, ["a", "b"])
    row = sig.pairs.iloc[0]
    assert row["n"] == 9
    h = np.array(human["a"]) - np.array(human["b"])
    assert row["human_delta"] == pytest.approx(h[:9].mean())
    assert row["human_p"] == pytest.approx(sps.ttest_rel(np.array(human["a"])[:9],
                                                          np.array(human["b"])[:9]).pvalue)
    item = sig.pairs_to_dicts()[0]
    assert item["human_only_queries"] == {"n": 3, "delta": pytest.approx(h[9:].mean())}
    assert sig.n_shared == 9
    means = pq.groupby("system", sort=False)[["human", "llm"]].mean().reset_index()
    assert headline(means, sig).startswith("On the 9 queries every run scores under both")


def test_pair_modes_choose_the_pairs() -> None:
    rng = np.random.default_rng(4)
    base = rng.uniform(0.2, 0.6, 10)
    runs = {f"r{i}": list(np.clip(base + 0.05 * i, 0, 1)) for i in range(5)}
    pq = _synthetic(runs, runs)
    best = significance(pq, list(runs), options=StatsOptions(pairs="best"))
    assert sorted(zip(best.pairs["a"], best.pairs["b"])) == [
        ("r0", "r4"), ("r1", "r4"), ("r2", "r4"), ("r3", "r4")]
    adjacent = significance(pq, list(runs), options=StatsOptions(pairs="adjacent"))
    assert sorted(zip(adjacent.pairs["a"], adjacent.pairs["b"])) == [
        ("r0", "r1"), ("r1", "r2"), ("r2", "r3"), ("r3", "r4")]
    assert len(significance(pq, list(runs)).pairs) == 10
    assert "each run against the best" in best.counts_line()
    many = {f"r{i}": list(base + 0.001 * i) for i in range(51)}
    assert significance(_synthetic(many, many), list(many)).pair_mode == "best"


def test_progress_is_reported_for_both_tests(comparison: Comparison) -> None:
    for test in ("t", "randomization"):
        calls: list[tuple[int, int]] = []
        significance(comparison.per_query, comparison.systems,
                     options=StatsOptions(test=test, permutations=200),
                     progress=lambda done, total, calls=calls: calls.append((done, total)))
        assert calls and calls[-1] == (6, 6)
