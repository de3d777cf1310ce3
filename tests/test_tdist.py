"""The t quantile and the one t interval of a mean (no scipy at run time) against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from labeler import statistics
from labeler.errors import InputError
from labeler.tdist import mean_ci, t_cdf, t_quantile

DFS = [*range(1, 120), 150, 333, 998, 999, 1000, 1001, 4096, 10_000, 123_456, 10**6]


@pytest.mark.parametrize("p", [0.975, 0.995, 0.95, 0.9, 0.6, 0.025])
def test_t_quantile_equals_scipy(p: float) -> None:
    ours = np.array([t_quantile(p, df) for df in DFS])
    assert np.abs(ours - stats.t.ppf(p, DFS)).max() < 1e-12


def test_t_cdf_equals_scipy() -> None:
    for df in (1, 2, 3, 10, 57, 400):
        for x in (-3.0, -0.4, 0.0, 1.1, 2.5):
            assert t_cdf(x, df) == pytest.approx(stats.t.cdf(x, df), abs=1e-14)


@pytest.mark.parametrize("n", [2, 3, 10, 43, 1500])
def test_mean_ci_equals_scipy(n: int) -> None:
    values = np.random.default_rng(n).random(n)
    ref = stats.t.interval(0.9, n - 1, loc=values.mean(), scale=stats.sem(values))
    ours = mean_ci(values, level=0.9)
    assert ours is not None and ours == pytest.approx(ref, abs=1e-12)
    assert mean_ci([0.5]) is None and mean_ci([0.3, 0.3]) is None


def test_one_mean_ci_for_the_scorer_and_the_statistics() -> None:
    from labeler.statistics import inference

    assert statistics.mean_ci is mean_ci and inference.mean_ci is mean_ci
    with pytest.raises(InputError):
        mean_ci([0.5, float("inf")])


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)
