"""The judges leaderboard for a terminal: every line under 160 characters (:data:`WIDTH`).

One row per judge (alpha with its interval, quadratic kappa, exact agreement, lean, tau, and
the gap to the best judge with its paired interval and Holm-adjusted p), the answer to "is the
best judge really better?" (the judges not shown worse than it), then the most disputed pairs:
their judges' grades by name when they fit on a line, else as counts per grade.

Usage::

    from labeler.report.judges_text import leaderboard_text
    print(leaderboard_text(board.to_dict()))
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from labeler import fmt

WIDTH = 159
"""The longest line printed."""


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def _fit(name: str, width: int) -> str:
    return name if len(name) <= width else name[:width - 1] + "…"


def _verdict(entry: dict[str, Any] | None) -> str:
    if entry is None or entry["worse"] is None:
        return "not tested"
    return "worse" if entry["worse"] else "not shown worse"


def _table(board: Mapping[str, Any]) -> list[str]:
    versus = {v["judge"]: v for v in board["versus_best"]}
    judges: Mapping[str, Mapping[str, Any]] = board["judges"]
    has_tau = any(j.get("kendall_tau") is not None for j in judges.values())
    cols = [("alpha", 7), ("95% CI", 17), ("k_quad", 7), ("exact", 7), ("LLM-hum", 8)]
    cols += [("tau", 7)] if has_tau else []
    cols += [("gap", 8), ("95% CI of gap", 17), ("p (Holm)", 8), ("verdict", 15)]
    rest = 4 + sum(w + 1 for _, w in cols)
    width = max(5, min(max(map(len, judges)), WIDTH - rest))
    lines = [f"{'#':>3} {'judge':<{width}} " + " ".join(f"{h:>{w}}" for h, w in cols)]
    for rank, (name, rep) in enumerate(judges.items(), 1):
        alpha_ci = (rep.get("ci") or {}).get("krippendorff_alpha_ordinal")
        v = versus.get(name)
        cells = [fmt.num(rep["krippendorff_alpha_ordinal"]), fmt.interval(alpha_ci),
                 fmt.num(rep["cohen_kappa_quadratic"]), fmt.num(rep["exact_agreement"]),
                 fmt.num(rep["mean_signed_difference"], signed=True)]
        cells += [fmt.num(rep.get("kendall_tau"))] if has_tau else []
        cells += ([fmt.num(v["delta_alpha"], signed=True), fmt.interval(v["ci"]),
                   fmt.pvalue(v["p_adjusted"])]
                  if v else ["", "", ""])
        cells.append("best" if rank == 1 else _verdict(v))
        lines.append(f"{rank:>3} {_fit(name, width):<{width}} "
                     + " ".join(f"{c:>{w}}" for c, (_, w) in zip(cells, cols)).rstrip())
    return lines


def _answer(board: Mapping[str, Any]) -> list[str]:
    if len(board["judges"]) < 2:
        return []
    best = board["best"]
    versus_best = board["versus_best"]
    if all(v["worse"] is None for v in versus_best):
        return _wrap(f"Is {best} really better than the others? Not tested: that takes the "
                     "bootstrap (--bootstrap N).")
    m = board.get("versus_best_test") or {}
    what = "whole queries" if m.get("unit") == "query" else "pairs"
    others = board["not_shown_worse"][1:]
    shown_worse = [v["judge"] for v in versus_best if v["worse"]]
    worse = len(shown_worse)
    lines = _wrap(f"gap: {best}'s alpha minus the judge's, on the same pairs; its 95% CI and "
                  f"p from {m.get('n_resamples')} paired bootstrap resamples of {what} (seed "
                  f"{m.get('seed')}), p Holm-adjusted over the {len(versus_best)} "
                  f"comparisons; worse: adjusted p < {m.get('alpha')}.")
    if others:
        lines += _wrap(f"Not shown worse than the best ({best}): {', '.join(others)} "
                       f"({len(others)} of {len(versus_best)}); "
                       + ("none is worse." if not worse else
                          f"the other one is worse: {shown_worse[0]}." if worse == 1 else
                          f"the other {worse} are worse: {', '.join(shown_worse)}."))
    else:
        lines += _wrap(f"{best} is better than every other judge (each difference "
                       "significant after Holm).")
    return lines


def _disputed(board: Mapping[str, Any]) -> list[str]:
    disputed = board["disagreements"][:10]
    if not disputed:
        return []
    lines = ["", "pairs the judges disagree on most (spread = highest - lowest grade):"]
    for d in disputed:
        head = f"  {d['query_id']}/{d['chunk_id']}: human {d['human']}, spread {d['spread']}: "
        line = head + " ".join(f"{name}={d['grades'][name]}" for name in board["judges"])
        if len(line) > WIDTH:
            given = [int(d["grades"][name]) for name in board["judges"]]
            counts = [given.count(g) for g in range(4)]
            line = head + "judges' grades " + ", ".join(
                f"{g}: {c}" for g, c in enumerate(counts) if c)
        lines.append(line)
    return lines


def leaderboard_text(board: Mapping[str, Any]) -> str:
    """The leaderboard's plain data (its ``to_dict()``) as terminal lines (see the module).

    Usage: ``print(leaderboard_text(board.to_dict()))``
    """
    lines = _wrap(f"{len(board['judges'])} judges on the {board['n']:,} pairs that all of them and "
                  "the humans judged, ranked by Krippendorff's alpha (ordinal)")
    lines += _table(board)
    lines += _wrap("LLM-hum: the mean signed difference (LLM grade minus human grade); k_quad: "
                   "Cohen's kappa, quadratic weights; exact: share of equal grades.")
    lines += _answer(board)
    lines += _disputed(board)
    return "\n".join(lines) + "\n"
