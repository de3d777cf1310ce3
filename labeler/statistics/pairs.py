"""Many pairs of runs at once: which pairs, their paired t-tests and Holm's correction.

Array operations over a (queries × runs) table, so a comparison of 1,000 runs tests its pairs
in seconds: each pair's test uses the queries where both runs have a value (``valid``).

- :func:`select_pairs` — every pair, each run against the best one, or neighbours in an order.
- :func:`paired_t_many` — two-sided paired t-tests of many pairs (``scipy.stats.ttest_rel``'s
  figures).
- :func:`holm` — Holm's step-down adjustment of a family of p-values.

Usage::

    from labeler.statistics.pairs import holm, paired_t_many, select_pairs
    a, b = select_pairs(n_runs=4, mode="all")
    delta, p, n = paired_t_many(values, valid, a, b)
    p_adj = holm(p)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeler.errors import ConfigError

PAIR_MODES: tuple[str, ...] = ("all", "best", "adjacent")
"""Which pairs of runs are tested (``--pair-set``)."""
ALL_PAIRS_UP_TO = 50
"""``--pair-set`` default: ``all`` up to this many runs, ``best`` above."""
_CHUNK = 2_000_000  # values per block of pairs (about 16 MB of float64)


def default_pair_mode(n_runs: int) -> str:
    """``all`` up to :data:`ALL_PAIRS_UP_TO` runs, ``best`` above."""
    return "all" if n_runs <= ALL_PAIRS_UP_TO else "best"


def select_pairs(n_runs: int, mode: str = "all", order: Sequence[int] | None = None
                 ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The pairs to test, as index arrays ``(a, b)`` with ``a < b`` (run ``a`` comes before run
    ``b`` in the input), sorted. ``all``: every unordered pair. ``best``: the first run of
    ``order`` (best first) against every other. ``adjacent``: each run against its neighbour in
    ``order``. ``order`` defaults to the input order.

    Usage: ``select_pairs(3, "all")`` → ``(array([0, 0, 1]), array([1, 2, 2]))``
    """
    if mode not in PAIR_MODES:
        raise ConfigError(f"unknown pairs mode {mode!r}; choose one of {', '.join(PAIR_MODES)}")
    empty = np.zeros(0, dtype="int64")
    if n_runs < 2:
        return empty, empty.copy()
    if mode == "all":
        a, b = np.triu_indices(n_runs, k=1)
        return a.astype("int64"), b.astype("int64")
    seq = np.asarray(range(n_runs) if order is None else order, dtype="int64")
    if mode == "best":
        x, y = np.full(n_runs - 1, seq[0]), seq[1:]
    else:
        x, y = seq[:-1], seq[1:]
    a, b = np.minimum(x, y), np.maximum(x, y)
    idx = np.lexsort((b, a))
    return a[idx], b[idx]


