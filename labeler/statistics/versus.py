"""Is the best judge really better? Paired bootstrap differences of agreement between judges.

Two judges graded the same pairs, and the humans graded them once: the difference of their
agreement with the humans (Krippendorff's ordinal alpha, Cohen's quadratic kappa) is measured on
the same resamples for both, so what the two judges share (the hard queries) cancels. Each
replicate draws whole queries with replacement (:func:`~labeler.statistics.bootstrap.
query_resample_counts`; or pairs, :func:`~labeler.statistics.bootstrap.pair_resample_tables`
with the same seed for both judges, so the same pairs), and a replicate's difference is the
statistic of one judge's resampled 4×4 table minus the other's.

The interval and the p-value are studentized on the bootstrap's standard error, as the
agreement intervals with few queries are: se = sd_boot · sqrt(n/(n−1)) (n queries, or pairs),
interval Δ ± t(0.975, n−1) · se, p = 2 · P(T_{n−1} > |Δ| / se). They agree on whether 0 is
inside, and a p-value is not bounded below by 1/resamples (a percentile p-value could not pass
Holm's threshold over 30 judges with 1,000 resamples).

Usage::

    from labeler.statistics.versus import paired_difference
    d = paired_difference(best_tables, other_tables, counts=w)   # per-query 4×4 tables
    d["krippendorff_alpha_ordinal"]                          # {"delta", "ci", "p", "se"}
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from labeler.statistics import bootstrap as boot

__all__ = ["COMPARED", "paired_difference", "studentized"]

COMPARED: dict[str, Any] = {
    "krippendorff_alpha_ordinal": boot.alpha_ordinal,
    "cohen_kappa_quadratic": lambda t: boot.kappa(t, "quadratic"),
}
"""The statistics two judges are compared on: name → function of ``… × 4 × 4`` tables."""


def studentized(delta: float, replicates: NDArray[np.float64], n: int, level: float = 0.95
                ) -> dict[str, Any]:
    """``{"delta", "ci", "p", "se"}`` of a difference from its bootstrap replicates (the finite
    ones) and the number ``n`` of resampled units; ``ci``/``p``/``se`` are None below two
    units or two finite replicates. Identical judges (no spread, Δ = 0) give ``[0, 0]`` and
    p = 1.

    Usage: ``studentized(0.03, np.array([0.02, 0.05, 0.01]), n=25)["p"]``
    """
    from scipy.special import stdtr, stdtrit

    out: dict[str, Any] = {"delta": float(delta), "ci": None, "p": None, "se": None}
    values = np.asarray(replicates, dtype="float64")
    values = values[np.isfinite(values)]
    if n < 2 or len(values) < 2 or not math.isfinite(delta):
        return out
    se = float(np.std(values, ddof=1) * math.sqrt(n / (n - 1)))
    if se == 0.0:
        if delta == 0.0:
            out.update(ci=[0.0, 0.0], p=1.0, se=0.0)
        return out
    half = float(stdtrit(n - 1, 0.5 + level / 2)) * se
    tail = float(stdtr(n - 1, -abs(delta) / se))
    out.update(ci=[delta - half, delta + half], p=min(1.0, 2.0 * tail), se=se)
    return out


def paired_difference(best: NDArray[np.int64], other: NDArray[np.int64], *,
                      counts: NDArray[np.int64] | None = None,
                      pair_tables: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None,
                      level: float = 0.95) -> dict[str, dict[str, Any]]:
    """``{statistic: {"delta", "ci", "p", "se"}}`` of ``best`` minus ``other`` for each of
    :data:`COMPARED`.

    ``best``/``other``: the judges' per-query tables (``queries × 4 × 4``, same queries, same
    human grades). Replicates come from ``counts`` (``resamples × queries``, the query
    bootstrap) or, for a pair bootstrap, from the two judges' resampled tables
    ``pair_tables`` (``resamples × 4 × 4`` each, drawn with the same seed; n = the pairs).
    Neither: no interval.

    Usage: ``paired_difference(tb, to, counts=boot.query_resample_counts(25, 1000, 0))``
    """
    full_b, full_o = best.sum(axis=0), other.sum(axis=0)
    if counts is not None:
        rb = np.einsum("bq,qij->bij", counts, best)
        ro = np.einsum("bq,qij->bij", counts, other)
        n = best.shape[0]
    elif pair_tables is not None:
        rb, ro = pair_tables
        n = int(full_b.sum())
    else:
        rb = ro = None
        n = 0
    out = {}
    for name, stat in COMPARED.items():
        delta = float(stat(full_b) - stat(full_o))
        reps = (stat(rb) - stat(ro)) if rb is not None else np.zeros(0)
        out[name] = studentized(delta, reps, n, level)
    return out
