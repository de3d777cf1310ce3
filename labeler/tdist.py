"""Student's t quantile and the t-interval of a mean without scipy (``labeler score``'s
start-up does not pay for importing it); equal to ``scipy.stats.t.ppf`` to about 1e-12. The
one :func:`mean_ci` of the package: the scorer's ``ci`` and :mod:`labeler.statistics` use it.

Integer degrees of freedom below 1,000: Newton's method on the closed-form CDF of
Abramowitz & Stegun 26.7.3-4 (a finite sum of positive terms); from 1,000 on, the
Cornish-Fisher expansion of A&S 26.7.5 to the fourth order (its error is below 1e-14 there).

Usage::

    from labeler.tdist import mean_ci, t_quantile
    t_quantile(0.975, 9)          # 2.2621571627...
    mean_ci([0.61, 0.55, 0.72, 0.40])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from labeler.errors import InputError

__all__ = ["mean_ci", "t_cdf", "t_quantile"]

_EXPANSION_FROM = 1_000


def t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for Student's t with ``df`` (a positive integer) degrees of freedom."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 0:   # A = sin θ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + ...), df/2 terms
        j = np.arange(1, df // 2, dtype=np.float64)
        terms = np.cumprod((2 * j - 1) / (2 * j) * c2)
        a = s * (1.0 + float(np.sum(terms)))
    elif df == 1:
        a = 2 * theta / math.pi
    else:             # A = 2/π (θ + sin θ cos θ (1 + 2/3 cos²θ + ...)), (df-1)/2 terms
        j = np.arange(1, (df - 1) // 2, dtype=np.float64)
        terms = np.cumprod((2 * j) / (2 * j + 1) * c2)
        a = 2 / math.pi * (theta + s * math.cos(theta) * (1.0 + float(np.sum(terms))))
    return 0.5 + 0.5 * a   # A is P(|T| ≤ t), odd in t


def _log_pdf_norm(df: int) -> float:
    return (math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
            - 0.5 * math.log(df * math.pi))


def _normal_quantile(p: float) -> float:
    from statistics import NormalDist   # imported when an interval is asked for

    return NormalDist().inv_cdf(p)


def _expansion(p: float, df: int) -> float:
    x = _normal_quantile(p)
    x2 = x * x
    g1 = (x2 + 1) * x / 4
    g2 = ((5 * x2 + 16) * x2 + 3) * x / 96
    g3 = (((3 * x2 + 19) * x2 + 17) * x2 - 15) * x / 384
    g4 = ((((79 * x2 + 776) * x2 + 1482) * x2 - 1920) * x2 - 945) * x / 92160
    return x + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` (a positive integer) degrees of freedom
    (remembered: a report asks for the same few quantiles thousands of times).

    Usage: ``t_quantile(0.975, 29)`` → 2.0452296421...
    """
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    df = int(df)
    if df < 1:
        raise ValueError(f"degrees of freedom must be a positive integer, got {df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if p == 0.5:
        return 0.0
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    if df >= _EXPANSION_FROM:
        return _expansion(p, df)
    t = _expansion(p, df) if df > 4 else _normal_quantile(p) * 1.5
    log_norm = _log_pdf_norm(df)
    for _ in range(60):   # Newton: converges in a handful of steps from the expansion
        pdf = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        step = (t_cdf(t, df) - p) / pdf
        t -= step
        if abs(step) <= 1e-15 * max(1.0, abs(t)):
            break
    return t


def mean_ci(values: Sequence[float] | np.ndarray, level: float = 0.95,
            bounds: tuple[float, float] | None = None) -> tuple[float, float] | None:
    """The Student-t interval of the mean of ``values`` at ``level`` (default 95%), as
    ``scipy.stats.t.interval(level, n - 1, loc=mean, scale=sem)``, clipped to ``bounds``
    (``(0, 1)`` for measures whose mean cannot leave them); None below two values or when
    they do not vary (no spread to measure). NaN or infinity is an
    :class:`~labeler.errors.InputError`.

    Usage: ``mean_ci([0.61, 0.55, 0.72, 0.40])`` → ``(0.3577..., 0.7822...)``
    """
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.isfinite(a).all():
        raise InputError("values must be finite numbers (got NaN or infinity)")
    n = len(a)
    if n < 2 or np.ptp(a) == 0:
        return None
    mean = math.fsum(a.tolist()) / n   # exactly rounded sums: the same in any query order
    sem = math.sqrt(math.fsum(((a - mean) ** 2).tolist()) / (n - 1)) / math.sqrt(n)
    if not sem > 0:
        return None
    q = t_quantile((1 + level) / 2, n - 1)
    lo, hi = mean - q * sem, mean + q * sem
    if bounds is not None:
        lo, hi = min(max(lo, bounds[0]), bounds[1]), max(min(hi, bounds[1]), bounds[0])
    return lo, hi
