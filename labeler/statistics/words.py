"""The headline of a comparison in words: which run is best, how surely, and what the LLM
labels do to that — on the queries every run scores under both label sets, and saying how
many there are. A difference is called real only where its Holm-adjusted test says so;
"unresolved" is no evidence of a difference, which is not evidence of equality.

Usage::

    from labeler.statistics.words import headline
    headline(comparison.runs, comparison.significance)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from labeler.report.shapes import SignificanceView as Significance


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _best(runs: pd.DataFrame, col: str) -> str | None:
    ok = runs.dropna(subset=[col])
    if ok.empty:
        return None
    return str(ok.sort_values([col, "system"], ascending=[False, True],
                              kind="stable").iloc[0]["system"])


def headline(means: pd.DataFrame, sig: Significance) -> str:
    """One sentence: on the ``n`` queries every run scores under both label sets, which run
    has the highest mean under human labels, from how many runs it differs by a real
    (Holm-adjusted) difference, and what the LLM labels do to the order and the verdicts.
    ``means`` (``system`` and anything else) only names the runs; the means compared are
    those over the shared queries (``sig.runs``).

    Usage: ``headline(comparison.runs, sig)`` → ``"On the 43 queries every run scores under
    both label sets, bert has the highest mean under human labels, ..."``
    """
    runs = sig.runs
    n = sig.n_shared
    if len(means) == 0:
        return "No run to compare."
    if n == 0:
        return ("No query is scored by every run under both label sets, so the runs are not "
                "ranked on common queries (use --complete to count a query a run lacks as 0); "
                "each pair below is tested on the queries both of its runs score.")
    scope = (f"On the {_plural(n, 'query', 'queries')} every run scores under both label "
             f"sets" if len(means) > 1 else
             f"On the {_plural(n, 'query', 'queries')} both label sets score")
    best = _best(runs, "shared_human")
    if best is None:
        return f"{scope}, no run has a mean under human labels."
    if len(means) < 2:
        return f"{scope}: only one run ({best}), so there is no order to compare."
    alpha = sig.options.alpha
    p = sig.pairs
    mine = p.loc[(p["a"] == best) | (p["b"] == best)]
    sign = (mine["a"] == best).map({True: 1.0, False: -1.0})
    ahead = int(((mine["human_p_adjusted"] < alpha) & (sign * mine["human_delta"] > 0)).sum())
    tested = len(mine)
    if ahead:
        first = (f"{scope}, {best} has the highest mean under human labels and is ahead of "
                 f"{ahead} of the {_plural(tested, 'run', 'runs')} it was tested against by a "
                 f"real difference")
    else:
        first = (f"{scope}, {best} has the highest mean under human labels, but no difference "
                 f"between it and another run is real at this sample size (unresolved: no "
                 f"evidence of a difference, which is not evidence of none)")
    llm_best = _best(runs, "shared_llm")
    second = ("the LLM labels keep it first" if llm_best == best else
              f"the LLM labels put {llm_best} first")
    c = sig.counts
    wrong = []
    if c["llm-only"]:
        wrong.append("call " + _plural(c["llm-only"], "difference", "differences")
                     + " real that the human labels do not (llm-only)")
    if c["reversed"]:
        wrong.append("reverse " + _plural(c["reversed"], "real difference",
                                          "real differences"))
    if c["human-only"]:
        wrong.append("miss " + _plural(c["human-only"], "real difference",
                                       "real differences") + " (human-only)")
    if wrong:
        third = "but " + _join(wrong)
    elif c["confirmed"]:
        third = "and agree on " + ("the one real difference" if c["confirmed"] == 1
                                   else f"all {c['confirmed']} real differences")
    else:
        third = "and neither label set finds a real difference"
    return f"{first}; {second} {third}."