def paired_t_many(values: ArrayLike, valid: ArrayLike, a: ArrayLike, b: ArrayLike
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Paired t-tests of runs ``a[i]`` − ``b[i]`` (column indices of ``values``, queries in
    rows) over the queries where ``valid`` holds for both runs.

    Returns ``(delta, p, n)``: the mean difference (NaN with no query), the two-sided p-value
    of ``scipy.stats.ttest_rel`` (NaN below two queries; 1 when every difference is 0; 0 when
    they are all the same non-zero number, as scipy's) and the number of queries. Such a
    sample has no simultaneous interval (:func:`simultaneous_t`): never one of width 0.

    Usage: ``delta, p, n = paired_t_many(table, ~np.isnan(table), [0], [1])``
    """
    delta, se, n, zero = paired_moments(values, valid, a, b)
    return delta, t_test_p(delta, se, n, zero), n


def t_test_p(delta: NDArray[np.float64], se: NDArray[np.float64], n: NDArray[np.int64],
             zero: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Two-sided paired t p-values from :func:`paired_moments` (see :func:`paired_t_many`)."""
    from scipy.special import stdtr

    with np.errstate(invalid="ignore", divide="ignore"):
        pv = 2 * stdtr(n - 1, -np.abs(delta / se))
    pv = np.where(se > 0, pv, 0.0)  # a constant non-zero difference: t infinite, as scipy's
    pv = np.where(zero, 1.0, pv)
    pv = np.where(n < 2, math.nan, pv)
    return np.minimum(pv, 1.0)


def paired_moments(values: ArrayLike, valid: ArrayLike, a: ArrayLike, b: ArrayLike
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64],
                              NDArray[np.bool_]]:
    """Per pair ``a[i]`` − ``b[i]`` over the queries where both are ``valid``: the mean
    difference, its standard error sd/√n (NaN below two queries), the number of queries and
    whether every difference is 0.

    Usage: ``delta, se, n, zero = paired_moments(table, ~np.isnan(table), [0], [1])``
    """
    x = np.asarray(values, dtype="float64")
    ok = np.asarray(valid, dtype=bool)
    ia, ib = np.asarray(a, dtype="int64"), np.asarray(b, dtype="int64")
    x = np.where(ok, x, 0.0)
    m = len(ia)
    delta = np.full(m, math.nan)
    se = np.full(m, math.nan)
    n = np.zeros(m, dtype="int64")
    zero = np.ones(m, dtype=bool)
    step = max(1, _CHUNK // max(1, x.shape[0]))
    for s in range(0, m, step):
        ca, cb = ia[s:s + step], ib[s:s + step]
        w = ok[:, ca] & ok[:, cb]
        d = np.where(w, x[:, ca] - x[:, cb], 0.0)
        k = w.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = d.sum(axis=0) / k
            dev = np.where(w, d - mean, 0.0)
            var = (dev * dev).sum(axis=0) / (k - 1)
            # a spread below rounding error of the mean is no spread
            var = np.where(var > (1e-12 * np.abs(mean)) ** 2, var, 0.0)
            se[s:s + step] = np.where(k > 1, np.sqrt(var / k), math.nan)
        zero[s:s + step] = ~np.where(w, d != 0, False).any(axis=0)
        delta[s:s + step] = np.where(k > 0, mean, math.nan)
        n[s:s + step] = k
    return delta, se, n, zero


def simultaneous_t(delta: NDArray[np.float64], se: NDArray[np.float64], n: NDArray[np.int64],
                   alpha: float = 0.05, bounds: tuple[float, float] = (-1.0, 1.0)
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bonferroni simultaneous t intervals ``delta ± t(1 − alpha/(2m), n − 1)·se`` of the
    ``m`` pairs that have one (``se > 0``; NaN elsewhere), clipped to ``bounds``: all of them
    cover their truth together at least ``1 − alpha`` of the time.

    Usage: ``lo, hi = simultaneous_t(delta, se, n)``
    """
    from scipy.special import stdtrit

    ok = np.isfinite(se) & (se > 0) & (n >= 2)
    m = max(1, int(ok.sum()))
    with np.errstate(invalid="ignore"):
        q = stdtrit(np.maximum(n - 1, 1), 1 - alpha / (2 * m))
        lo = np.where(ok, np.clip(delta - q * se, *bounds), math.nan)
        hi = np.where(ok, np.clip(delta + q * se, *bounds), math.nan)
    return lo, hi


def holm(pvalues: Sequence[float | None] | NDArray[np.float64]) -> list[float | None]:
    """Holm's step-down adjustment: sort the m p-values ascending, multiply the i-th (from 0)
    by m − i, carry the running maximum, cap at 1. ``None``/NaN entries are left out of the
    family and stay ``None``.

    Usage: ``holm([0.01, 0.04, 0.03])`` → ``[0.03, 0.06, 0.06]``
    """
    adjusted = holm_array(np.array([math.nan if v is None else float(v) for v in pvalues],
                                   dtype="float64"))
    return [None if math.isnan(v) else float(v) for v in adjusted]


def holm_array(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`holm` on an array (NaN = not in the family), as an array."""
    p = np.asarray(p, dtype="float64")
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(np.isfinite(p))
    if len(idx) == 0:
        return out
    q = p[idx]
    m = len(q)
    order = np.argsort(q, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate(q[order] * (m - np.arange(m))))
    out[idx[order]] = adjusted
    return out
