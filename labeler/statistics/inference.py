"""Is a difference real? Intervals of a mean and paired tests of two runs.

Pure functions on arrays of per-query values (numpy/scipy only, no pandas):

- :func:`mean_ci` — the 95% Student-t interval of a mean (``scipy.stats.t.interval``),
  clipped to ``bounds`` when the values are known to lie there (NDCG: ``(0, 1)``); it is
  :func:`labeler.tdist.mean_ci`, the scorer's own (no scipy at run time).
- :func:`paired_test` — two-sided paired test of two runs over the same queries: the t-test
  (``scipy.stats.ttest_rel``) or Fisher's sign-flip randomization test
  (``scipy.stats.permutation_test``; every sign pattern is enumerated when there are no more
  of them than permutations asked for).
- :func:`holm` — Holm's step-down adjustment of a family of p-values
  (:mod:`labeler.statistics.pairs`).
- :func:`more_queries_to_halve` — planning: how many more queries would halve an interval.

Prediction-powered estimates live in :mod:`labeler.statistics.ppi`.

Usage::

    from labeler.statistics import inference as stats
    stats.mean_ci([0.61, 0.55, 0.72, 0.40], bounds=(0, 1))   # (lo, hi)
    t = stats.paired_test(run_a, run_b, test="t")             # t.delta, t.p, t.n
    stats.holm([0.01, 0.04, 0.03])                            # adjusted p-values
"""

from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeler.errors import ConfigError, InputError
from labeler.statistics.pairs import holm
from labeler.tdist import mean_ci

__all__ = ["DEFAULT_ALPHA", "DEFAULT_PERMUTATIONS", "LEVEL", "TESTS", "PairedTest", "check_alpha",
           "holm", "mean_ci", "more_queries_to_halve", "paired_test", "significant"]

TESTS: tuple[str, ...] = ("t", "randomization")
"""Names of the paired tests (``--test``)."""
DEFAULT_PERMUTATIONS = 10_000
DEFAULT_ALPHA = 0.05
LEVEL = 0.95


def _array(values: ArrayLike, what: str = "values") -> NDArray[np.float64]:
    a = np.asarray(values, dtype="float64").reshape(-1)
    if not np.isfinite(a).all():
        raise InputError(f"{what} must be finite numbers (got NaN or infinity)")
    return a


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float strictly between 0 and 1, else :class:`ConfigError`."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ConfigError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


# ---------------------------------------------------------------------- intervals

def more_queries_to_halve(n: int, level: float = LEVEL) -> int | None:
    """How many more queries (same spread) halve the width of a t-interval over ``n`` queries:
    the smallest m with ``t(n+m-1)·/√(n+m) ≤ ½·t(n-1)/√n``. ``None`` when ``n < 2``.

    Usage: ``more_queries_to_halve(15)`` → ``38`` (15 + 38 queries: a half-as-wide interval)
    """
    from scipy import stats

    if n < 2:
        return None
    q = 1 - (1 - level) / 2

    def half_width(k: int) -> float:
        return float(stats.t.ppf(q, k - 1)) / math.sqrt(k)

    target = half_width(n) / 2
    m = 3 * n  # the normal approximation (4n in all), then the exact t quantiles
    while half_width(n + m) > target:
        m += 1
    while m > 0 and half_width(n + m - 1) <= target:
        m -= 1
    return m


# ---------------------------------------------------------------------- paired tests

@dataclass(frozen=True)
class PairedTest:
    """A paired test of a − b over ``n`` queries: ``delta`` is the mean difference, ``p`` the
    two-sided p-value (``None`` below two queries)."""

    delta: float | None
    p: float | None
    n: int


def paired_test(a: ArrayLike, b: ArrayLike, *, test: str = "t",
                permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0) -> PairedTest:
    """Two-sided paired test of the per-query values ``a`` and ``b`` (same queries, same order).

    ``test="t"``: ``scipy.stats.ttest_rel``. ``test="randomization"``: Fisher's sign-flip test
    of the mean difference (``scipy.stats.permutation_test``, ``permutations`` random sign
    patterns from ``seed``; all 2^n patterns when 2^n ≤ ``permutations``). Identical values
    give p = 1; fewer than two queries give ``p=None``.

    Usage: ``paired_test([.5, .6, .7], [.4, .6, .5]).p``
    """
    if test not in TESTS:
        raise ConfigError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    x, y = _array(a, "run a's values"), _array(b, "run b's values")
    if len(x) != len(y):
        raise InputError(f"a paired test needs as many values in each run ({len(x)} vs {len(y)})")
    n = len(x)
    if n == 0:
        return PairedTest(None, None, 0)
    d = x - y
    delta = float(d.mean())
    if n < 2:
        return PairedTest(delta, None, n)
    if not d.any():
        return PairedTest(delta, 1.0, n)
    if test == "t":
        p = _t_test(x, y)
    else:
        p = _sign_flip(d, _check_permutations(permutations), seed)
    return PairedTest(delta, p, n)


def _t_test(x: NDArray[np.float64], y: NDArray[np.float64]) -> float | None:
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-constant differences: a precision warning
        p = float(stats.ttest_rel(x, y).pvalue)
    return p if math.isfinite(p) else None


def _check_permutations(permutations: int) -> int:
    if (isinstance(permutations, bool) or not isinstance(permutations, (int, np.integer))
            or permutations < 1):
        raise ConfigError(f"permutations must be a positive integer, got {permutations!r}")
    return int(permutations)


def _sign_flip(d: NDArray[np.float64], permutations: int, seed: int) -> float:
    from scipy import stats

    def mean(x: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
        return np.mean(x, axis=axis)

    rng_arg = "rng" if "rng" in inspect.signature(stats.permutation_test).parameters \
        else "random_state"
    res = stats.permutation_test((d,), mean, permutation_type="samples", vectorized=True,
                                 n_resamples=permutations, alternative="two-sided",
                                 **{rng_arg: np.random.default_rng(seed)})
    return float(min(1.0, res.pvalue))


def significant(p_adjusted: float | None, alpha: float = DEFAULT_ALPHA) -> bool:
    """``True`` where an adjusted p-value is below ``alpha``."""
    return p_adjusted is not None and p_adjusted < alpha
