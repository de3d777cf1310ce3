"""The terminal view of a comparison: verdict counts and headline first, then the runs with
their intervals, the pairs that differ, PPI estimates, and the order statistics.

Usage::

    from labeler.report.text import render_text
    print(render_text(compare(human="human.qrels", llm="labels.jsonl", runs=["a.run", "b.run"])))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from labeler import fmt
from labeler.report.escape import plain

if TYPE_CHECKING:
    import pandas as pd

    from labeler.report.shapes import ComparisonView, SignificanceView


def render_text(comparison: ComparisonView) -> str:
    """A plain-text summary for the terminal: the pair verdicts first, then the runs. With
    PPI the readout is PPI's (:mod:`labeler.report.ppi_text`).

    Usage: ``print(render_text(compare(human=human, llm=llm, runs=runs)))``
    """
    from labeler.report import ppi_text

    c = comparison
    sig = c.significance
    data = c.to_dict()
    ppi = bool(sig.options.ppi)
    by = f"@{c.k}" if c.measure is None else f" {c.measure}"
    if ppi:
        lines = [ppi_verdicts_line(data, sig.options.alpha), plain(data["headline"]), ""]
        header, rows = ppi_text.ppi_table_lines(data, c.label)
        lines += _table(header, rows)
        lines.append(ppi_text.ppi_scope_line(data))
    else:
        lines = [f"Verdicts {sig.counts_line()} ({test_words(sig)})", plain(c.headline), ""]
        header = ["run", f"human{by} [95% CI]", f"llm{by} [95% CI]", "delta", "rank h→l",
                  "queries h/l", "judged h/l"]
        rows = [[plain(r.system), _with_ci(r.human, sig.run_ci(str(r.system), "human")),
                 _with_ci(r.llm, sig.run_ci(str(r.system), "llm")),
                 fmt.num(r.delta, signed=True), f"{_rank(r.rank_human)}→{_rank(r.rank_llm)}",
                 f"{r.n_queries_human}/{r.n_queries_llm}",
                 f"{fmt.share(r.judged_share_human)}/{fmt.share(r.judged_share_llm)}"]
                for r in by_human_rank(c.runs).itertuples()]
        lines += _table(header, rows)
        lines.append(scope_line(c))
    lines.append("")
    if ppi:
        lines += [*ppi_text.resolved_lines(data, c.label, sig.options.alpha), ""]
        lines.append(f"Paired t-tests on the human-labelled queries both runs score "
                     f"({sig.counts_line()}):")
    lines += _pair_lines(c)
    if ppi:
        lines += ["", *_ppi_lines(c, data)]
    lines.append("")
    scope = ppi_text.rank_scope(data)
    if c.kendall_tau is None and c.spearman_rho is None:
        lines.append("Kendall's tau / Spearman's rho: n/a (fewer than two runs scored "
                     "under both label sets)")
    else:
        lines.append(f"Kendall's tau {fmt.num(c.kendall_tau)}, Spearman's rho "
                     f"{fmt.num(c.spearman_rho)} between the two orders of the runs, "
                     f"{scope}")
    lines += [plain(line) for line in ranking_lines(data["ranking"], scope)]
    if ppi:
        lines.append(ppi_text.ppi_swap_line(data))
    else:
        swaps = ", ".join(f"{plain(s.human_first)} ↔ {plain(s.llm_first)}" for s in c.swaps)
        largest = (f" (the largest {len(c.swaps)}: {swaps})" if c.swap_count > len(c.swaps)
                   else f": {swaps}" if swaps else "")
        lines.append(f"{c.swap_count} of {c.n_pairs} run pairs swap places" + largest
                     + (f". {swap_significance(c)}." if c.swaps else ""))
    ideal = c.ideal_summary()
    lines.append(f"Ideal ranking by LLM grades, NDCG@{c.k} under human labels: mean "
                 f"{fmt.num(ideal['mean'])}, median {fmt.num(ideal['median'])} over "
                 f"{ideal['n_queries']} queries (1.0000 = unchanged)")
    if len(c.most_changed):
        top = ", ".join(f"{plain(r.query_id)} (|delta| {fmt.num(r.mean_abs_delta)}, delta "
                        f"{fmt.num(r.mean_delta, signed=True)})"
                        for r in c.most_changed.itertuples())
        lines.append(f"Queries that change most (mean |delta| over runs, the order; mean "
                     f"delta): {top}")
    return "\n".join(lines) + "\n"


def ppi_verdicts_line(data: Mapping[str, Any], alpha: float) -> str:
    """``"PPI verdicts of 6 pairs: 4 resolved, 2 unresolved (...)"``: the first line with
    ``--ppi``."""
    verdicts = [(p.get("ppi") or {}).get("verdict") for p in data.get("pairs") or ()]
    n = len(verdicts)
    resolved = sum(v in ("a-better", "b-better") for v in verdicts)
    return (f"PPI verdicts of {n} pair{'' if n == 1 else 's'}: {resolved} resolved, "
            f"{n - resolved} unresolved (prediction-powered estimates, Holm-corrected, "
            f"alpha {alpha:g})")


def swap_significance(c: ComparisonView) -> str:
    """Whether the swapped pairs are significant differences, as a sentence (no final
    period): ``"Neither swap is a significant difference under either label set"``; ``""``
    without swaps."""
    if not c.swaps:
        return ""
    pairs = c.significance.pairs
    verdict = {frozenset((a, b)): v for a, b, v in zip(pairs["a"], pairs["b"], pairs["verdict"])}
    n = len(c.swaps)
    if c.swap_count > n:  # only the largest are listed: speak of those
        real = sum(verdict.get(frozenset((s.human_first, s.llm_first)), "unresolved")
                   != "unresolved" for s in c.swaps)
        return (f"{real} of the {n} largest swaps listed "
                f"{'is a significant difference' if real == 1 else 'are significant differences'}"
                " under at least one label set")
    real = sum(verdict.get(frozenset((s.human_first, s.llm_first)), "unresolved")
               != "unresolved" for s in c.swaps)
    if real == 0:
        who = {1: "The swap is not", 2: "Neither swap is"}.get(n, "None of the swaps is")
        return f"{who} a significant difference under either label set"
    if n == 1:
        return "The swap is a significant difference under at least one label set"
    what = "is a significant difference" if real == 1 else "are significant differences"
    return f"{real} of the {n} swaps {what} under at least one label set"


MAX_PAIR_LINES = 50
"""The terminal lists at most this many pairs that differ."""


def ppi_words(sig: SignificanceView) -> str:
    """What the PPI intervals are intervals of, in one sentence."""
    o = sig.options
    what = ("the mean over these queries under full human labelling" if o.ppi_target ==
            "queries" else "the mean over the population of queries these were drawn from")
    how = ("the LLM mean over every query corrected by the mean human − LLM difference on "
           "the human-judged random sample" + (" (LLM values weighted by a lambda fitted on "
                                               "the other half of the sample)" if o.ppi_tune
                                               else ""))
    return (f"{how}. Each 95% interval is an interval of {what}; it holds if the judged "
            f"queries were drawn at random. Pair intervals: a − b, with Holm-adjusted "
            f"p-values and simultaneous intervals over the pairs.")


def test_words(sig: SignificanceView) -> str:
    """The test in words: ``"paired t-test, Holm-corrected, alpha 0.05"``."""
    o = sig.options
    return f"{o.test_name}, Holm-corrected, alpha {o.alpha:g}"


def by_human_rank(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs table, best under human labels first (by rank, which orders the runs on the
    queries they all share; runs without a rank last)."""
    return runs.sort_values(["rank_human", "human", "system"], ascending=[True, False, True],
                            kind="stable", na_position="last")


