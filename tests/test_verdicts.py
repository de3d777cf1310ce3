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
    for s in ("human", "llm"):
        wide = comparison.per_query.pivot(index="query_id", columns="system", values=s)
        ps = []
        for r in sig.pairs.to_dict("records"):
            both = wide[[r["a"], r["b"]]].dropna()
            assert r[f"{s}_n"] == len(both)
            assert r[f"{s}_delta"] == pytest.approx((both[r["a"]] - both[r["b"]]).mean())
            assert r[f"{s}_p"] == pytest.approx(sps.ttest_rel(both[r["a"]], both[r["b"]]).pvalue,
                                                rel=1e-12)
            ps.append(r[f"{s}_p"])
        assert list(sig.pairs[f"{s}_p_adjusted"]) == pytest.approx(_holm(ps))
        for sys in systems:  # each run's interval is scipy's t-interval
            v = wide[sys].dropna()
            lo, hi = sps.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=sps.sem(v))
            assert sig.run_ci(sys, s) == pytest.approx((lo, hi))


def test_verdicts_follow_the_adjusted_p_values_and_signs(comparison: Comparison
                                                          ) -> None:
    for alpha in (0.05, 0.2, 0.5):
        sig = significance(comparison.per_query, comparison.systems,
                           options=StatsOptions(alpha=alpha))
        for r in sig.pairs.to_dict("records"):
            h, m = r["human_p_adjusted"] < alpha, r["llm_p_adjusted"] < alpha
            same = r["human_delta"] * r["llm_delta"] > 0
            want = ("confirmed" if h and m and same else "reversed" if h and m else
                    "lost" if h else "spurious" if m else "tie")
            assert r["verdict"] == want
        assert sum(sig.counts.values()) == len(sig.pairs) == 6
    assert significance(comparison.per_query, comparison.systems,
                        options=StatsOptions(alpha=0.5)).counts["tie"] < 6


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


def test_ppi_estimates_equal_ppi_py_for_runs_and_pairs(
        comparison: Comparison, labels: dict[str, pd.DataFrame]) -> None:
    queries = sorted(set(labels["human"]["query_id"]))
    judged = set(queries[::2])  # 5 of the 10 queries have human labels
    population = {s: set(labels["llm"]["query_id"]) for s in comparison.systems}
    sig = significance(comparison.per_query, comparison.systems,
                       options=StatsOptions(ppi=True), ppi_population=population,
                       ppi_labelled=judged)
    lab = [q for q in queries if q in judged]
    unl = [q for q in queries if q not in judged]
    pq = comparison.per_query

    def values(system: str, col: str, qs: list[str]) -> np.ndarray:
        return (pq.loc[pq["system"] == system].set_index("query_id")[col].reindex(qs)
                .fillna(0.0).to_numpy())

    def reference(y: np.ndarray, yhat: np.ndarray, yu: np.ndarray) -> list[float]:
        lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05)
        return [float(np.ravel(v)[0]) for v in (ppi_py.ppi_mean_pointestimate(y, yhat, yu),
                                                lo, hi, ppi_py.ppi_mean_pval(y, yhat, yu))]

    for sys in comparison.systems:
        got = sig.run_ppi(sys)
        assert got is not None and (got["n_labelled"], got["n_unlabelled"]) == (5, 5)
        est, lo, hi, _ = reference(values(sys, "human", lab), values(sys, "llm", lab),
                                   values(sys, "llm", unl))
        assert [got["estimate"], *got["ci"]] == pytest.approx([est, lo, hi], abs=1e-9)
    for item in sig.pairs_to_dicts():
        a, b = item["a"], item["b"]
        ref = reference(values(a, "human", lab) - values(b, "human", lab),
                        values(a, "llm", lab) - values(b, "llm", lab),
                        values(a, "llm", unl) - values(b, "llm", unl))
        assert [item["ppi"]["delta"], *item["ppi"]["ci"]] == pytest.approx(ref[:3], abs=1e-9)
        assert item["ppi"]["p"] == pytest.approx(ref[3], abs=1e-6)
    assert sig.planning_line() is not None
    strict = significance(comparison.per_query, comparison.systems,
                          options=StatsOptions(ppi=True, alpha=0.01),
                          ppi_population=population, ppi_labelled=judged)
    for sys in comparison.systems:  # --alpha sets the verdicts, not the 95% intervals
        assert strict.run_ppi(sys) == sig.run_ppi(sys)


def test_ppi_without_unlabelled_queries_says_why(comparison: Comparison,
                                                 labels: dict[str, pd.DataFrame]) -> None:
    everything = set(labels["human"]["query_id"])
    sig = significance(comparison.per_query, comparison.systems,
                       options=StatsOptions(ppi=True),
                       ppi_population={s: everything for s in comparison.systems},
                       ppi_labelled=everything)
    assert all(sig.run_ppi(s) is None for s in comparison.systems)
    assert "10 queries with human labels, 0 without" in sig.notes[0]


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
                        ("mid", "low"): "spurious"}
    assert sig.counts_line() == "of 3 pairs: 2 confirmed, 0 reversed, 0 lost, 1 spurious, 0 ties"
    means = pq.groupby("system", sort=False)[["human", "llm"]].mean().reset_index()
    assert headline(means, sig) == (
        "Under human labels best is best, significantly ahead of 2 of 2 runs; the LLM labels "
        "keep it first but see 1 spurious difference.")
    flipped = _synthetic({"a": list(base + 0.2), "b": list(base)},
                         {"a": list(base), "b": list(base + 0.2)})
    sig2 = significance(flipped, ["a", "b"])
    means2 = flipped.groupby("system", sort=False)[["human", "llm"]].mean().reset_index()
    assert sig2.counts["reversed"] == 1
    assert headline(means2, sig2) == (
        "Under human labels a is best, significantly ahead of 1 of 1 run; the LLM labels put "
        "b first but reverse 1 real difference.")
