"""Intervals, paired tests, Holm, verdicts and PPI++: every figure against an independent
reference (scipy, a direct Holm loop, exact enumeration of sign flips, ppi_py), on real
TREC DL 2019 per-query NDCG@10 (human labels vs the lexical judge's) and on random data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import ppi_py
import pytest
from scipy import stats as sps

from dl19kit import lexical_slice

from labeler.scoring import results as scoring

from labeler.statistics import inference as stats
from labeler.errors import ConfigError, InputError

@pytest.fixture(scope="module")
def dl19() -> dict[str, pd.DataFrame]:
    """Per-query NDCG@10 of four DL 2019 runs on ten queries: ``human`` (NIST labels) and
    ``llm`` (the lexical judge's labels of every passage in the runs' top 10); one column per
    run, one row per query."""
    data = lexical_slice()
    human, llm, runs = data["human"], data["llm"][["query_id", "chunk_id", "grade"]], data["runs"]
    out = {}
    for name, qrels in (("human", human), ("llm", llm)):
        pq = scoring.evaluate(qrels, runs, k=10, include_empty=True).per_query
        out[name] = pq.pivot(index="query_id", columns="system", values="ndcg").astype(float)
    return out


# ---------------------------------------------------------------------- intervals

def test_mean_interval_is_scipys_t_interval_on_real_runs(dl19: dict[str, pd.DataFrame]) -> None:
    for labels in ("human", "llm"):
        for run, values in dl19[labels].items():
            v = values.dropna().to_numpy()
            lo, hi = sps.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=sps.sem(v))
            ci = stats.mean_ci(v)
            assert ci is not None and ci[0] < v.mean() < ci[1], run
            assert ci == pytest.approx((lo, hi), abs=1e-12)


def test_no_interval_without_two_values_that_differ() -> None:
    assert stats.mean_ci([]) is None
    assert stats.mean_ci([0.4]) is None
    assert stats.mean_ci([0.5, 0.5, 0.5]) is None
    assert stats.mean_ci([0.5, 0.7]) is not None
    with pytest.raises(InputError):
        stats.mean_ci([0.5, float("nan")])


@pytest.mark.parametrize("n", [2, 5, 15, 43])
def test_more_queries_to_halve_is_the_first_count_whose_t_interval_is_half(n: int) -> None:
    m = stats.more_queries_to_halve(n)
    assert m is not None

    def width(k: int) -> float:  # scipy's interval for a sample of k values with sd 1
        lo, hi = sps.t.interval(0.95, k - 1, loc=0, scale=1 / math.sqrt(k))
        return hi - lo

    assert width(n + m) <= width(n) / 2 < width(n + m - 1)
    assert stats.more_queries_to_halve(1) is None


# ---------------------------------------------------------------------- paired tests

def test_paired_t_test_is_scipys_ttest_rel_on_every_pair_of_real_runs(
        dl19: dict[str, pd.DataFrame]) -> None:
    for labels in ("human", "llm"):
        table = dl19[labels]
        for a, b in itertools.combinations(table.columns, 2):
            both = table[[a, b]].dropna()
            res = stats.paired_test(both[a], both[b], test="t")
            ref = sps.ttest_rel(both[a], both[b])
            assert res.n == len(both) == 10
            assert res.delta == pytest.approx((both[a] - both[b]).mean(), abs=1e-15)
            assert res.p == pytest.approx(ref.pvalue, rel=1e-12)


def _exact_sign_flip(d: np.ndarray) -> float:
    """Two-sided p of the sign-flip test by enumerating all 2^n sign patterns."""
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
    means = (signs * d).mean(axis=1)
    obs = d.mean()
    tol = 1e-12
    return min(1.0, 2 * min((means <= obs + tol).mean(), (means >= obs - tol).mean()))


def test_randomization_test_equals_exact_enumeration_on_real_pairs(
        dl19: dict[str, pd.DataFrame]) -> None:
    table = dl19["human"]  # 10 queries: 1,024 sign patterns, fewer than the 10,000 asked for
    for a, b in itertools.combinations(table.columns, 2):
        d = (table[a] - table[b]).to_numpy()
        res = stats.paired_test(table[a], table[b], test="randomization")
        assert res.p == pytest.approx(_exact_sign_flip(d), abs=1e-12)


def test_randomization_test_with_sampled_sign_patterns_is_close_to_exact_and_seeded() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(16)
    b = a - rng.normal(0.04, 0.1, 16)  # 65,536 patterns > 5,000 drawn
    exact = _exact_sign_flip(a - b)
    p1 = stats.paired_test(a, b, test="randomization", permutations=5000, seed=1).p
    p1_again = stats.paired_test(a, b, test="randomization", permutations=5000, seed=1).p
    p2 = stats.paired_test(a, b, test="randomization", permutations=5000, seed=2).p
    assert p1 == p1_again and p1 != p2
    assert p1 is not None and p2 is not None
    sd = math.sqrt(exact * (1 - exact) / 5000) * 2  # two-sided: twice a one-sided proportion
    assert abs(p1 - exact) < 4 * sd + 2 / 5000
    assert abs(p2 - exact) < 4 * sd + 2 / 5000


def test_identical_runs_are_not_different_and_one_query_is_not_testable() -> None:
    for test in stats.TESTS:
        same = stats.paired_test([0.2, 0.5, 0.9], [0.2, 0.5, 0.9], test=test)
        assert (same.delta, same.p, same.n) == (0.0, 1.0, 3)
        one = stats.paired_test([0.2], [0.5], test=test)
        assert one.p is None and one.n == 1 and one.delta == pytest.approx(-0.3)
    with pytest.raises(ConfigError, match="unknown test"):
        stats.paired_test([1, 2], [2, 1], test="wilcoxon")
    with pytest.raises(ConfigError, match="permutations"):
        stats.paired_test([1, 2], [2, 1], test="randomization", permutations=0)
    with pytest.raises(InputError, match="as many values"):
        stats.paired_test([1, 2], [2, 1, 3])


# ---------------------------------------------------------------------- Holm

def _holm_direct(p: list[float]) -> list[float]:
    """Holm (1979), step by step: the i-th smallest p times (m - i + 1), never below the
    adjusted value before it, at most 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order, start=1):
        running = max(running, min(1.0, (m - rank + 1) * p[i]))
        out[i] = running
    return out


