"""The terminal view of a comparison: verdict counts and headline first, then the runs with
their intervals, the pairs that differ, PPI estimates, and the order statistics.

Usage::

    from labeler.report.text import render_text
    c = compare(human="human.qrels", llm="labels.jsonl", runs=["a.run", "b.run"])
    print(render_text(c.to_dict()))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from labeler import fmt
from labeler.report.escape import plain

if TYPE_CHECKING:
    pass


def render_text(data: Mapping[str, Any]) -> str:
    """A plain-text summary for the terminal from a comparison's plain data (its
    ``to_dict()``): the pair verdicts first, then the runs. With PPI the readout is PPI's
    (:mod:`labeler.report.ppi_text`).

    Usage: ``print(render_text(compare(human=human, llm=llm, runs=runs).to_dict()))``
    """
    from labeler.report import ppi_text

    st = data["statistics"]
    ppi = bool(st["ppi"])
    k, label = data["k"], data["measure"]
    asked = data.get("measure_asked")
    by = f"@{k}" if asked is None else f" {asked}"
    if ppi:
        lines = [ppi_verdicts_line(data, st["alpha"]), plain(data["headline"]), ""]
        header, rows = ppi_text.ppi_table_lines(data, label)
        lines += _table(header, rows)
        lines.append(ppi_text.ppi_scope_line(data))
    else:
        lines = [f"Verdicts {counts_line(data)} ({test_words(st)})", plain(data["headline"]),
                 ""]
        header = ["run", f"human{by} [95% CI]", f"llm{by} [95% CI]", "delta", "rank h→l",
                  "queries h/l", "judged h/l"]
        rows = []
        for tag, r in runs_by_human_rank(data):
            n, judged, rank = data["n_queries"][tag], data["judged_share"][tag], r["rank"]
            rows.append([plain(tag), _with_ci(r["human"], r["human_ci"]),
                         _with_ci(r["llm"], r["llm_ci"]), fmt.num(r["delta"], signed=True),
                         f"{_rank(rank['human'])}→{_rank(rank['llm'])}",
                         f"{n['human']}/{n['llm']}",
                         f"{fmt.share(judged['human'])}/{fmt.share(judged['llm'])}"])
        lines += _table(header, rows)
        lines.append(scope_line(data))
    lines.append("")
    if ppi:
        lines += [*ppi_text.resolved_lines(data, label, st["alpha"]), ""]
        lines.append(f"Paired t-tests on the human-labelled queries both runs score "
                     f"({counts_line(data)}):")
    lines += _pair_lines(data)
    if ppi:
        lines += ["", *_ppi_lines(data)]
    lines.append("")
    scope = ppi_text.rank_scope(data)
    if data["kendall_tau"] is None and data["spearman_rho"] is None:
        lines.append("Kendall's tau / Spearman's rho: n/a (fewer than two runs scored "
                     "under both label sets)")
    else:
        lines.append(f"Kendall's tau {fmt.num(data['kendall_tau'])}, Spearman's rho "
                     f"{fmt.num(data['spearman_rho'])} between the two orders of the runs, "
                     f"{scope}")
    lines += [plain(line) for line in ranking_lines(data["ranking"], scope)]
    if ppi:
        lines.append(ppi_text.ppi_swap_line(data))
    else:
        sw = data["swaps"]
        listed = sw["pairs"]
        swaps = ", ".join(f"{plain(s['human_first'])} ↔ {plain(s['llm_first'])}"
                          for s in listed)
        largest = (f" (the largest {len(listed)}: {swaps})" if sw["n"] > len(listed)
                   else f": {swaps}" if swaps else "")
        lines.append(f"{sw['n']} of {sw['n_pairs']} run pairs swap places" + largest
                     + (f". {swap_significance(data)}." if listed else ""))
    ideal = data["ideal_ranking_change"]
    lines.append(f"Ideal ranking by LLM grades, NDCG@{k} under human labels: mean "
                 f"{fmt.num(ideal['mean'])}, median {fmt.num(ideal['median'])} over "
                 f"{ideal['n_queries']} queries (1.0000 = unchanged)")
    if data["most_changed"]:
        top = ", ".join(f"{plain(r['query_id'])} (|delta| {fmt.num(r['mean_abs_delta'])}, "
                        f"delta {fmt.num(r['mean_delta'], signed=True)})"
                        for r in data["most_changed"])
        lines.append(f"Queries that change most (mean |delta| over runs, the order; mean "
                     f"delta): {top}")
    return "\n".join(lines) + "\n"


def counts_line(data: Mapping[str, Any]) -> str:
    """``"of 55 pairs: 12 confirmed, 0 reversed, 3 human-only, 1 llm-only, 39
    unresolved"``, from a comparison's plain data."""
    n = len(data["pairs"])
    which = {"all": "", "best": " (each run against the best)",
             "adjacent": " (neighbours in the order)"}[data["statistics"]["pairs"]]
    return (f"of {n} pair{'' if n == 1 else 's'}{which}: "
            + ", ".join(f"{c} {v}" for v, c in data["verdicts"].items()))


def ppi_verdicts_line(data: Mapping[str, Any], alpha: float) -> str:
    """``"PPI verdicts of 6 pairs: 4 resolved, 2 unresolved (...)"``: the first line with
    ``--ppi``."""
    verdicts = [(p.get("ppi") or {}).get("verdict") for p in data.get("pairs") or ()]
    n = len(verdicts)
    resolved = sum(v in ("a-better", "b-better") for v in verdicts)
    return (f"PPI verdicts of {n} pair{'' if n == 1 else 's'}: {resolved} resolved, "
            f"{n - resolved} unresolved (prediction-powered estimates, Holm-corrected, "
            f"alpha {alpha:g})")


