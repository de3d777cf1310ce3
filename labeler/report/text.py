"""The terminal view of a comparison: verdict counts and headline first, then the runs with
their intervals, the pairs that differ, PPI estimates, and the order statistics.

Usage::

    from labeler.report.text import render_text
    print(render_text(compare(human="human.qrels", llm="labels.jsonl", runs=["a.run", "b.run"])))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from labeler import fmt
from labeler.report.escape import plain

if TYPE_CHECKING:
    import pandas as pd

    from labeler.report.shapes import ComparisonView, SignificanceView


def render_text(comparison: ComparisonView) -> str:
    """A plain-text summary for the terminal: the pair verdicts first, then the runs.

    Usage: ``print(render_text(compare(human=human, llm=llm, runs=runs)))``
    """
    c = comparison
    sig = c.significance
    lines = [f"Verdicts {sig.counts_line()} ({test_words(sig)})", plain(c.headline), ""]
    by = f"@{c.k}" if c.measure is None else f" {c.measure}"
    header = ["run", f"human{by} [95% CI]", f"llm{by} [95% CI]", "delta", "rank h→l",
              "queries h/l", "judged h/l"]
    rows = [[plain(r.system), _with_ci(r.human, sig.run_ci(str(r.system), "human")),
             _with_ci(r.llm, sig.run_ci(str(r.system), "llm")), fmt.num(r.delta, signed=True),
             f"{_rank(r.rank_human)}→{_rank(r.rank_llm)}",
             f"{r.n_queries_human}/{r.n_queries_llm}",
             f"{fmt.share(r.judged_share_human)}/{fmt.share(r.judged_share_llm)}"]
            for r in by_human_rank(c.runs).itertuples()]
    lines += _table(header, rows)
    lines.append(scope_line(c))
    lines.append("")
    lines += _pair_lines(c)
    advice = getattr(c, "advice", ())
    if advice:
        lines.append(plain(advice_line(advice) or ""))
    if sig.options.ppi:
        lines += ["", *_ppi_lines(c)]
    lines.append("")
    if c.kendall_tau is None and c.spearman_rho is None:
        lines.append("Kendall's tau / Spearman's rho: n/a (fewer than two runs scored "
                     "under both label sets)")
    else:
        lines.append(f"Kendall's tau {fmt.num(c.kendall_tau)}, Spearman's rho "
                     f"{fmt.num(c.spearman_rho)} between the two orders of the runs")
    lines += [plain(line) for line in ranking_lines(c.to_dict()["ranking"])]
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


def _ppi_lines(c: ComparisonView) -> list[str]:
    sig = c.significance
    header = ["run", f"PPI {c.label}", "95% CI", "human-judged queries"]
    rows = []
    for r in by_human_rank(c.runs).itertuples():
        p = sig.run_ppi(str(r.system))
        if p is None:
            rows.append([plain(r.system), *[fmt.MISSING] * 3])
            continue
        rows.append([plain(r.system), fmt.num(p["estimate"]),
                     fmt.interval(p["ci"]) if p["ci"] else p.get("reason", fmt.MISSING),
                     f"{p['n_labelled']} of {p['n_labelled'] + p['n_unlabelled']}"])
    intro = f"Prediction-powered estimates: {ppi_words(sig)}"
    lines = [intro, *_table(header, rows)]
    if "ppi_verdict" in sig.pairs:
        got = sig.pairs["ppi_verdict"].value_counts()
        lines.append("PPI pair verdicts (Holm-adjusted): " + ", ".join(
            f"{int(got.get(v, 0))} {v}" for v in ("a-better", "b-better", "unresolved")))
    plan = sig.planning_line()
    if plan:
        lines.append(plan)
    lines += [plain(n) for n in sig.notes]
    return lines


_rank = fmt.count


def advice_line(advice: Sequence[Mapping[str, Any]]) -> str | None:
    """One sentence for a terminal: the unresolved pair nearest to being resolved, and how
    many pairs are unresolved. ``None`` when there is none.

    Usage: ``advice_line(comparison.advice)``
    """
    known = [x for x in advice if x["needed"] is not None]
    if not advice:
        return None
    if not known:
        return (f"{len(advice)} unresolved pair{'s' if len(advice) != 1 else ''}: no number "
                f"of labelled queries would likely resolve them (no difference seen).")
    best = min(known, key=lambda x: x["needed"])
    of = f" of {best['n_total']}" if best["n_total"] is not None else ""
    return (f"{len(advice)} unresolved pair{'s' if len(advice) != 1 else ''}; the nearest, "
            f"{best['a']} − {best['b']} (Δ {best['delta']:+.3f}, ±{best['half_width_now']:.3f} "
            f"with {best['now']} labelled queries), would likely be resolved with "
            f"{best['needed']}{of} randomly drawn labelled queries.")


def ranking_lines(ranking: Mapping[str, Any]) -> list[str]:
    """The comparison's ``ranking`` block (plain data) in two or three sentences: the winner
    under each label set and how surely it stays first, then τ_AP and the top-k overlaps.

    Usage: ``ranking_lines(comparison.to_dict()["ranking"])``
    """
    w = ranking.get("winner") or {}
    if not w.get("human") and not w.get("ppi"):
        return ["Top of the ranking: n/a (no run scored under both label sets)"]
    best = [f"human labels {w.get('human')}", f"LLM labels {w.get('llm')}"]
    if w.get("ppi"):
        best.append(f"PPI {w['ppi']}")
    lines = [f"Best run: {', '.join(best)}."]
    if w.get("confidence") is not None:
        who = w.get("ppi") or w.get("human")
        lines.append(f"{who} stays first in {fmt.share(w['confidence'])} of "
                     f"{fmt.count(ranking.get('bootstrap'))} resamples of whole queries"
                     f"{' (PPI estimates)' if w.get('ppi') else ' (human labels)'}.")
    overlap = ranking.get("top_k_overlap") or {}
    tops = ", ".join(f"top {k} {fmt.share(v)}" for k, v in overlap.items() if v is not None)
    lines.append(f"LLM order against the human order: AP correlation "
                 f"{fmt.num(ranking.get('tau_ap'))} (errors at the top weigh more), Kendall's tau "
                 f"{fmt.num(ranking.get('kendall_tau'))}"
                 + (f"; shared runs in the {tops}" if tops else "") + ".")
    return lines
