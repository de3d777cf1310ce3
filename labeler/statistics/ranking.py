"""How far two orders of runs agree at the top (τ, τ_AP, top-k overlap, with query-bootstrap
intervals), which runs may be the best one, and how stable the leader is.

Pure functions on plain data (orders as sequences of run tags, per-query scores as a
queries × runs matrix), used by the comparison's ``ranking`` block.

Usage::

    from labeler.statistics.ranking import best_set, tau_ap, top_k_overlap, winner_stability
    tau_ap(["b", "a", "c"], ["a", "b", "c"])          # LLM order against the human order
    top_k_overlap(["b", "a", "c"], ["a", "b", "c"], 1)  # 0.0
    winner_stability(scores, winner=0, n_resamples=1000, seed=0)
    best_set(["a", "b"], [("a", "b", 0.02, 0.2)], {"a": 0.5, "b": 0.4})  # ["a"]
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from labeler.statistics.bootstrap import query_resample_counts

__all__ = ["TOP_KS", "best_set", "kendall_tau", "order_of", "rank_intervals", "ranking_block",
           "ranking_summary", "tau_ap", "top_k_overlap", "winner_stability"]

TOP_KS = (1, 3, 5)
"""The cut-offs of ``top_k_overlap`` in the ranking block."""
MAX_RUNS_FOR_CI = 100
"""Above this many runs the rank statistics get no bootstrap interval (too slow to be worth
it: τ_AP is quadratic in the runs)."""


def order_of(means: Mapping[str, float | None]) -> list[str]:
    """Tags best first by their mean (ties and missing values: by tag, missing last).

    Usage: ``order_of({"a": 0.3, "b": 0.5})  # ["b", "a"]``
    """
    scored = [(t, float(v)) for t, v in means.items() if v is not None and np.isfinite(v)]
    missing = sorted(t for t in means if t not in dict(scored))
    return [t for t, _ in sorted(scored, key=lambda tv: (-tv[1], tv[0]))] + missing


def tau_ap(order: Sequence[Hashable], truth: Sequence[Hashable]) -> float | None:
    """Yilmaz, Aslam & Robertson's (SIGIR 2008) AP rank correlation of ``order`` against
    ``truth``: ``2/(N-1) · Σ_{i=2..N} C(i)/(i-1) − 1``, where ``C(i)`` counts the items above
    position ``i`` of ``order`` that ``truth`` also ranks above that item. It weighs errors
    at the top more than Kendall's τ; it is asymmetric (``truth`` is the reference). Both
    orders must hold the same items (no ties: break them before). ``None`` below two items.

    Usage: ``tau_ap(["b", "a", "c"], ["a", "b", "c"])  # 0.0: the top two swapped``
    """
    if sorted(map(str, order)) != sorted(map(str, truth)) or len(set(order)) != len(order):
        raise ValueError("tau_ap compares two orders of the same distinct items")
    n = len(order)
    if n < 2:
        return None
    place = {item: i for i, item in enumerate(truth)}
    pos = np.array([place[item] for item in order])
    total = 0.0
    for i in range(1, n):  # position i (0-based) = rank i + 1
        total += float(np.sum(pos[:i] < pos[i])) / i
    return 2.0 * total / (n - 1) - 1.0


def top_k_overlap(order: Sequence[Hashable], truth: Sequence[Hashable], k: int
                  ) -> float | None:
    """Share of ``truth``'s first ``k`` items that are among ``order``'s first ``k``;
    ``None`` when there are fewer than ``k`` items (the overlap would be trivially 1).

    Usage: ``top_k_overlap(["b", "a", "c"], ["a", "b", "c"], 1)  # 0.0``
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if len(truth) < k or len(order) < k:
        return None
    return len(set(order[:k]) & set(truth[:k])) / k


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b of two score vectors (scipy); ``None`` below two or when undefined."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tau = float(sps.kendalltau(a[ok], b[ok]).statistic)
    return tau if np.isfinite(tau) else None


