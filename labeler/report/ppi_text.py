"""The readout of a comparison with ``--ppi``: PPI's, from the comparison's plain data.

When people label a random sample of the queries, the human column of every table is the
prediction-powered estimate and its interval; the human mean beside it is over the labelled
queries only, and is named so; "delta" and "more lenient / stricter" compare the two label
sets on those same labelled queries; the pairs PPI resolves are named one by one, with what
the LLM labels alone say about each; the runs that swap places are those the PPI estimates
and the LLM means order differently. Everything here reads ``Comparison.to_dict()`` data.

Usage::

    from labeler.report.ppi_text import ppi_runs, resolved_pairs, ppi_swap_line
    rows = ppi_runs(comparison.to_dict())       # best PPI estimate first
    [f"{p['first']} > {p['second']}" for p in resolved_pairs(comparison.to_dict())]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labeler import fmt
from labeler.report.escape import plain

__all__ = ["BEST_SET_WORDS", "MAX_RESOLVED_LINES", "best_set_line", "llm_pair_delta",
           "ppi_order", "ppi_runs", "ppi_scope_line", "ppi_swap_line", "ppi_swap_note",
           "ppi_swaps", "ppi_table_lines", "rank_scope", "resolved_lines", "resolved_pairs"]

MAX_RESOLVED_LINES = 50
"""The terminal names at most this many resolved pairs (``--json``/``--report`` have all)."""

BEST_SET_WORDS = ("no other run is shown to beat {them} by the simultaneous 95% intervals of "
                  "the pair differences; a set chosen this way holds the best run under full "
                  "human labelling in at least 95% of random samples of labelled queries")
"""What the best set is, in words."""


def _estimate(run: Mapping[str, Any]) -> float | None:
    return fmt.finite((run.get("ppi") or {}).get("estimate"))


def ppi_runs(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per run, best PPI estimate first (runs without one last, by tag): ``system,
    estimate, ci, reason, labelled_human, labelled_llm, delta`` (LLM − human on the run's
    labelled queries), ``leniency`` (``lenient``/``strict``/``""`` from that delta),
    ``llm, llm_ci`` (over all its queries), ``human_only_ci`` (when the data has it),
    ``n_labelled, n_total, rank_ppi, rank_llm``.

    Usage: ``ppi_runs(comparison.to_dict())[0]["system"]``
    """
    runs: Mapping[str, Mapping[str, Any]] = data.get("runs") or {}
    rank_ppi = _ranks({t: _estimate(r) for t, r in runs.items()})
    rank_llm = _ranks({t: fmt.finite(r.get("llm")) for t, r in runs.items()})
    rows = []
    for tag, r in runs.items():
        p = r.get("ppi") or {}
        lab = r.get("labelled") or {}
        delta = fmt.finite(lab.get("delta"))
        n_lab = p.get("n_labelled", lab.get("n"))
        rows.append({
            "system": tag, "estimate": _estimate(r), "ci": p.get("ci"),
            "reason": p.get("reason"), "labelled_human": fmt.finite(lab.get("human")),
            "labelled_llm": fmt.finite(lab.get("llm")), "delta": delta,
            "leniency": "" if not delta else ("lenient" if delta > 0 else "strict"),
            "llm": fmt.finite(r.get("llm")), "llm_ci": r.get("llm_ci"),
            "human_only_ci": r.get("human_only_ci"),
            "n_labelled": n_lab,
            "n_total": (None if n_lab is None or p.get("n_unlabelled") is None
                        else int(n_lab) + int(p["n_unlabelled"])),
            "rank_ppi": rank_ppi.get(tag), "rank_llm": rank_llm.get(tag)})
    rows.sort(key=lambda x: (x["estimate"] is None, -float(x["estimate"] or 0.0),
                             str(x["system"])))
    return rows


def _ranks(values: Mapping[str, float | None]) -> dict[str, int]:
    """1 = highest; equal values share the best rank (as ``rank(method="min")``)."""
    scored = sorted((v for v in values.values() if v is not None), reverse=True)
    return {t: 1 + sum(1 for w in scored if w > v) for t, v in values.items() if v is not None}


