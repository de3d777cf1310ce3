"""The planning a comparison with PPI shows: its one planning line (:func:`comparison_plan`)
and, per pair PPI leaves unresolved, how many labelled queries would likely resolve it
(:func:`resolve_advice`) — both :mod:`labeler.reconciliation.plan`'s computation, on the
comparison's per-query NDCG, so they say what ``labeler plan --per-pair`` says.

Usage::

    from labeler.reconciliation.plan_advice import comparison_plan, resolve_advice
    p = comparison_plan(c.per_query, population, labelled)      # p.line()
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pandas as pd

from labeler.reconciliation.plan import Plan, plan_target, plan_tables
from labeler.statistics import planning


def _unresolved(pair: dict[str, Any]) -> bool:
    ppi = pair.get("ppi")
    if isinstance(ppi, dict):
        if "verdict" in ppi:
            return bool(ppi["verdict"] == "unresolved")
        ci = ppi.get("ci")
        return isinstance(ci, (list, tuple)) and len(ci) == 2 and ci[0] <= 0 <= ci[1]
    return pair.get("verdict") in ("tie", "unresolved")


def resolve_advice(per_query: pd.DataFrame, pairs: list[dict[str, Any]], *,
                   population: dict[str, set[str]], labelled: set[str]
                   ) -> tuple[dict[str, Any], ...]:
    """For each pair of ``pairs`` (``labeler compare --json``'s list) that PPI leaves
    unresolved: how many labelled queries of the pair's own would likely resolve it — the
    pair planned as ``labeler plan --per-pair`` plans it
    (:func:`~labeler.reconciliation.plan.plan_target`), for a ± below the difference seen —
    and the ± the labelled queries give now. ``population``: each run's queries;
    ``labelled``: the whole queries with human labels.

    Usage: ``resolve_advice(c.per_query, c.significance.pairs_to_dicts(), population=pop,
    labelled=lab)``
    """
    y, yhat = (per_query.pivot_table(index="query_id", columns="system", values=s,
                                     aggfunc="first", dropna=False) for s in ("human", "llm"))
    out = []
    for p in pairs:
        if not _unresolved(p):
            continue
        a, b = str(p["a"]), str(p["b"])
        if a not in population or b not in population:
            continue
        seen = (p.get("ppi") or {}).get("delta")
        delta = float(seen) if seen is not None else math.nan
        if math.isfinite(delta) and delta != 0:
            t = plan_target(y, yhat, population, labelled, a, b, abs(delta), strict=True)
            need = t.ppi
            reason = need.reason
        else:
            t = plan_target(y, yhat, population, labelled, a, b, 1.0)
            need = replace(t.ppi, n=None)
            reason = "no difference seen, so no number of queries can show one"
        if need.now < 2:
            continue
        out.append({"a": a, "b": b, "basis": "ppi", "delta": delta if seen is not None
                    else None, "now": need.now, "half_width_now": need.half_width_now,
                    "needed": need.n, "more": need.more, "n_total": need.n_total,
                    "reason": reason})
    return tuple(out)


def nice_width(x: float) -> float:
    """``x`` rounded down to a round ± (a multiple of 0.005, of 0.001 below 0.01).

    Usage: ``nice_width(0.063)`` → 0.06
    """
    step = 0.005 if x >= 0.01 else 0.001
    return max(step, math.floor(x / step + 1e-9) * step)


def comparison_plan(per_query: pd.DataFrame, population: dict[str, set[str]],
                    labelled: set[str], *, k: int = 10,
                    half_width: float | None = None) -> Plan | None:
    """The plan ``labeler compare --ppi`` states in its one planning line: every run's PPI
    interval within ±``half_width`` (default: half the widest now, rounded down by
    :func:`nice_width`), planned as ``labeler plan`` plans (:func:`plan_tables`) on the
    comparison's per-query NDCG. ``None`` with fewer than 5 labelled queries.

    Usage: ``comparison_plan(c.per_query, population, labelled)``
    """
    y, yhat = (per_query.pivot_table(index="query_id", columns="system", values=s,
                                     aggfunc="first", dropna=False) for s in ("human", "llm"))
    every = set().union(*population.values()) if population else set()
    if len(labelled & every) < planning.MIN_LABELLED:
        return None
    if half_width is None:
        widths = [t.ppi.half_width_now for t in
                  (plan_target(y, yhat, population, labelled, a, None, 1.0) for a in population)
                  if t.ppi.half_width_now is not None and t.ppi.half_width_now > 0]
        if not widths:
            return None
        half_width = nice_width(max(widths) / 2)
    return plan_tables(y, yhat, population, labelled, half_width=half_width, k=k)
