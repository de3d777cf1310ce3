"""The terminal view of a labelling plan (``labeler plan``), from its JSON object.

Usage::

    from labeler.report.plan_text import render_plan
    print(render_plan(plan.to_dict()))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labeler.report.escape import plain


def _n(n: Any, now: int) -> str:
    if n is None:
        return "no number"
    more = max(0, int(n) - now)
    return f"{int(n)} queries ({more} more)" if more else f"{int(n)} queries (enough now)"


def _w(x: Any) -> str:
    return "n/a" if x is None else f"±{float(x):.3f}"


def _rows(items: list[tuple[str, Mapping[str, Any]]]) -> list[str]:
    header = ["", "queries", "labelled", "± now (PPI)", "± now (human)", "PPI needs",
              "human needs"]
    body = [[plain(name), str(t.get("n_total")), str(t.get("now")),
             _w(t["half_width_now"]["ppi"]), _w(t["half_width_now"]["human_only"]),
             "n/a" if t["ppi"] is None else str(t["ppi"]),
             "n/a" if t["human_only"] is None else str(t["human_only"])]
            for name, t in items]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in [header, *body]]


def render_plan(d: Mapping[str, Any]) -> str:
    """The plan in words and a table per run (and per pair), ending with its assumption."""
    now, w, k = int(d["now"]), float(d["half_width"]), d.get("k", 10)
    what = "run's and pair's" if d.get("per_pair") else "run's"
    lines = [f"{now} queries labelled so far. For every {what} 95% interval of mean "
             f"NDCG@{k} to be within ±{w:g}, label in all:"]
    need = d["needed"]
    hours = d.get("hours") or {}
    for kind, label in (("ppi", "with the LLM labels (PPI)"), ("human_only",
                                                              "with human labels only")):
        h = hours.get(kind)
        extra = f", about {h:.1f} hours" if h is not None and need[kind] is not None else ""
        lines.append(f"  {label}: {_n(need[kind], now)}{extra}")
    if d.get("saving") is not None:
        h = hours.get("saving")
        lines.append(f"  the LLM labels save {d['saving']} queries"
                     + (f" (about {h:.1f} hours)" if h is not None else ""))
    lines += ["", *_rows(list(d["per_run"].items()))]
    if d.get("per_pair"):
        lines += ["", *_rows([(f"{p['a']} − {p['b']}", p) for p in d["per_pair"]])]
    for name, why in (d.get("reasons") or {}).items():
        lines.append(f"{plain(name)}: no number ({plain(why)})")
    more = (need.get("ppi") or 0) - now
    if more > 0:
        lines += ["", f"Draw them with: labeler sample --more {more} --from <your sheet>"]
    lines += ["", f"Assumes: {d['assumption']}"]
    return "\n".join(lines) + "\n"