def _resampled_means(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per replicate and column, the mean of the drawn queries' finite values."""
    ok = np.isfinite(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ np.where(ok, values, 0.0)) / (counts @ ok.astype(float))


def best_set(systems: Sequence[str], pairs: Sequence[tuple[str, str, Any, Any]],
             key: Mapping[str, Any]) -> list[str]:
    """The runs no other run is shown to beat: ``pairs`` are ``(a, b, lo, hi)``, a
    simultaneous interval of mean(a) − mean(b) (NaN or None: none); ``a`` beats ``b`` where
    ``lo > 0``, ``b`` beats ``a`` where ``hi < 0``. When every interval holds its truth (at
    least 95% of the time for Bonferroni intervals at 95%), the truly best run is never beaten,
    so the set holds it. Best first by ``key`` (missing last, then by tag).

    Usage: ``best_set(["a", "b"], [("a", "b", 0.02, 0.2)], {"a": 0.5, "b": 0.4})  # ["a"]``
    """
    beaten: set[str] = set()
    for a, b, lo, hi in pairs:
        if _finite(lo) and float(lo) > 0:
            beaten.add(str(b))
        if _finite(hi) and float(hi) < 0:
            beaten.add(str(a))
    keep = {str(s): _value(key.get(str(s))) for s in systems if str(s) not in beaten}
    return order_of(keep)


def rank_intervals(per_query_human: np.ndarray, per_query_llm: np.ndarray, *,
                   n_resamples: int, seed: int, level: float = 0.95) -> dict[str, Any] | None:
    """Query-bootstrap percentile intervals of ``kendall_tau``, ``tau_ap`` and each
    ``top_k_overlap`` of the LLM order against the human order: each replicate draws the
    labelled queries (rows with a value of every run under both label sets) with
    replacement and orders the runs under both label sets on those same drawn queries
    (ties by column). ``None`` without two runs, two labelled queries or resamples, or
    above :data:`MAX_RUNS_FOR_CI` runs. Vectorised over the replicates; the formulas are
    :func:`kendall_tau` (τ-b), :func:`tau_ap` and :func:`top_k_overlap` (checked in the tests).

    Usage: ``rank_intervals(H, L, n_resamples=1000, seed=0)["tau_ap"]``
    """
    from labeler.statistics.bootstrap import percentile_interval

    h = np.asarray(per_query_human, dtype=float)
    m = np.asarray(per_query_llm, dtype=float)
    rows = np.isfinite(h).all(axis=1) & np.isfinite(m).all(axis=1)
    h, m = h[rows], m[rows]
    n, runs = h.shape
    if n_resamples < 1 or n < 2 or runs < 2 or runs > MAX_RUNS_FOR_CI:
        return None
    counts = query_resample_counts(n, n_resamples, seed).astype(float)
    mh, ml = counts @ h / n, counts @ m / n
    values: dict[str, np.ndarray] = {"kendall_tau": np.empty(n_resamples),
                                     "tau_ap": np.empty(n_resamples)}
    oh = np.argsort(-mh, axis=1, kind="stable")              # human order, best first
    ol = np.argsort(-ml, axis=1, kind="stable")
    rank_h = np.argsort(oh, axis=1)                          # each run's place, human order
    rank_l = np.argsort(ol, axis=1)
    above = np.tril(np.ones((runs, runs), dtype=bool), k=-1)  # j < i
    step = max(1, 2_000_000 // (runs * runs))
    for s in range(0, n_resamples, step):
        pos = np.take_along_axis(rank_h[s:s + step], ol[s:s + step], axis=1)
        c = ((pos[:, None, :] < pos[:, :, None]) & above).sum(axis=2)  # C(i) for each i
        values["tau_ap"][s:s + step] = (2.0 / (runs - 1)
                                        * (c[:, 1:] / np.arange(1, runs)).sum(axis=1) - 1.0)
        dh = np.sign(mh[s:s + step, :, None] - mh[s:s + step, None, :])
        dl = np.sign(ml[s:s + step, :, None] - ml[s:s + step, None, :])
        with np.errstate(invalid="ignore", divide="ignore"):
            values["kendall_tau"][s:s + step] = ((dh * dl).sum(axis=(1, 2)) / np.sqrt(
                (dh * dh).sum(axis=(1, 2)) * (dl * dl).sum(axis=(1, 2))))
    for k in TOP_KS:
        if k <= runs:
            values[str(k)] = ((rank_h < k) & (rank_l < k)).sum(axis=1) / k
    ci = {name: percentile_interval(v, level) for name, v in values.items()}
    return {"kendall_tau": ci["kendall_tau"], "tau_ap": ci["tau_ap"],
            "top_k_overlap": {str(k): ci.get(str(k)) for k in TOP_KS}, "n_queries": n}


def winner_stability(scores: np.ndarray, winner: int, *, n_resamples: int, seed: int,
                     correction: np.ndarray | None = None) -> float | None:
    """Share of query-bootstrap replicates in which column ``winner`` keeps the highest mean:
    how stable the lead is under resampling, not the chance that it is the best run (for
    that, see :func:`best_set`).

    ``scores``: queries × runs (NaN: not scored). With ``correction`` (queries × runs, NaN
    where the query has no human label), each replicate's estimate is the prediction-powered
    one: the mean of ``scores`` plus the mean of ``correction`` over the drawn queries. A
    replicate where some run has no value counts against the winner. ``None`` without
    resamples, runs or queries.

    Usage: ``winner_stability(ndcg_matrix, winner=2, n_resamples=1000, seed=0)``
    """
    values = np.asarray(scores, dtype=float)
    if n_resamples < 1 or values.ndim != 2 or values.shape[0] == 0 or values.shape[1] == 0:
        return None
    counts = query_resample_counts(values.shape[0], n_resamples, seed)
    means = _resampled_means(values, counts)
    if correction is not None:
        means = means + _resampled_means(np.asarray(correction, dtype=float), counts)
    if values.shape[1] == 1:
        return float(np.mean(np.isfinite(means[:, 0])))
    others = np.delete(means, winner, axis=1)
    with np.errstate(invalid="ignore"):
        stays = (np.all(np.isfinite(means), axis=1)
                 & np.all(others < means[:, [winner]], axis=1))
    return float(np.mean(stays))


def ranking_summary(human: Mapping[str, float | None], llm: Mapping[str, float | None],
                    per_query_human: np.ndarray, per_query_llm: np.ndarray,
                    systems: Sequence[str], *, ppi: Mapping[str, float | None] | None = None,
                    n_resamples: int = 1000, seed: int = 0,
                    best: Sequence[str] | None = None) -> dict[str, Any]:
    """The comparison's ``ranking`` block from the runs' means and per-query scores.

    ``per_query_*``: queries × ``systems`` matrices (NaN: not scored). The LLM order is
    measured against the human order (τ, τ_AP, top-k overlap), each with a query-bootstrap
    interval in ``ci`` (:func:`rank_intervals`, on the labelled queries); ``best_set`` is
    ``best`` (:func:`best_set` of the simultaneous intervals); ``winner.stability`` is the
    share of query-bootstrap replicates in which the PPI winner (with ``ppi`` estimates;
    else the human winner) keeps the highest mean (PPI: LLM mean + mean human − LLM gap).

    Usage: ``ranking_summary(h_means, l_means, H, L, tags, n_resamples=1000, seed=0)``
    """
    both = [s for s in systems if _finite(human.get(s)) and _finite(llm.get(s))]
    order_h = order_of({s: human[s] for s in both})
    order_l = order_of({s: llm[s] for s in both})
    ppi_ok = {s: v for s, v in (ppi or {}).items() if _finite(v)}
    ppi_winner = order_of(ppi_ok)[0] if ppi_ok else None
    target = ppi_winner or (order_h[0] if order_h else None)
    stability = None
    runs = [s for s in systems if s in set(both) | set(ppi_ok)]
    if target is not None and n_resamples > 0:
        cols = [list(systems).index(s) for s in runs]
        h = np.asarray(per_query_human, dtype=float)[:, cols]
        m = np.asarray(per_query_llm, dtype=float)[:, cols]
        stability = winner_stability(
            m if ppi_winner is not None else h, runs.index(target), n_resamples=n_resamples,
            seed=seed, correction=h - m if ppi_winner is not None else None)
    cols_both = [list(systems).index(s) for s in both]
    ci = rank_intervals(np.asarray(per_query_human, dtype=float)[:, cols_both],
                        np.asarray(per_query_llm, dtype=float)[:, cols_both],
                        n_resamples=n_resamples, seed=seed)
    return {
        "kendall_tau": kendall_tau([human[s] for s in both], [llm[s] for s in both]),  # type: ignore[misc]
        "tau_ap": tau_ap(order_l, order_h) if len(both) >= 2 else None,
        "top_k_overlap": {str(k): top_k_overlap(order_l, order_h, k) for k in TOP_KS},
        "winner": {"human": order_h[0] if order_h else None,
                   "llm": order_l[0] if order_l else None,
                   "ppi": ppi_winner, "stability": stability,
                   "of": "ppi" if ppi_winner is not None else "human"},
        "best_set": None if best is None else list(best),
        "ci": None if ci is None else {k: v for k, v in ci.items() if k != "n_queries"},
        "ci_queries": None if ci is None else ci["n_queries"],
        "n_runs": len(both),
        "bootstrap": n_resamples, "bootstrap_unit": "query", "seed": seed,
    }


def _finite(value: Any) -> bool:
    return value is not None and bool(np.isfinite(value))


def ranking_block(runs: pd.DataFrame, per_query: pd.DataFrame, *,
                  ppi: Mapping[str, float | None] | None = None, n_resamples: int = 1000,
                  seed: int = 0, best: Sequence[str] | None = None) -> dict[str, Any]:
    """:func:`ranking_summary` of a comparison's tables: ``runs`` (``system, human, llm``, or
    ``shared_human, shared_llm`` when present: the means over the queries every run scores
    under both label sets, which order the runs; the replicates then draw from those queries)
    and ``per_query`` (``system, query_id, human, llm``).

    Usage: ``ranking_block(c.runs, c.per_query, n_resamples=1000, seed=0)``
    """
    h_col, l_col = (("shared_human", "shared_llm") if "shared_human" in runs.columns
                    else ("human", "llm"))
    systems = [str(s) for s in runs["system"]]
    human = dict(zip(systems, (_value(v) for v in runs[h_col])))
    llm = dict(zip(systems, (_value(v) for v in runs[l_col])))
    pq = per_query.assign(system=per_query["system"].astype(str))
    matrices = [pq.pivot(index="query_id", columns="system", values=col)
                .reindex(columns=systems).to_numpy(dtype=float)
                if len(pq) else np.empty((0, len(systems)))
                for col in ("human", "llm")]
    if h_col == "shared_human" and not any(_finite(v) for v in (ppi or {}).values()):
        # The runs are ordered on the queries every run scores under both label sets: so are
        # the replicates (with PPI every query the LLM labels cover counts).
        shared = np.isfinite(matrices[0]).all(axis=1) & np.isfinite(matrices[1]).all(axis=1)
        matrices = [m[shared] for m in matrices]
    return ranking_summary(human, llm, matrices[0], matrices[1], systems, ppi=ppi,
                           n_resamples=n_resamples, seed=seed, best=best)


def _value(v: Any) -> float | None:
    return float(v) if v is not None and pd.notna(v) else None
