"""Bootstrap of agreement statistics, vectorised through 4×4 tables of grade counts.

Every statistic here (exact agreement, Cohen's kappa unweighted / linear / quadratic,
Krippendorff's ordinal alpha of two raters) is a function of the table of (human, LLM)
grade counts, so a replicate is just a table: summed per-query tables for the cluster
(query) bootstrap, the counts of the drawn pairs for the pair bootstrap. The formulas are
scikit-learn's ``cohen_kappa_score`` and ``krippendorff.alpha`` (checked in the tests).

Usage::

    from labeler.statistics.bootstrap import query_tables, query_resample_counts, statistics
    per_query = query_tables(human, llm, query_ids)            # queries × 4 × 4
    w = query_resample_counts(len(per_query), 1000, seed=0)    # 1000 × queries
    stats = statistics(np.einsum("bq,qij->bij", w, per_query))  # name -> 1000 values
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["GRADES", "RANGES", "alpha_ordinal", "exact", "kappa", "pair_resample_tables",
           "percentile_interval", "query_resample_counts", "query_tables", "statistics",
           "studentized_interval", "table_of"]

GRADES = 4
"""Grades 0–3."""


def table_of(human: np.ndarray, llm: np.ndarray) -> np.ndarray:
    """The 4×4 table of counts: rows human grade, columns LLM grade."""
    codes = np.asarray(human, dtype=np.int64) * GRADES + np.asarray(llm, dtype=np.int64)
    return np.bincount(codes, minlength=GRADES * GRADES).reshape(GRADES, GRADES)


def query_tables(human: np.ndarray, llm: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """One 4×4 table per group (``groups``: integer codes 0..G-1), shape ``G × 4 × 4``."""
    g = np.asarray(groups, dtype=np.int64)
    n_groups = int(g.max()) + 1 if len(g) else 0
    codes = (g * GRADES + np.asarray(human, dtype=np.int64)) * GRADES + np.asarray(llm)
    flat = np.bincount(codes.astype(np.int64), minlength=n_groups * GRADES * GRADES)
    return flat.reshape(n_groups, GRADES, GRADES)


def query_resample_counts(n_queries: int, n_resamples: int, seed: int) -> np.ndarray:
    """How often each query is drawn in each replicate (``n_resamples × n_queries``):
    replicate ``b`` is ``np.random.default_rng(seed).integers(0, n_queries,
    (n_resamples, n_queries))[b]``, ``n_queries`` queries drawn with replacement.

    Usage: ``w = query_resample_counts(25, 1000, seed=0); w.sum(axis=1)  # all 25``
    """
    draws = np.random.default_rng(seed).integers(0, n_queries, (n_resamples, n_queries))
    counts = np.zeros((n_resamples, n_queries), dtype=np.int64)
    np.add.at(counts, (np.arange(n_resamples)[:, None], draws), 1)
    return counts


def pair_resample_tables(human: np.ndarray, llm: np.ndarray, n_resamples: int,
                         seed: int) -> np.ndarray:
    """Tables of the pair bootstrap: replicate ``b`` draws ``n`` pairs with replacement by the
    ``b``-th call of ``rng.integers(0, n, n)`` (``rng = np.random.default_rng(seed)``)."""
    h, ll = np.asarray(human, dtype=np.int64), np.asarray(llm, dtype=np.int64)
    codes = h * GRADES + ll
    rng = np.random.default_rng(seed)
    out = np.empty((n_resamples, GRADES, GRADES), dtype=np.int64)
    for b in range(n_resamples):
        idx = rng.integers(0, len(h), len(h))
        out[b] = np.bincount(codes[idx], minlength=GRADES * GRADES).reshape(GRADES, GRADES)
    return out


def _weights(kind: str | None) -> np.ndarray:
    i, j = np.meshgrid(np.arange(GRADES), np.arange(GRADES), indexing="ij")
    if kind is None:
        return (i != j).astype(float)
    if kind == "linear":
        return np.abs(i - j).astype(float)
    if kind == "quadratic":
        return ((i - j) ** 2).astype(float)
    raise ValueError(f"unknown kappa weights {kind!r}")


def kappa(tables: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa of each table (``… × 4 × 4``) as scikit-learn computes it; NaN when
    undefined (every grade the same)."""
    t = np.asarray(tables, dtype=float)
    n = t.sum(axis=(-2, -1))
    expected = t.sum(axis=-1)[..., :, None] * t.sum(axis=-2)[..., None, :]
    w = _weights(weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (w * t).sum(axis=(-2, -1)) / ((w * expected).sum(axis=(-2, -1)) / n)
        return np.where(np.isfinite(ratio), 1.0 - ratio, np.nan)


def alpha_ordinal(tables: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal alpha of two raters (every pair graded by both) from each
    table, value domain 0–3; NaN when undefined."""
    t = np.asarray(tables, dtype=float)
    o = t + np.swapaxes(t, -1, -2)  # coincidences: every pair counted in both orders
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    cum = np.concatenate([np.zeros((*n_c.shape[:-1], 1)), np.cumsum(n_c, axis=-1)], axis=-1)
    c, k = np.meshgrid(np.arange(GRADES), np.arange(GRADES), indexing="ij")
    lo, hi = np.minimum(c, k), np.maximum(c, k)
    delta = (cum[..., hi + 1] - cum[..., lo]
             - (n_c[..., :, None] + n_c[..., None, :]) / 2) ** 2
    expected = (n_c[..., :, None] * n_c[..., None, :] * delta).sum(axis=(-2, -1))
    observed = (o * delta).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 1.0 - (n - 1) * observed / expected
    return np.where((n > 1) & (expected > 0) & np.isfinite(value), value, np.nan)


def exact(tables: np.ndarray) -> np.ndarray:
    """Share of pairs with the same grade, per table."""
    t = np.asarray(tables, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.trace(t, axis1=-2, axis2=-1) / t.sum(axis=(-2, -1))


def statistics(tables: np.ndarray) -> dict[str, np.ndarray]:
    """The statistics with bootstrap intervals, for each table: name → values."""
    return {
        "exact_agreement": exact(tables),
        "cohen_kappa": kappa(tables),
        "cohen_kappa_linear": kappa(tables, "linear"),
        "cohen_kappa_quadratic": kappa(tables, "quadratic"),
        "krippendorff_alpha_ordinal": alpha_ordinal(tables),
    }


def percentile_interval(values: np.ndarray, level: float = 0.95) -> list[float] | None:
    """The percentile interval of the finite replicate values (``None`` if there are none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return None
    tail = (1 - level) / 2 * 100
    return [float(np.percentile(v, tail)), float(np.percentile(v, 100 - tail))]


RANGES: dict[str, tuple[float, float]] = {
    "exact_agreement": (0.0, 1.0), "cohen_kappa": (-1.0, 1.0),
    "cohen_kappa_linear": (-1.0, 1.0), "cohen_kappa_quadratic": (-1.0, 1.0),
    "krippendorff_alpha_ordinal": (-1.0, 1.0)}
"""Where each statistic lies: its studentized interval is clipped there."""


def studentized_interval(estimate: float, values: np.ndarray, n_clusters: int,
                         level: float = 0.95,
                         bounds: tuple[float, float] | None = None) -> list[float] | None:
    """The studentized cluster-bootstrap interval ``estimate ± t(1 − (1 − level)/2,
    n − 1) · sd · sqrt(n/(n − 1))``: ``sd`` is the spread (ddof 1) of the finite replicate
    values, ``n`` the clusters (queries) resampled; clipped to ``bounds``. The t quantile and
    the small-sample factor make it cover with 5–10 queries, where a percentile interval
    does not. ``None`` when the estimate is undefined, below two clusters or two finite
    replicates.

    Usage: ``studentized_interval(0.42, kappa(tables), n_clusters=8, bounds=(-1, 1))``
    """
    from scipy.special import stdtrit

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not np.isfinite(estimate) or n_clusters < 2 or len(v) < 2:
        return None
    half = (float(stdtrit(n_clusters - 1, 1 - (1 - level) / 2)) * float(np.std(v, ddof=1))
            * float(np.sqrt(n_clusters / (n_clusters - 1))))
    lo, hi = float(estimate) - half, float(estimate) + half
    if bounds is not None:
        lo, hi = min(max(lo, bounds[0]), bounds[1]), max(min(hi, bounds[1]), bounds[0])
    return [lo, hi]


def names() -> Sequence[str]:
    """The names :func:`statistics` returns, in order."""
    return ("exact_agreement", "cohen_kappa", "cohen_kappa_linear", "cohen_kappa_quadratic",
            "krippendorff_alpha_ordinal")