def swap_significance(data: Mapping[str, Any]) -> str:
    """Whether the swapped pairs (of a comparison's plain data) are significant differences,
    as a sentence (no final period): ``"Neither swap is a significant difference under
    either label set"``; ``""`` without swaps."""
    listed = data["swaps"]["pairs"]
    if not listed:
        return ""
    verdict = {frozenset((p["a"], p["b"])): p["verdict"] for p in data["pairs"]}
    n = len(listed)
    real = sum(verdict.get(frozenset((s["human_first"], s["llm_first"])), "unresolved")
               != "unresolved" for s in listed)
    if data["swaps"]["n"] > n:  # only the largest are listed: speak of those
        return (f"{real} of the {n} largest swaps listed "
                f"{'is a significant difference' if real == 1 else 'are significant differences'}"
                " under at least one label set")
    if real == 0:
        who = {1: "The swap is not", 2: "Neither swap is"}.get(n, "None of the swaps is")
        return f"{who} a significant difference under either label set"
    if n == 1:
        return "The swap is a significant difference under at least one label set"
    what = "is a significant difference" if real == 1 else "are significant differences"
    return f"{real} of the {n} swaps {what} under at least one label set"


MAX_PAIR_LINES = 50
"""The terminal lists at most this many pairs that differ."""


def ppi_words(statistics: Mapping[str, Any]) -> str:
    """What the PPI intervals are intervals of, in one sentence (from a comparison's
    ``statistics`` block)."""
    what = ("the mean over these queries under full human labelling" if
            statistics["ppi_target"] == "queries" else
            "the mean over the population of queries these were drawn from")
    how = ("the LLM mean over every query corrected by the mean human − LLM difference on "
           "the human-judged random sample" + (" (LLM values weighted by a lambda fitted on "
                                               "the other half of the sample)"
                                               if statistics["ppi_tune"] else ""))
    return (f"{how}. Each 95% interval is an interval of {what}; it holds if the judged "
            f"queries were drawn at random. Pair intervals: a − b, with Holm-adjusted "
            f"p-values and simultaneous intervals over the pairs.")


def test_words(statistics: Mapping[str, Any]) -> str:
    """The test in words, from a comparison's ``statistics`` block: ``"paired t-test,
    Holm-corrected, alpha 0.05"``."""
    return f"{statistics['test_name']}, Holm-corrected, alpha {statistics['alpha']:g}"


def runs_by_human_rank(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The ``runs`` of a comparison's plain data as ``(tag, run)``, best under human labels
    first (by rank, which orders the runs on the queries they all share; runs without a
    rank last)."""
    def key(item: tuple[str, Mapping[str, Any]]) -> tuple[Any, ...]:
        tag, r = item
        rank, human = r["rank"]["human"], fmt.finite(r["human"])
        return (rank is None, rank or 0, human is None, -(human or 0.0), tag)

    return sorted(data["runs"].items(), key=key)


def scope_line(data: Mapping[str, Any]) -> str:
    """What each mean, interval and rank is over, in one sentence."""
    n = data["shared_queries"]
    shared = (f"Ranks are by the means over the {n} quer{'y' if n == 1 else 'ies'} every run "
              f"scores under both label sets" if n else
              "No query is scored by every run under both label sets: ranks are by each "
              "run's own mean")
    every = ("; a query a run lacks counts 0 (--complete)" if data["complete"] else
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


def _pair_lines(data: Mapping[str, Any]) -> list[str]:
    """The pairs that differ under at least one label set, with their adjusted p-values."""
    pairs = data["pairs"]
    shown = [p for p in pairs if p["verdict"] != "unresolved"]
    if not pairs:
        return ["No pair of runs to test (one run)."]
    if not shown:
        return ["No difference between two runs is significant under either label set."]
    header = ["pair", "verdict", "queries", "human Δ", "p adj.", "LLM Δ", "p adj."]
    rows = [[f"{plain(r['a'])} − {plain(r['b'])}", str(r["verdict"]), str(r["n"]),
             fmt.num(r["human"]["delta"], signed=True), fmt.pvalue(r["human"]["p_adjusted"]),
             fmt.num(r["llm"]["delta"], signed=True), fmt.pvalue(r["llm"]["p_adjusted"])]
            for r in shown[:MAX_PAIR_LINES]]
    intro = (f"Pairs that differ under at least one label set (Δ = mean {data['measure']} of "
             "the first minus the second, over the queries both runs score under both label "
             "sets):")
    more = len(shown) - MAX_PAIR_LINES
    tail = [f"... and {more} more (see --json or --report)"] if more > 0 else []
    return [intro, *_table(header, rows), *tail, VERDICT_WORDS]


def _ppi_lines(data: Mapping[str, Any]) -> list[str]:
    """What the PPI estimates are, what the LLM labels save against the human labels alone
    (when the data has the human-only intervals), the planning line and the notes."""
    st = data["statistics"]
    lines = [f"Prediction-powered estimates: {ppi_words(st)}"]
    widths = []
    for tag, r in (data.get("runs") or {}).items():
        ppi_ci, alone = (r.get("ppi") or {}).get("ci"), r.get("human_only_ci")
        if ppi_ci and alone:
            widths.append(f"{plain(tag)} ±{fmt.num((ppi_ci[1] - ppi_ci[0]) / 2)} (human labels "
                          f"alone ±{fmt.num((alone[1] - alone[0]) / 2)})")
    if widths:
        lines.append("Half-widths of the 95% intervals with the LLM labels: "
                     + "; ".join(widths[:20]) + (" …" if len(widths) > 20 else "") + ".")
    if st.get("planning"):
        lines.append(plain(st["planning"]))
    lines += [plain(n) for n in st.get("notes") or ()]
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
