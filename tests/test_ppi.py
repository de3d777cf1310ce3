"""PPI estimators and the many-pairs machinery against ppi_py, scipy and hand computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from labeler.errors import ConfigError, InputError
from labeler.statistics.pairs import (
    holm, paired_t_many, select_pairs,
)
from labeler.statistics.ppi import pair_family, ppi_mean, ppi_mean_diff


def _data(seed: int = 1, n: int = 12, m: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.uniform(0, 1, n)
    yhat = np.clip(y + 0.1 + rng.normal(0, 0.15, n), 0, 1)
    yu = rng.uniform(0.1, 1, m)
    return y, yhat, yu


def test_queries_target_is_the_hand_computed_difference_estimator() -> None:
    y, yhat, yu = _data()
    n, big_n = len(y), len(y) + len(yu)
    r = ppi_mean(y, yhat, yu)
    d = y - yhat
    est = (yhat.sum() + yu.sum()) / big_n + d.mean()
    se = math.sqrt((1 - n / big_n) * d.var(ddof=1) / n)
    t = stats.t.ppf(0.975, n - 1)
    assert r.estimate == pytest.approx(est, abs=1e-12)
    assert r.se == pytest.approx(se, abs=1e-12)
    assert r.ci == pytest.approx((est - t * se, est + t * se), abs=1e-12)
    assert r.p == pytest.approx(2 * stats.t.sf(abs(est / se), n - 1), rel=1e-9)
    assert (r.lam, r.target, r.n_labelled, r.n_unlabelled) == (1.0, "queries", n, len(yu))


def test_n_total_widens_the_finite_population_correction() -> None:
    y, yhat, yu = _data()
    small, big = ppi_mean(y, yhat, yu), ppi_mean(y, yhat, yu, n_total=10_000)
    assert big.se > small.se
    assert big.se == pytest.approx(math.sqrt((1 - 12 / 10_000) * np.var(y - yhat, ddof=1) / 12))
    with pytest.raises(InputError):
        ppi_mean(y, yhat, yu, n_total=5)


def test_population_target_is_ppi_py_plain_with_a_t_quantile() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    for seed in range(5):
        y, yhat, yu = _data(seed)
        n = len(y)
        r = ppi_mean(y, yhat, yu, target="population", alpha=0.1)
        est = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, yu, lam=1))[0])
        lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.1, lam=1)
        # ppi_py's interval is est ± z·se: its se is (hi − lo) / (2z)
        se = (float(hi[0]) - float(lo[0])) / (2 * stats.norm.ppf(0.95))
        assert r.estimate == pytest.approx(est, abs=1e-12)
        assert r.se == pytest.approx(se, rel=1e-9)
        t = stats.t.ppf(0.95, n - 1)
        assert r.ci == pytest.approx((est - t * se, est + t * se), abs=1e-12)
        assert r.p == pytest.approx(2 * stats.t.sf(abs(est / se), n - 1), rel=1e-9)
        # wider than ppi_py's normal interval
        assert r.ci[0] < float(lo[0]) and r.ci[1] > float(hi[0])


def test_cross_fitted_lambda_is_fitted_on_the_other_fold() -> None:
    y, yhat, yu = _data(3, n=10)
    r = ppi_mean(y, yhat, yu, tune=True, seed=7)
    order = np.random.default_rng(7).permutation(10)
    fold = np.zeros(10, int)
    fold[order[5:]] = 1
    lams = []
    for j in (0, 1):
        other = fold != j
        c = np.cov(y[other], yhat[other], ddof=1)
        lams.append(min(1.0, max(0.0, c[0, 1] / c[1, 1])))
    lam_i = np.array(lams)[fold]
    resid = y - lam_i * yhat
    mean_all = np.concatenate([yhat, yu]).mean()
    # each fold: lambda_j * mean(Yhat) + residual mean over all 40 queries, the other fold's
    # part known (5 of 40), this fold's estimating the other 35
    parts = [lams[j] * mean_all + 5 / 40 * (y - lams[j] * yhat)[fold != j].mean()
             + 35 / 40 * (y - lams[j] * yhat)[fold == j].mean() for j in (0, 1)]
    est = sum(parts) / 2
    # each fold's residuals centred on their own mean (2 degrees of freedom spent)
    centred = np.concatenate([resid[fold == j] - resid[fold == j].mean() for j in (0, 1)])
    se = math.sqrt((1 - 10 / 40) * (centred ** 2).sum() / 8 / 10)
    assert r.lam == pytest.approx(sum(lams) / 2)
    assert r.estimate == pytest.approx(est, abs=1e-12)
    assert r.se == pytest.approx(se, abs=1e-12)
    # a change of a fold's own values leaves that fold's lambda alone
    y2 = y.copy()
    y2[fold == 0] += 0.3
    r2 = ppi_mean(y2, yhat, yu, tune=True, seed=7)
    c = np.cov(y2[fold == 0], yhat[fold == 0], ddof=1)
    lam1 = min(1.0, max(0.0, c[0, 1] / c[1, 1]))
    assert r2.lam == pytest.approx((lams[0] + lam1) / 2)
    # with lambda 1 in both folds the cross-fitted estimate is the plain one
    y3 = np.linspace(0.1, 0.9, 10)
    assert ppi_mean(y[:9], yhat[:9], yu, tune=True).lam == 1.0  # below 10: not tuned
    tuned = ppi_mean(y3, y3 - 0.05, yu, tune=True)
    assert tuned.lam == 1.0
    assert tuned.estimate == pytest.approx(ppi_mean(y3, y3 - 0.05, yu).estimate)


def test_too_few_labelled_queries_gives_a_reason() -> None:
    y, yhat, yu = _data(n=4)
    r = ppi_mean(y, yhat, yu)
    assert r.ci is None and r.estimate is None and r.p is None
    assert r.reason == "only 4 human-labelled queries"
    assert r.to_dict()["reason"] == "only 4 human-labelled queries"
    assert "reason" not in ppi_mean(*_data(n=5)).to_dict()


def test_bounds_clip_the_interval_not_the_estimate() -> None:
    y = np.array([0.0, 0.0, 0.05, 0.0, 0.3, 0.0])
    yhat = np.array([0.1, 0.0, 0.0, 0.2, 0.0, 0.0])
    yu = np.zeros(20)
    raw = ppi_mean(y, yhat, yu)
    clipped = ppi_mean(y, yhat, yu, bounds=(0, 1))
    assert raw.ci[0] < 0 and clipped.ci[0] == 0.0
    assert clipped.ci[1] == raw.ci[1] and clipped.estimate == raw.estimate


def test_p_and_interval_agree_on_zero() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        y, yhat, yu = rng.normal(0, 0.2, 8), rng.normal(0, 0.2, 8), rng.normal(0.05, 0.2, 20)
        for target in ("queries", "population"):
            r = ppi_mean(y, yhat, yu, target=target)
            assert (r.p < 0.05) == (not r.ci[0] <= 0 <= r.ci[1])


def test_diff_is_ppi_of_the_differences() -> None:
    ya, yha, yua = _data(1)
    yb, yhb, yub = _data(2)
    d = ppi_mean_diff(ya, yb, yha, yhb, yua, yub)
    assert d == ppi_mean(ya - yb, yha - yhb, yua - yub)
    with pytest.raises(InputError):
        ppi_mean_diff(ya, yb[:3], yha, yhb, yua, yub)


def test_bad_options() -> None:
    with pytest.raises(ConfigError):
        ppi_mean(*_data(), target="world")
    with pytest.raises(ConfigError):
        ppi_mean(*_data(), alpha=1.5)


def test_pair_family_holm_bonferroni_and_verdicts() -> None:
    rng = np.random.default_rng(0)
    ests = []
    for shift in (0.3, -0.3, 0.0):
        y = rng.normal(shift, 0.1, 10)
        ests.append(ppi_mean(y, y + rng.normal(0, 0.05, 10), rng.normal(shift, 0.1, 30)))
    ests.append(ppi_mean([0.1] * 3, [0.1] * 3, [0.2] * 5))  # no interval
    fam = pair_family(ests, bounds=None)
    assert fam.p_adjusted[:3] == pytest.approx(holm([e.p for e in ests[:3]]))
    assert fam.p_adjusted[3] is None and fam.ci_simultaneous[3] is None
    assert fam.verdicts == ("a-better", "b-better", "unresolved", "unresolved")
    e = ests[0]
    half = stats.t.ppf(1 - 0.05 / 3 / 2, 9) * e.se
    assert fam.ci_simultaneous[0] == pytest.approx((e.estimate - half, e.estimate + half))
    d = fam.to_dicts()[0]
    assert set(d) == {"delta", "ci", "ci_simultaneous", "p", "p_adjusted", "verdict"}


# ---------------------------------------------------------------------- many pairs

def test_paired_t_many_equals_ttest_rel() -> None:
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, (20, 6))
    valid = rng.uniform(size=x.shape) > 0.2
    x[~valid] = np.nan
    a, b = select_pairs(6, "all")
    delta, p, n = paired_t_many(x, valid, a, b)
    for i, (ia, ib) in enumerate(zip(a, b)):
        w = valid[:, ia] & valid[:, ib]
        ref = stats.ttest_rel(x[w, ia], x[w, ib])
        assert n[i] == w.sum()
        assert delta[i] == pytest.approx(np.mean(x[w, ia] - x[w, ib]), abs=1e-12)
        assert p[i] == pytest.approx(ref.pvalue, rel=1e-9)


def test_paired_t_many_edge_cases() -> None:
    x = np.array([[0.1, 0.1, 0.2, 0.5], [0.3, 0.3, 0.4, np.nan], [0.5, 0.5, 0.6, np.nan]])
    valid = ~np.isnan(x)
    delta, p, n = paired_t_many(x, valid, [0, 0, 0], [1, 2, 3])
    assert p[0] == 1.0 and delta[0] == 0.0            # identical runs
    assert p[1] == pytest.approx(0.0, abs=1e-12)       # a constant non-zero difference
    assert math.isnan(p[2]) and n[2] == 1              # one shared query: no test


def test_select_pairs_modes() -> None:
    assert [tuple(v) for v in select_pairs(3, "all")] == [(0, 0, 1), (1, 2, 2)]
    a, b = select_pairs(4, "best", order=[2, 0, 3, 1])
    assert sorted(zip(a.tolist(), b.tolist())) == [(0, 2), (1, 2), (2, 3)]
    a, b = select_pairs(4, "adjacent", order=[2, 0, 3, 1])
    assert sorted(zip(a.tolist(), b.tolist())) == [(0, 2), (0, 3), (1, 3)]
    assert len(select_pairs(1, "all")[0]) == 0
    with pytest.raises(ConfigError):
        select_pairs(3, "some")


def test_holm_by_hand() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([None, 0.5, float("nan")]) == [None, 0.5, None]
    ps = [0.001, 0.2, 0.04, 0.03, 0.5]
    m = len(ps)
    ranked = sorted(range(m), key=lambda i: ps[i])
    want = [0.0] * m
    running = 0.0
    for r, i in enumerate(ranked):
        running = max(running, min(1.0, ps[i] * (m - r)))
        want[i] = running
    assert holm(ps) == pytest.approx(want)
    assert list(itertools.chain(holm([]))) == []


def test_cross_fitted_estimate_is_exactly_unbiased_by_enumeration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ordered sample of 5 of 7 queries (the folds follow the order): the mean of the
    tuned estimates is the mean of Y over the 7 queries, to rounding."""
    from labeler.statistics import ppi as ppilib

    monkeypatch.setattr(ppilib, "MIN_TUNE", 4)  # tune this small sample (labeler: from 10)
    rng = np.random.default_rng(11)
    y = rng.uniform(0, 1, 7)
    yhat = np.clip(0.6 * y + 0.3 + rng.normal(0, 0.2, 7), 0, 1)
    total, count = 0.0, 0
    for sample in itertools.permutations(range(7), 5):
        idx = list(sample)
        rest = [i for i in range(7) if i not in idx]
        total += ppi_mean(y[idx], yhat[idx], yhat[rest], tune=True).estimate
        count += 1
    assert total / count == pytest.approx(y.mean(), abs=1e-12)