def test_holm_equals_a_direct_implementation_and_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests  # installed with ppi_py

    rng = np.random.default_rng(3)
    for m in (1, 2, 6, 55):
        p = list(rng.random(m) ** 3)
        if m > 2:
            p[1] = p[0]  # a tie
        adjusted = stats.holm(p)
        assert adjusted == pytest.approx(_holm_direct(p), abs=1e-15)
        assert adjusted == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-15)


def test_holm_leaves_untestable_pairs_out_of_the_family() -> None:
    adjusted = stats.holm([0.01, None, 0.04, float("nan"), 0.03])
    assert adjusted[1] is None and adjusted[3] is None
    assert [adjusted[0], adjusted[2], adjusted[4]] == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([]) == []


# ---------------------------------------------------------------------- verdicts

@pytest.mark.parametrize(("human", "llm", "expected"), [
    ((0.05, 0.001), (0.04, 0.01), "confirmed"),
    ((0.05, 0.001), (-0.04, 0.01), "reversed"),
    ((0.05, 0.001), (0.04, 0.2), "lost"),
    ((0.05, 0.3), (0.04, 0.01), "spurious"),
    ((0.05, 0.3), (0.04, 0.2), "tie"),
    ((0.05, 0.05), (0.04, 0.049), "spurious"),  # significant means strictly below alpha
    ((None, None), (0.04, None), "tie"),
])
def test_verdict(human: tuple, llm: tuple, expected: str) -> None:
    assert stats.verdict(human[0], human[1], llm[0], llm[1], alpha=0.05) == expected
    assert expected in stats.VERDICTS


# ---------------------------------------------------------------------- PPI++

def _ppi_reference(y: np.ndarray, yhat: np.ndarray, yu: np.ndarray) -> tuple[float, ...]:
    est = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, yu))[0])
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05)
    p = float(np.ravel(ppi_py.ppi_mean_pval(y, yhat, yu))[0])
    return est, float(np.ravel(lo)[0]), float(np.ravel(hi)[0]), p


