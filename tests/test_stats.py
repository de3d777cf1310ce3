"""Intervals, paired tests and Holm: every figure against an independent
reference (scipy, a direct Holm loop, exact enumeration of sign flips, ppi_py), on real
TREC DL 2019 per-query NDCG@10 (human labels vs the lexical judge's) and on random data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
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


def test_mean_ci_clips_to_bounds() -> None:
    v = [0.0, 0.0, 0.0, 0.05, 0.4]
    lo, hi = sps.t.interval(0.95, 4, loc=np.mean(v), scale=sps.sem(v))
    assert lo < 0
    assert stats.mean_ci(v) == pytest.approx((lo, hi))
    assert stats.mean_ci(v, bounds=(0, 1)) == pytest.approx((0.0, hi))
