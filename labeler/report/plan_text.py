"""The views of a labelling plan (``labeler plan``) from its JSON object: the terminal text,
the table alone, a notebook's HTML, and the one planning sentence that ``compare``, the report
and ``labeler run`` print.

Usage::

    from labeler.report.plan_text import render_plan
    print(render_plan(plan.to_dict()))
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from labeler.report.escape import plain

KINDS = ("ppi", "human_only")


def _q(n: Any) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"


def _w(x: Any) -> str:
    return "n/a" if x is None else f"±{float(x):.3f}"


def _need(t: Mapping[str, Any], kind: str) -> str:
    if t["enough_now"][kind]:
        return "enough now"
    if t[kind] is None:
        return "n/a"
    return f"{t[kind]} ({t['more'][kind]} more)"


def _items(d: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [*d["per_run"].items(), *[(f"{p['a']} − {p['b']}", p) for p in d["per_pair"]]]


HEADER = ["", "labelled", "± now (PPI)", "± now (human)", "PPI needs", "human needs"]


def table_rows(d: Mapping[str, Any]) -> list[list[str]]:
    """One row per run (then per pair): its labelled queries of its own, the ± now, and the
    labelled queries of its own each interval needs."""
    return [[name, t["labelled"], _w(t["half_width_now"]["ppi"]),
             _w(t["half_width_now"]["human_only"]), _need(t, "ppi"), _need(t, "human_only")]
            for name, t in _items(d)]


def render_table(d: Mapping[str, Any]) -> str:
    """The plan's table for a terminal (run tags cleaned of control characters)."""
    body = [[plain(c) for c in r] for r in table_rows(d)]
    widths = [max(len(r[i]) for r in [HEADER, *body]) for i in range(len(HEADER))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in [HEADER, *body]) + "\n"


def _all_enough(d: Mapping[str, Any], kind: str) -> bool:
    return all(t["enough_now"][kind] for _, t in _items(d))


def _next(d: Mapping[str, Any], m: Any) -> str:
    """``the next 3 queries of the design's order``, or ``about 3 more queries drawn at
    random`` (an expected count) without a design."""
    if d.get("order") == "design":
        return f"the next {_q(m)} of the design's order"
    return f"about {_q(m)} more drawn at random"


def _status(d: Mapping[str, Any], kind: str) -> str:
    hours = (d.get("hours") or {}).get(kind)
    extra = f", about {hours:.1f} hours" if hours is not None else ""
    more, needed = d["more"][kind], d["needed"][kind]
    if _all_enough(d, kind):
        return f"enough now ({d['now']} queries)"
    if more is None:
        return "no number yet (see below)"
    return f"{more} more quer{'y' if more == 1 else 'ies'} ({needed} in all){extra}"


def render_plan(d: Mapping[str, Any]) -> str:
    """The plan in words and a table per run (and per pair), ending with its assumption."""
    now, w, k = int(d["now"]), float(d["half_width"]), d.get("k", 10)
    what = "run's and pair's" if d.get("per_pair") else "run's"
    lines = [f"{now} queries labelled so far. For every {what} 95% interval of mean "
             f"NDCG@{k} to be within ±{w:g}, each counted in its own queries, label:"]
    for kind, label in (("ppi", "with the LLM labels (PPI)"),
                        ("human_only", "with human labels only")):
        lines.append(f"  {label}: {_status(d, kind)}")
    saving = d.get("saving")
    if saving is not None and not _all_enough(d, "ppi"):
        h = (d.get("hours") or {}).get("saving")
        lines.append(f"  the LLM labels save {_q(saving)}"
                     + (f" (about {h:.1f} hours)" if h is not None else "") if saving >= 0
                     else f"  the LLM labels save nothing here: PPI needs {_q(-saving)} more "
                          f"than the human labels alone")
    lines += ["", render_table(d).rstrip("\n")]
    not_yet = d.get("not_yet") or {}
    if not_yet:
        lines.append("")
        for name, x in not_yet.items():
            more = ("" if x["more"] is None else
                    f"; {_next(d, x['more'])} would bring it to 5")
            lines.append(f"{plain(name)}: only {x['labelled']} of its {x['n_total']} queries "
                         f"labelled, too few to plan from (at least 5){more}")
        if d.get("to_plan") is not None:
            lines.append(f"Label {_next(d, d['to_plan'])}, then plan again.")
    more = d["more"]["ppi"]
    if more:
        draw = (d.get("draw") or {}).get("ppi")
        src = d.get("design") or "<your sheet>"
        n = draw if draw is not None else more
        if n:
            lines += ["", f"Draw them with: labeler sample --more {n} --from {plain(src)}"]
        else:
            lines += ["", f"They are drawn already ({plain(src)}): label the sheets drawn "
                          f"so far."]
    lines += ["", f"Assumes: {d['assumption']}"]
    return "\n".join(lines) + "\n"


def plan_line(d: Mapping[str, Any]) -> str:
    """The one planning sentence (``compare``, the report, ``labeler run``): how many more
    randomly drawn queries bring every run's PPI interval within ±W, from ``labeler plan``'s
    computation; or that it is so now; or which runs cannot be planned for yet."""
    w, now = float(d["half_width"]), int(d["now"])
    cmd = f"`labeler plan --half-width {w:g}`"
    what = "run's and pair's" if d.get("has_pairs") else "run's"
    if d["enough_now"]:
        return (f"Planning: with the {now} labelled queries every {what} PPI interval is "
                f"within ±{w:g} ({cmd} plans for another width).")
    not_yet = d.get("not_yet") or {}
    if not_yet:
        names = ", ".join(f"{n} ({x['labelled']} of {x['n_total']})"
                          for n, x in not_yet.items())
        more = ("" if d.get("to_plan") is None else
                f"; {_next(d, d['to_plan'])} would bring each to 5")
        return (f"Planning: too few labelled queries to plan for {names} (at least 5 "
                f"are needed){more} ({cmd}).")
    more, needed = d["more"]["ppi"], d["needed"]["ppi"]
    human = d["needed"]["human_only"]
    alone = "" if human is None else f"; the human labels alone would need {human}"
    return (f"Planning: for every {what} PPI interval to be within ±{w:g}, label {more} more "
            f"randomly drawn quer{'y' if more == 1 else 'ies'} ({needed} in all{alone}) — "
            f"{cmd}.")


def render_plan_html(d: Mapping[str, Any]) -> str:
    """The plan for a notebook: its status in words and the table (everything escaped)."""
    from labeler.report.notebook import table

    head = render_plan(d).split("\n\n")[0]
    words = "<br>".join(html.escape(x) for x in head.splitlines())
    notes = [html.escape(plain(f"{n}: only {x['labelled']} of {x['n_total']} labelled"))
             for n, x in (d.get("not_yet") or {}).items()]
    extra = f"<p>{'<br>'.join(notes)}</p>" if notes else ""
    return (f"<div><p>{words}</p>{table(table_rows(d), HEADER)}{extra}"
            f"<p><small>{html.escape(str(d['assumption']))}</small></p></div>")
