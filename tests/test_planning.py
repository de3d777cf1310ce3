"""How many labelled queries an interval needs: the arithmetic against scipy.stats (t and F
quantiles, a brute-force search), and the margin's promise checked by a small simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from labeler.statistics import planning
from labeler.statistics.planning import (half_width, margin, pair_advice, queries_needed,
                                         queries_to_resolve)


def brute_force(x: np.ndarray, n_total: int | None, w: float, assurance: float,
                kurtosis: float, strict: bool = False, top: int = 5000) -> int | None:
    """The smallest n whose t half-width with the F-quantile margin reaches w, one n at a
    time, from scipy.stats."""
    n0, s2 = len(x), float(np.var(x, ddof=1))

    def df(m: int) -> float:
        return 2 / (2 / (m - 1) + kurtosis / m)

    for n in range(min(planning.MIN_LABELLED, n_total or top), (n_total or top) + 1):
        if n_total is not None and n >= n_total:
            return n
        var = s2 * stats.f.ppf(assurance, df(n), df(n0))
        fpc = 1.0 if n_total is None else 1 - n / n_total
        hw = stats.t.ppf(0.975, n - 1) * math.sqrt(fpc * var / n)
        if (hw < w) if strict else (hw <= w):
            return n
    return None


def test_half_width_is_the_t_interval_with_the_finite_population_correction() -> None:
    for sd, n, big_n in ((0.12, 21, 43), (0.3, 5, 200), (0.05, 40, 43)):
        want = stats.t.ppf(0.975, n - 1) * sd * math.sqrt((1 - n / big_n) / n)
        assert half_width(sd, n, big_n) == pytest.approx(want, rel=1e-12)
    assert half_width(0.2, 10) == pytest.approx(stats.t.ppf(0.975, 9) * 0.2 / math.sqrt(10))
    assert half_width(0.2, 43, 43) == 0.0
    assert math.isnan(half_width(0.2, 1, 43))
    got = half_width(0.1, np.array([5, 10, 20]), 50)
    assert got.shape == (3,) and np.all(np.diff(got) < 0)


def test_the_margin_is_an_f_quantile() -> None:
    assert margin(20, 10, 0.8, 0.0) == pytest.approx(stats.f.ppf(0.8, 19, 9), rel=1e-10)
    assert margin(20, 10, 0.5, 0.0) == pytest.approx(stats.f.median(19, 9), rel=1e-10)
    df = lambda m: 2 / (2 / (m - 1) + 6.0 / m)  # noqa: E731
    assert margin(30, 8, 0.8, 6.0) == pytest.approx(stats.f.ppf(0.8, df(30), df(8)), rel=1e-10)
    assert margin(30, 8) > margin(30, 8, kurtosis=0.0) > 1  # heavier tails, more margin
    with pytest.raises(ValueError):
        margin(10, 1)


@pytest.mark.parametrize("seed", range(6))
def test_queries_needed_matches_a_brute_force_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(0, rng.uniform(0.03, 0.25), int(rng.integers(5, 16)))
    for n_total in (43, 200, None):
        for w in (0.02, 0.05, 0.1):
            for assurance, kurt in ((planning.ASSURANCE, planning.KURTOSIS_RUN), (0.5, 0.0),
                                    (0.8, planning.KURTOSIS_PAIR)):
                got = queries_needed(x, n_total, w, assurance=assurance, kurtosis=kurt)
                assert got.n == brute_force(x, n_total, w, assurance, kurt), (n_total, w)
                assert got.now == len(x) and got.sd == pytest.approx(np.std(x, ddof=1))
                if n_total is not None:
                    assert got.n is not None and got.n <= n_total


def test_the_result_says_how_many_more_and_the_interval_today() -> None:
    x = np.array([0.1, -0.05, 0.2, 0.0, 0.15, -0.1, 0.05, 0.3, -0.2, 0.12])
    need = queries_needed(x, 43, 0.05)
    assert need.more == need.n - 10 and need.reason is None
    assert need.half_width_now == pytest.approx(half_width(float(np.std(x, ddof=1)), 10, 43))
    assert need.sd_planned > need.sd
    easy = queries_needed(x, 43, 1.0)  # already narrow enough: n below today's
    assert easy.n is not None and easy.n <= 10 and easy.more == 0
    d = need.to_dict()
    assert set(d) == {"n", "more", "now", "n_total", "sd", "sd_planned", "half_width_now",
                      "reason"}


def test_too_few_labelled_queries_give_no_number_and_say_why() -> None:
    need = queries_needed([0.1, 0.2, 0.3, 0.4], 43, 0.05)
    assert need.n is None and need.more is None and "only 4" in str(need.reason)
    huge = queries_needed(np.linspace(-1, 1, 10), None, 1e-4, max_n=1000)
    assert huge.n is None and "1,000" in str(huge.reason)
    with pytest.raises(ValueError):
        queries_needed([0.1] * 10, 43, 0.0)
    with pytest.raises(ValueError):
        queries_needed([0.1] * 50, 43, 0.05)


def test_no_spread_needs_only_the_fewest_ppi_takes() -> None:
    assert queries_needed([0.2] * 8, 43, 0.01).n == planning.MIN_LABELLED


def test_resolving_a_pair_asks_for_an_interval_narrower_than_its_difference() -> None:
    rng = np.random.default_rng(1)
    d_h, d_l = rng.normal(0.03, 0.1, 12), rng.normal(0.02, 0.1, 12)
    got = pair_advice(d_h, d_l, 60, delta=-0.03)
    assert got.n == brute_force(d_h - d_l, 60, 0.03, planning.ASSURANCE_PAIR,
                                planning.KURTOSIS_PAIR, strict=True)
    alone = pair_advice(d_h, None, None, delta=0.03)
    assert alone.n == brute_force(d_h, None, 0.03, planning.ASSURANCE_PAIR,
                                  planning.KURTOSIS_PAIR,
                                  strict=True)
    zero = queries_to_resolve(d_h, None, 0.0)
    assert zero.n is None and "no difference" in str(zero.reason)
    assert zero.half_width_now == pytest.approx(half_width(float(np.std(d_h, ddof=1)), 12))


def test_the_number_named_reaches_the_width_about_as_often_as_promised() -> None:
    """Normal data, no tails assumed: with the F margin at 0.8 the fresh sample of the size
    named reaches ±W in about 80% of pilots (and without a margin, in far fewer)."""
    rng = np.random.default_rng(7)
    hits = {"margin": 0, "none": 0}
    reps = 400
    for _ in range(reps):
        pilot = rng.normal(0, 0.15, 10)
        for name, assurance in (("margin", 0.8), ("none", 0.5)):
            n = queries_needed(pilot, None, 0.05, assurance=assurance, kurtosis=0.0).n
            assert n is not None
            fresh = rng.normal(0, 0.15, n)
            hits[name] += half_width(float(np.std(fresh, ddof=1)), n) <= 0.05
    assert 0.72 <= hits["margin"] / reps <= 0.9
    assert hits["none"] / reps < 0.62
