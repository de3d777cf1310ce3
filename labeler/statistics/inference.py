"""Is a difference real? Intervals, paired tests, Holm's correction, verdicts and PPI++.

Pure functions on arrays of per-query values (numpy/scipy only, no pandas):

- :func:`mean_ci` — the 95% Student-t interval of a mean (``scipy.stats.t.interval``).
- :func:`paired_test` — two-sided paired test of two runs over the same queries: the t-test
  (``scipy.stats.ttest_rel``) or Fisher's sign-flip randomization test
  (``scipy.stats.permutation_test``; every sign pattern is enumerated when there are no more
  of them than permutations asked for).
- :func:`holm` — Holm's step-down adjustment of a family of p-values.
- :func:`verdict` — what the LLM labels do to a difference the human labels see (or not).
- :func:`ppi_mean` — prediction-powered inference (PPI++, power-tuned) for a mean: the LLM
  mean over every query corrected by the human-labelled sample, with a confidence interval and
  a p-value; the same figures as ``ppi_py``'s ``ppi_mean_*`` functions.
- :func:`more_queries_to_halve` / :func:`more_queries_to_halve_ppi` — planning: how many more
  human-judged queries would halve an interval.

Usage::

    from labeler.statistics import inference as stats
    stats.mean_ci([0.61, 0.55, 0.72, 0.40])            # (lo, hi)
    t = stats.paired_test(run_a, run_b, test="t")        # t.delta, t.p, t.n
    stats.holm([0.01, 0.04, 0.03])                       # adjusted p-values
    stats.ppi_mean(y, yhat, yhat_unlabelled).ci
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeler.errors import ConfigError, InputError

TESTS: tuple[str, ...] = ("t", "randomization")
"""Names of the paired tests (``--test``)."""
Test = Literal["t", "randomization"]
VERDICTS: tuple[str, ...] = ("confirmed", "reversed", "lost", "spurious", "tie")
"""Every pair verdict, in the order they are counted."""
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

def mean_ci(values: ArrayLike, level: float = LEVEL) -> tuple[float, float] | None:
    """The Student-t interval of the mean of ``values`` at ``level`` (default 95%):
    ``scipy.stats.t.interval(level, n - 1, loc=mean, scale=sem)``. ``None`` when there are
    fewer than two values or they do not vary (no spread to measure).

    Usage: ``mean_ci([0.61, 0.55, 0.72, 0.40])`` → ``(0.3577..., 0.7822...)``
    """
    # scipy.stats.t.interval is loc + t.ppf(q) * scale, and t.ppf is scipy.special.stdtrit:
    # calling it directly gives the same figures without importing scipy.stats (about a
    # second of start-up that `labeler score` does not need).
    from scipy.special import stdtrit

    a = _array(values)
    n = len(a)
    if n < 2 or np.ptp(a) == 0:
        return None
    sem = float(np.std(a, ddof=1) / np.sqrt(n))
    if not sem > 0:
        return None
    mean = float(a.mean())
    lo = mean + float(stdtrit(n - 1, (1 - level) / 2)) * sem
    hi = mean + float(stdtrit(n - 1, (1 + level) / 2)) * sem
    return lo, hi


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


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment: sort the m p-values ascending, multiply the i-th (from 0)
    by m − i, carry the running maximum, cap at 1. ``None`` entries are left out of the family
    and stay ``None``.

    Usage: ``holm([0.01, 0.04, 0.03])`` → ``[0.03, 0.06, 0.06]``
    """
    values = [None if v is None else float(v) for v in pvalues]
    idx = [i for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    out: list[float | None] = [None] * len(values)
    if not idx:
        return out
    p = np.array([values[i] for i in idx], dtype="float64")
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    for rank, j in enumerate(order):
        out[idx[j]] = float(adjusted[rank])
    return out


def significant(p_adjusted: float | None, alpha: float = DEFAULT_ALPHA) -> bool:
    """``True`` where an adjusted p-value is below ``alpha``."""
    return p_adjusted is not None and p_adjusted < alpha


def verdict(human_delta: float | None, human_p_adjusted: float | None,
            llm_delta: float | None, llm_p_adjusted: float | None,
            alpha: float = DEFAULT_ALPHA) -> str:
    """The verdict on one pair of runs: ``confirmed`` (significant under both label sets, same
    sign), ``reversed`` (both, opposite signs), ``lost`` (human labels only), ``spurious``
    (LLM labels only) or ``tie`` (neither).

    Usage: ``verdict(0.05, 0.001, 0.04, 0.01)`` → ``"confirmed"``
    """
    h = significant(human_p_adjusted, alpha)
    m = significant(llm_p_adjusted, alpha)
    if h and m:
        same = (human_delta or 0.0) * (llm_delta or 0.0) > 0
        return "confirmed" if same else "reversed"
    if h:
        return "lost"
    if m:
        return "spurious"
    return "tie"


# ---------------------------------------------------------------------- PPI++

@dataclass(frozen=True)
class PPIResult:
    """A prediction-powered estimate of a mean: ``estimate``, its ``ci`` (two-sided, at
    ``1 - alpha``), the two-sided ``p`` against 0, ``lam`` (the power-tuning weight of the LLM
    values: 0 = human sample alone, 1 = plain PPI), and the sample sizes."""

    estimate: float
    ci: tuple[float, float]
    p: float
    lam: float
    n_labelled: int
    n_unlabelled: int


def _ppi_lambda(y: NDArray[np.float64], yhat: NDArray[np.float64],
                yhat_u: NDArray[np.float64], clip: bool) -> float:
    """PPI++'s variance-minimising weight for a mean (ppi_py's ``_calc_lam_glm``, d = 1):
    cov(Y, Ŷ) / ((1 + n/N) · var(Ŷ of all queries)), 0 when the LLM values do not vary."""
    n, big_n = len(y), len(yhat_u)
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    var = float(np.var(np.concatenate([yhat, yhat_u]), ddof=1))
    if not var > 0:
        return 0.0
    lam = cov / ((1 + n / big_n) * var)
    return float(np.clip(lam, 0.0, 1.0)) if clip else lam


def _ppi_parts(y: NDArray[np.float64], yhat: NDArray[np.float64],
               yhat_u: NDArray[np.float64], lam: float) -> tuple[float, float]:
    """(estimate, standard error) of the PPI estimator with weight ``lam``."""
    estimate = float(np.mean(lam * yhat_u) + np.mean(y - lam * yhat))
    se = math.sqrt(float(np.std(lam * yhat_u)) ** 2 / len(yhat_u)
                   + float(np.std(y - lam * yhat)) ** 2 / len(y))
    return estimate, se


def ppi_mean(y: ArrayLike, yhat: ArrayLike, yhat_unlabelled: ArrayLike,
             alpha: float = DEFAULT_ALPHA, null: float = 0.0) -> PPIResult:
    """PPI++ for the mean of Y: ``y`` (human values) and ``yhat`` (LLM values) on the labelled
    units, ``yhat_unlabelled`` (LLM values) on the others.

    Equals ``ppi_py.ppi_mean_pointestimate``, ``ppi_mean_ci(alpha=alpha)`` and
    ``ppi_mean_pval(null=null)`` with their default power tuning. As there, the estimate and
    the interval use the weight clipped to [0, 1] and the p-value the unclipped one; where
    the LLM values do not vary at all, the weight is 0 (the human sample alone).

    Usage: ``ppi_mean(human_ndcg, llm_ndcg_same_queries, llm_ndcg_other_queries).ci``
    """
    from scipy import stats

    alpha = check_alpha(alpha)
    yv = _array(y, "human values")
    yh = _array(yhat, "LLM values of the labelled queries")
    yu = _array(yhat_unlabelled, "LLM values of the unlabelled queries")
    if len(yv) != len(yh):
        raise InputError(f"PPI needs a human and an LLM value for every labelled query "
                         f"({len(yv)} vs {len(yh)})")
    if len(yv) < 2 or len(yu) < 1:
        raise InputError(f"PPI needs at least 2 labelled and 1 unlabelled query "
                         f"(got {len(yv)} and {len(yu)})")
    # the weight of the estimate is tuned around the plain PPI estimate (lam = 1)
    lam = _ppi_lambda(yv, yh, yu, clip=True)
    estimate, se = _ppi_parts(yv, yh, yu, lam)
    z = float(stats.norm.ppf(1 - alpha / 2))
    lam_p = _ppi_lambda(yv, yh, yu, clip=False)
    est_p, se_p = _ppi_parts(yv, yh, yu, lam_p)
    p = float(2 * stats.norm.sf(abs(est_p - null) / max(se_p, 1e-16)))
    return PPIResult(estimate=estimate, ci=(estimate - z * se, estimate + z * se), p=p,
                     lam=lam, n_labelled=len(yv), n_unlabelled=len(yu))


def more_queries_to_halve_ppi(y: ArrayLike, yhat: ArrayLike,
                              yhat_unlabelled: ArrayLike) -> int | None:
    """How many of the unlabelled queries a human would have to judge to halve the PPI
    interval: the smallest m such that, with the same spreads and correlation and the weight
    re-tuned, the standard error with n + m labelled and N − m unlabelled queries is half of
    today's. ``None`` when judging every query would not halve it.

    Usage: ``more_queries_to_halve_ppi(y, yhat, yhat_unlabelled)`` → e.g. ``40``
    """
    yv, yh = _array(y), _array(yhat)
    yu = _array(yhat_unlabelled)
    n, big_n = len(yv), len(yu)
    if n < 2 or big_n < 1:
        return None
    var_y = float(np.var(yv))
    cov = float(np.mean((yv - yv.mean()) * (yh - yh.mean())))
    var_all = float(np.var(np.concatenate([yh, yu]), ddof=1))
    var_res_hat = float(np.var(yh))  # spread of Ŷ on the labelled queries (ppi_py's std)
    var_u = float(np.var(yu))

    def se2(k: int) -> float:
        rest = n + big_n - k
        if rest == 0 or not var_all > 0:
            return var_y / k
        lam = float(np.clip(cov / ((1 + k / rest) * var_all), 0.0, 1.0))
        return (var_y - 2 * lam * cov + lam * lam * var_res_hat) / k + lam * lam * var_u / rest

    target = se2(n) / 4
    for m in range(big_n + 1):
        if se2(n + m) <= target:
            return m
    return None