def _assert_ppi_equal(y: np.ndarray, yhat: np.ndarray, yu: np.ndarray) -> stats.PPIResult:
    res = stats.ppi_mean(y, yhat, yu)
    est, lo, hi, p = _ppi_reference(y, yhat, yu)
    assert res.estimate == pytest.approx(est, abs=1e-9)
    assert res.ci == pytest.approx((lo, hi), abs=1e-9)
    assert res.p == pytest.approx(p, abs=1e-6)
    assert (res.n_labelled, res.n_unlabelled) == (len(y), len(yu))
    return res


def test_ppi_equals_ppi_py_on_real_runs_and_their_differences(
        dl19: dict[str, pd.DataFrame]) -> None:
    human, llm = dl19["human"], dl19["llm"]
    labelled = np.array([True, False, True, False, False, True, False, True, False, False])
    for run in human.columns:
        y, yhat = human[run].to_numpy(), llm[run].to_numpy()
        res = _assert_ppi_equal(y[labelled], yhat[labelled], yhat[~labelled])
        assert 0 <= res.lam <= 1 and res.ci[0] < res.estimate < res.ci[1]
    for a, b in itertools.combinations(human.columns, 2):
        d, dhat = (human[a] - human[b]).to_numpy(), (llm[a] - llm[b]).to_numpy()
        _assert_ppi_equal(d[labelled], dhat[labelled], dhat[~labelled])


@pytest.mark.parametrize("seed", range(6))
def test_ppi_equals_ppi_py_on_random_samples(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(3, 30)), int(rng.integers(1, 200))
    y = rng.random(n)
    noise = rng.normal(0, float(rng.uniform(0.01, 1)), n + big_n)
    yhat_all = np.concatenate([y, rng.random(big_n)]) + 0.1 + noise
    if seed == 5:
        yhat_all = -yhat_all  # anti-correlated: the weight is clipped to 0 for the interval
    res = _assert_ppi_equal(y, yhat_all[:n], yhat_all[n:])
    if seed == 5:
        assert res.lam == 0.0


def test_ppi_with_a_perfect_judge_is_narrower_than_the_human_sample_alone() -> None:
    rng = np.random.default_rng(11)
    population = rng.beta(2, 3, 200)
    y = population[:20]
    res = _assert_ppi_equal(y, y, population[20:])
    human_only = stats.mean_ci(y)
    assert human_only is not None
    assert res.ci[1] - res.ci[0] < 0.5 * (human_only[1] - human_only[0])
    assert res.lam > 0.5 and res.ci[0] < population.mean() < res.ci[1]


def test_ppi_with_constant_llm_values_falls_back_to_the_human_sample() -> None:
    res = stats.ppi_mean([0.2, 0.4, 0.9], [0.5, 0.5, 0.5], [0.5, 0.5])
    assert res.lam == 0.0 and res.estimate == pytest.approx(0.5)
    with pytest.raises(InputError, match="at least 2 labelled"):
        stats.ppi_mean([0.2], [0.3], [0.4])
    with pytest.raises(InputError, match="every labelled query"):
        stats.ppi_mean([0.2, 0.3], [0.3], [0.4])
    with pytest.raises(ConfigError, match="alpha"):
        stats.ppi_mean([0.2, 0.3], [0.3, 0.1], [0.4], alpha=1.5)


def test_more_queries_to_halve_ppi_halves_ppi_pys_interval() -> None:
    """Plan on a small sample, then judge that many more queries of the same population:
    ppi_py's interval is about half as wide."""
    rng = np.random.default_rng(5)
    size = 4000
    y_all = rng.beta(2, 3, size)
    yhat_all = np.clip(y_all + rng.normal(0.05, 0.15, size), 0, 1)
    n = 100
    m = stats.more_queries_to_halve_ppi(y_all[:n], yhat_all[:n], yhat_all[n:])
    assert m is not None and m > 0

    def width(k: int) -> float:
        lo, hi = ppi_py.ppi_mean_ci(y_all[:k], yhat_all[:k], yhat_all[k:], alpha=0.05)
        return float(np.ravel(hi)[0] - np.ravel(lo)[0])

    assert 0.45 < width(n + m) / width(n) < 0.55
    # where no number of queries would halve it, say so
    assert stats.more_queries_to_halve_ppi(y_all[:3], yhat_all[:3], yhat_all[3:4]) is None