def scope_line(c: ComparisonView) -> str:
    """What each mean, interval and rank is over, in one sentence."""
    n = c.significance.n_shared
    shared = (f"Ranks are by the means over the {n} quer{'y' if n == 1 else 'ies'} every run "
              f"scores under both label sets" if n else
              "No query is scored by every run under both label sets: ranks are by each "
              "run's own mean")
    every = ("; a query a run lacks counts 0 (--complete)" if c.complete else
             "; each mean and 95% interval is over the run's own queries (counts shown)")
    return (f"{shared}{every}. Each 95% interval is one of the mean over the population of "
            f"queries these were drawn from, under that label set, clipped to [0, 1].")

VERDICT_WORDS = (
    "confirmed: significant under both label sets, same direction; reversed: significant "
    "under both, opposite directions; human-only: significant under human labels only; "
    "llm-only: significant under LLM labels only; unresolved: significant under neither (no "
    "evidence of a difference, which is not evidence of none). Both label sets test a pair "
    "on the same queries: those both runs score under both.")
"""The verdicts in words (terminal, Markdown and HTML reports)."""


def _with_ci(value: Any, ci: tuple[float, float] | None) -> str:
    if fmt.finite(value) is None:
        return fmt.MISSING
    return f"{fmt.num(value)} {fmt.interval(ci)}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(x.ljust(w) if i == 0 else x.rjust(w)
                       for i, (x, w) in enumerate(zip(row, widths)))
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _pair_lines(c: ComparisonView) -> list[str]:
    """The pairs that differ under at least one label set, with their adjusted p-values."""
    pairs = c.significance.pairs
    shown = pairs.loc[pairs["verdict"] != "unresolved"]
    if not len(pairs):
        return ["No pair of runs to test (one run)."]
    if shown.empty:
        return ["No difference between two runs is significant under either label set."]
    header = ["pair", "verdict", "queries", "human Δ", "p adj.", "LLM Δ", "p adj."]
    rows = [[f"{plain(r['a'])} − {plain(r['b'])}", str(r["verdict"]), str(r["n"]),
             fmt.num(r["human_delta"], signed=True), fmt.pvalue(r["human_p_adjusted"]),
             fmt.num(r["llm_delta"], signed=True), fmt.pvalue(r["llm_p_adjusted"])]
            for r in shown.head(MAX_PAIR_LINES).to_dict("records")]
    intro = (f"Pairs that differ under at least one label set (Δ = mean {c.label} of the "
             "first minus the second, over the queries both runs score under both label "
             "sets):")
    more = len(shown) - MAX_PAIR_LINES
    tail = [f"... and {more} more (see --json or --report)"] if more > 0 else []
    return [intro, *_table(header, rows), *tail, VERDICT_WORDS]