def resolved_pairs(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pairs whose PPI verdict (Holm-adjusted) is not ``unresolved``, each oriented
    winner first: ``first, second, delta`` (> 0), ``ci``, ``p_adjusted``, ``llm_delta`` (the
    LLM labels' difference first − second on the queries both runs score,
    :func:`llm_pair_delta`) and ``llm`` —
    ``agree``, ``reverse`` or ``""`` (no LLM values). Largest difference first.

    Usage: ``[(p["first"], p["second"]) for p in resolved_pairs(comparison.to_dict())]``
    """
    out = []
    for p in data.get("pairs") or ():
        q = p.get("ppi") or {}
        if q.get("verdict") not in ("a-better", "b-better"):
            continue
        sign = 1.0 if q["verdict"] == "a-better" else -1.0
        first, second = (p["a"], p["b"]) if sign > 0 else (p["b"], p["a"])
        ci = q.get("ci")
        llm_delta = llm_pair_delta(data, first, second)
        out.append({"first": first, "second": second,
                    "delta": sign * (fmt.finite(q.get("delta")) or 0.0),
                    "ci": None if not ci else sorted([sign * ci[0], sign * ci[1]]),
                    "p_adjusted": q.get("p_adjusted"), "llm_delta": llm_delta,
                    "llm": ("" if llm_delta is None else
                            "agree" if llm_delta > 0 else "reverse")})
    out.sort(key=lambda x: (-x["delta"], x["first"], x["second"]))
    return out


def llm_pair_delta(data: Mapping[str, Any], a: str, b: str) -> float | None:
    """The LLM labels alone on a pair: the mean over the queries both runs score of LLM
    NDCG of ``a`` minus that of ``b`` (a query a run's LLM labels give no relevant chunk
    counts 0, as PPI counts it); from ``per_query``, else the runs' LLM means.

    Usage: ``llm_pair_delta(comparison.to_dict(), "bm25", "bert")``
    """
    per_query = data.get("per_query") or {}
    qa, qb = per_query.get(a), per_query.get(b)
    if qa is None or qb is None:
        runs = data.get("runs") or {}
        la = fmt.finite((runs.get(a) or {}).get("llm"))
        lb = fmt.finite((runs.get(b) or {}).get("llm"))
        return None if la is None or lb is None else la - lb
    both = [q for q in qa if q in qb]
    if not both:
        return None
    return sum((qa[q].get("llm") or 0.0) - (qb[q].get("llm") or 0.0) for q in both) / len(both)


def ppi_swaps(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Pairs of runs the PPI estimates and the LLM means order differently: ``ppi_first``
    (ahead by PPI), ``llm_first`` and ``verdict`` — ``real`` where PPI resolves the pair the
    PPI way (the LLM labels put it the wrong way round), ``unresolved`` otherwise.

    Usage: ``ppi_swaps(comparison.to_dict())``
    """
    rows = [r for r in ppi_runs(data) if r["estimate"] is not None and r["llm"] is not None]
    real = {(p["first"], p["second"]) for p in resolved_pairs(data)}
    out = []
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if (a["estimate"] - b["estimate"]) * (a["llm"] - b["llm"]) < 0:
                out.append({"ppi_first": a["system"], "llm_first": b["system"],
                            "ppi": (a["estimate"], b["estimate"]), "llm": (a["llm"], b["llm"]),
                            "verdict": "real" if (a["system"], b["system"]) in real
                            else "unresolved"})
    return out


def ppi_order(data: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The runs best first by PPI estimate, and by LLM mean (missing values last)."""
    rows = ppi_runs(data)
    by_llm = sorted(rows, key=lambda r: (r["llm"] is None, -float(r["llm"] or 0.0),
                                         str(r["system"])))
    return [r["system"] for r in rows], [r["system"] for r in by_llm]


def ppi_swap_note(data: Mapping[str, Any]) -> str:
    """Whether the swaps are real by the PPI pair verdicts, as a sentence without its final
    period; ``""`` without swaps."""
    swaps = ppi_swaps(data)
    n = len(swaps)
    real = [s for s in swaps if s["verdict"] == "real"]
    if not swaps:
        return ""
    if not real:
        who = {1: "The swap is not", 2: "Neither swap is"}.get(n, "None of the swaps is")
        return f"{who} a real difference by PPI (Holm-adjusted): no evidence either way"
    which = ", ".join(f"{plain(s['ppi_first'])} > {plain(s['llm_first'])}" for s in real[:10])
    return (f"PPI shows {len(real)} of {'it' if n == 1 else 'them'} real ({which}"
            f"{' …' if len(real) > 10 else ''}): there the LLM labels put the runs the wrong "
            f"way round")


def ppi_swap_line(data: Mapping[str, Any]) -> str:
    """Which swaps are real, by the PPI pair verdicts, in one or two sentences."""
    swaps = ppi_swaps(data)
    n = len(swaps)
    rows = [r for r in ppi_runs(data) if r["estimate"] is not None and r["llm"] is not None]
    n_pairs = len(rows) * (len(rows) - 1) // 2
    if not swaps:
        return (f"The PPI estimates and the LLM means order all {n_pairs} run pairs the same "
                "way." if n_pairs else "Fewer than two runs have a PPI estimate.")
    names = ", ".join(f"{plain(s['ppi_first'])} ↔ {plain(s['llm_first'])}" for s in swaps[:10])
    more = f" and {n - 10} more" if n > 10 else ""
    return (f"{n} of {n_pairs} run pairs swap places between the PPI estimates and the LLM "
            f"means: {names}{more}. {ppi_swap_note(data)}.")


def ppi_scope_line(data: Mapping[str, Any]) -> str:
    """What each column of the PPI runs table is, in a few sentences."""
    return ("The human column is the prediction-powered estimate of the run's mean under "
            "full human labelling of its queries, with its 95% interval; the 'labelled' "
            "columns are both label sets' means over the run's human-labelled queries only, "
            "and delta = LLM − human there (positive: the LLM labels are more lenient with the "
            "run, negative: stricter); the LLM column is the LLM mean over all the run's "
            "queries. Ranks: by the PPI estimate → by the LLM mean.")


def rank_scope(data: Mapping[str, Any]) -> str:
    """``"on the 6 human-labelled queries"``: the queries the rank statistics are over."""
    ranking = data.get("ranking") or {}
    n = next((v for v in (ranking.get("ci_queries"), ranking.get("n_queries"),
                          data.get("shared_queries")) if v is not None), None)
    if n is None:
        return "on the human-labelled queries"
    return f"on the {n} human-labelled quer{'y' if n == 1 else 'ies'}"


def best_set_line(ranking: Mapping[str, Any]) -> str | None:
    """The best set in a sentence (``None`` when the data has none)."""
    best = ranking.get("best_set")
    if not best:
        return None
    names = [plain(t) for t in best]
    if len(names) == 1:
        return f"{names[0]} is the best run: {BEST_SET_WORDS.format(them='it')}."
    return f"The best run is one of {_join(names)}: {BEST_SET_WORDS.format(them='them')}."


def _join(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def ppi_table_lines(data: Mapping[str, Any], label: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the terminal's PPI runs table."""
    header = ["run", f"human {label}, PPI [95% CI]", "human, labelled", "llm, labelled",
              "delta", f"llm {label}, all [95% CI]", "rank PPI→LLM", "labelled"]
    rows = []
    for r in ppi_runs(data):
        human = (f"{fmt.num(r['estimate'])} {fmt.interval(r['ci'])}" if r["ci"] else
                 f"{fmt.num(r['estimate'])} ({r['reason'] or fmt.MISSING})")
        words = {"lenient": " more lenient", "strict": " stricter"}.get(r["leniency"], "")
        rows.append([plain(r["system"]), human, fmt.num(r["labelled_human"]),
                     fmt.num(r["labelled_llm"]), fmt.num(r["delta"], signed=True) + words,
                     f"{fmt.num(r['llm'])} {fmt.interval(r['llm_ci'])}",
                     f"{fmt.count(r['rank_ppi'])}→{fmt.count(r['rank_llm'])}",
                     (f"{r['n_labelled']} of {r['n_total']}" if r["n_total"] is not None
                      else fmt.MISSING)])
    return header, rows


def resolved_lines(data: Mapping[str, Any], label: str, alpha: float) -> list[str]:
    """Every pair PPI resolves (up to :data:`MAX_RESOLVED_LINES`), as terminal lines."""
    pairs = resolved_pairs(data)
    n_all = sum(1 for p in data.get("pairs") or () if p.get("ppi"))
    if not pairs:
        return [f"PPI resolves none of the {n_all} pairs at alpha {alpha:g} (Holm-adjusted): "
                "no evidence of a difference, which is not evidence of none."]
    lines = [f"PPI resolves {len(pairs)} of the {n_all} pairs (Holm-adjusted, alpha "
             f"{alpha:g}); Δ = the first run's {label} minus the second's under full human "
             "labelling, estimated:"]
    for p in pairs[:MAX_RESOLVED_LINES]:
        llm = {"agree": "the LLM labels agree", "reverse": "the LLM labels reverse it"
               }.get(p["llm"], "")
        lines.append(f"  {plain(p['first'])} > {plain(p['second'])}: Δ "
                     f"{fmt.num(p['delta'], signed=True)} {fmt.interval(p['ci'])}, p adj. "
                     f"{fmt.pvalue(p['p_adjusted'])}"
                     + (f"; {llm} (LLM Δ {fmt.num(p['llm_delta'], signed=True)})"
                        if llm else ""))
    more = len(pairs) - MAX_RESOLVED_LINES
    if more > 0:
        lines.append(f"  ... and {more} more (see --json or --report)")
    return lines
