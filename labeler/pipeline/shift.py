"""Would the leaderboard change? Tonight's runs scored under the accepted run's LLM labels and
under tonight's, side by side: both orders, τ_AP with a query-bootstrap interval, and the
pairs of runs whose verdict changes.

Usage::

    from labeler.pipeline.shift import leaderboard_shift
    block = leaderboard_shift(accepted_labels, labels, runs, k=10)
    block["tau_ap"], block["tau_ap_ci"], block["order_before"], block["order_now"]
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np
import pandas as pd

from labeler.schema import STATUS, STATUS_OK
from labeler.statistics.options import StatsOptions

__all__ = ["CHANGES", "leaderboard_shift", "tau_ap_interval"]

CHANGES = {"reversed": "reversed", "human-only": "lost", "llm-only": "new"}
"""A pair's verdict change, from the comparison's verdicts (``human`` = the accepted labels,
``llm`` = tonight's): significant both times with opposite signs, significant only under the
accepted labels (lost), only under tonight's (new)."""


def _qrels(labels: pd.DataFrame) -> pd.DataFrame:
    ok = labels.loc[labels[STATUS].astype(str) == STATUS_OK] if STATUS in labels else labels
    return ok.loc[ok["grade"].notna(), ["query_id", "chunk_id", "grade"]]


def _per_query(qrels: pd.DataFrame, runs: pd.DataFrame, k: int, gain: str,
               include_empty: bool) -> pd.DataFrame:
    """``system, query_id, value``: NDCG@k of each run per query under ``qrels``."""
    from labeler.scoring.results import score

    res = score(qrels, runs, k=[k], gain=gain, include_empty=include_empty)
    rows = [(str(system), str(q), float(v))
            for system, measures in res.to_dict()["runs"].items()
            for q, v in (measures[f"ndcg@{k}"].get("per_query") or {}).items()
            if v is not None]
    return pd.DataFrame(rows, columns=["system", "query_id", "value"])


def _orders(means: np.ndarray, systems: list[str]) -> list[int]:
    """Column indices best first (ties by tag), NaN last."""
    key = [(-m if np.isfinite(m) else np.inf, s) for m, s in zip(means, systems)]
    return sorted(range(len(systems)), key=lambda i: key[i])


def _tau_ap_idx(order: list[int], truth: list[int]) -> float:
    place = np.empty(len(truth), dtype=int)
    place[truth] = np.arange(len(truth))
    pos = place[order]
    above = np.tril(pos[None, :] < pos[:, None], k=-1).sum(axis=1)[1:]
    return float(2.0 * np.sum(above / np.arange(1, len(order))) / (len(order) - 1) - 1.0)


def tau_ap_interval(before: np.ndarray, now: np.ndarray, systems: list[str], *,
                    n_resamples: int, seed: int, level: float = 0.95
                    ) -> list[float] | None:
    """Percentile interval of τ_AP (tonight's order against the accepted one) over
    ``n_resamples`` resamples of whole queries: ``before``/``now`` are queries × runs
    (NaN: not scored). None with fewer than two runs or no resample.

    Usage: ``tau_ap_interval(B, N, ["a", "b", "c"], n_resamples=1000, seed=0)``
    """
    from labeler.statistics.bootstrap import percentile_interval, query_resample_counts

    if len(systems) < 2 or n_resamples < 1 or before.shape[0] == 0:
        return None
    counts = query_resample_counts(before.shape[0], n_resamples, seed)
    taus = np.empty(n_resamples)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = [(counts @ np.nan_to_num(m)) / (counts @ np.isfinite(m).astype(float))
                 for m in (before, now)]
    for b in range(n_resamples):
        taus[b] = _tau_ap_idx(_orders(means[1][b], systems), _orders(means[0][b], systems))
    return percentile_interval(taus, level)


def leaderboard_shift(before: pd.DataFrame, now: pd.DataFrame, runs: pd.DataFrame, *,
                      k: int = 10, gain: Literal["linear", "exponential"] = "linear",
                      include_empty: bool = False, options: StatsOptions | None = None,
                      previous: str | None = None) -> dict[str, Any] | None:
    """Tonight's ``runs`` under the accepted labels (``before``) and tonight's (``now``),
    both label records or qrels: ``runs`` (each run's mean and place under both), both
    orders, ``tau_ap`` (tonight's order against the accepted one) with ``tau_ap_ci`` (query
    bootstrap, ``options.bootstrap`` resamples), ``changed_pairs`` (pairs of runs whose
    verdict changes, tested as ``options`` says on the queries both label sets score) and
    ``order_changed``. None without a run scored under both.

    Usage: ``leaderboard_shift(prev_labels, labels, runs, k=10, previous="20261121T023000Z")``
    """
    from labeler.statistics.ranking import tau_ap
    from labeler.statistics.verdicts import significance

    options = dataclasses.replace(options or StatsOptions(), ppi=False)
    q_before, q_now = _qrels(before), _qrels(now)
    if q_before.empty or q_now.empty:
        return None
    b = _per_query(q_before, runs, k, gain, include_empty)
    n = _per_query(q_now, runs, k, gain, include_empty)
    pq = b.merge(n, on=["system", "query_id"], how="outer", suffixes=("_before", "_now"))
    systems = sorted(set(b["system"]) & set(n["system"]))
    if not systems:
        return None
    pq = pq.loc[pq["system"].isin(systems)]
    wide = {c: pq.pivot(index="query_id", columns="system", values=f"value_{c}")
            .reindex(columns=systems).to_numpy(dtype=float) for c in ("before", "now")}
    with np.errstate(invalid="ignore"):
        means = {c: np.nanmean(np.where(np.isfinite(m), m, np.nan), axis=0)
                 for c, m in wide.items()}
    order_b = [systems[i] for i in _orders(means["before"], systems)]
    order_n = [systems[i] for i in _orders(means["now"], systems)]
    sig = significance(pq.rename(columns={"value_before": "human", "value_now": "llm"})
                       [["system", "query_id", "human", "llm"]], systems, options=options)
    changed = []
    for p in sig.pairs_to_dicts():
        if p["verdict"] in CHANGES:
            changed.append({"a": p["a"], "b": p["b"], "n": p["n"],
                            "change": CHANGES[p["verdict"]],
                            "before": p["human"], "now": p["llm"]})
    place_b = {s: i + 1 for i, s in enumerate(order_b)}
    place_n = {s: i + 1 for i, s in enumerate(order_n)}
    return {
        "previous": previous, "k": k, "n_queries": int(pq["query_id"].nunique()),
        "runs": [{"system": s, "before": _num(means["before"][systems.index(s)]),
                  "now": _num(means["now"][systems.index(s)]), "place_before": place_b[s],
                  "place_now": place_n[s]} for s in order_b],
        "order_before": order_b, "order_now": order_n, "order_changed": order_b != order_n,
        "tau_ap": tau_ap(order_n, order_b) if len(systems) >= 2 else None,
        "tau_ap_ci": tau_ap_interval(wide["before"], wide["now"], systems,
                                     n_resamples=options.bootstrap, seed=options.seed),
        "bootstrap": options.bootstrap, "seed": options.seed,
        "test": options.test, "alpha": options.alpha, "n_pairs": len(sig.pairs),
        "changed_pairs": changed,
    }


def _num(x: Any) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None