def _ppi_lines(c: ComparisonView, data: Mapping[str, Any]) -> list[str]:
    """What the PPI estimates are, what the LLM labels save against the human labels alone
    (when the data has the human-only intervals), the planning line and the notes."""
    sig = c.significance
    lines = [f"Prediction-powered estimates: {ppi_words(sig)}"]
    widths = []
    for tag, r in (data.get("runs") or {}).items():
        ppi_ci, alone = (r.get("ppi") or {}).get("ci"), r.get("human_only_ci")
        if ppi_ci and alone:
            widths.append(f"{plain(tag)} ±{fmt.num((ppi_ci[1] - ppi_ci[0]) / 2)} (human labels "
                          f"alone ±{fmt.num((alone[1] - alone[0]) / 2)})")
    if widths:
        lines.append("Half-widths of the 95% intervals with the LLM labels: "
                     + "; ".join(widths[:20]) + (" …" if len(widths) > 20 else "") + ".")
    plan = getattr(c, "planning_line", None)
    if plan:
        lines.append(plain(plan))
    lines += [plain(n) for n in sig.notes]
    return lines


_rank = fmt.count


def ranking_lines(ranking: Mapping[str, Any], scope: str | None = None) -> list[str]:
    """The comparison's ``ranking`` block (plain data) in a few sentences: the best set
    (when the block has one), the leader under each label set and how often it stays first
    when whole queries are resampled, then τ_AP and the top-k overlaps with their intervals
    (``ranking.ci``, when present) and the queries they are over (``scope``: ``"on the 6
    human-labelled queries"``).

    Usage: ``ranking_lines(comparison.to_dict()["ranking"], "on the 6 human-labelled queries")``
    """
    from labeler.report.ppi_text import best_set_line

    w = ranking.get("winner") or {}
    if not w.get("human") and not w.get("ppi"):
        return ["Top of the ranking: n/a (no run scored under both label sets)"]
    lines = []
    best_set = best_set_line(ranking)
    if best_set:
        lines.append(best_set)
    best = [f"human labels {w.get('human')}", f"LLM labels {w.get('llm')}"]
    if w.get("ppi"):
        best.append(f"PPI {w['ppi']}")
    lines.append(f"Highest mean: {', '.join(best)}.")
    stays = w.get("stability", w.get("confidence"))
    if stays is not None:
        who = w.get("ppi") or w.get("human")
        lines.append(f"{who} stays first in {fmt.share(stays)} of "
                     f"{fmt.count(ranking.get('bootstrap'))} resamples of whole queries"
                     f"{' (PPI estimates)' if w.get('ppi') else ' (human labels)'}.")
    cis = ranking.get("ci") or {}
    top_cis = cis.get("top_k_overlap") or {}

    def with_ci(value: Any, ci: Any, share: bool = False) -> str:
        shown = fmt.share(value) if share else fmt.num(value)
        if not ci or fmt.finite(ci[0]) is None or fmt.finite(ci[1]) is None:
            return shown
        return (f"{shown} [{fmt.share(ci[0])}, {fmt.share(ci[1])}]" if share
                else f"{shown} {fmt.interval(ci)}")

    overlap = ranking.get("top_k_overlap") or {}
    tops = ", ".join(f"top {k} {with_ci(v, top_cis.get(k), share=True)}"
                     for k, v in overlap.items() if v is not None)
    where = f" {scope}" if scope else ""
    tau = with_ci(ranking.get("kendall_tau"), cis.get("kendall_tau"))
    lines.append(f"LLM order against the human order{where}: AP correlation "
                 f"{with_ci(ranking.get('tau_ap'), cis.get('tau_ap'))} (errors at the top weigh "
                 f"more), Kendall's tau {tau}"
                 + (f"; shared runs in the {tops}" if tops else "")
                 + ("; 95% intervals from resamples of whole queries" if cis else "") + ".")
    return lines
