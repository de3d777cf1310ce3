"""Render a :class:`~labeler.compare.Comparison` as text, Markdown and self-contained HTML.

Every string that comes from the data (run tags, query ids, query text) is escaped: the HTML
template runs with jinja2 autoescaping, the Markdown goes through :func:`md_escape`, the
terminal text through :func:`plain`. The HTML needs no network: its CSS is inline and its plots
are PNG data URIs.

Usage::

    from labeler.report.comparison import write_report
    paths = write_report(comparison, "out/report", agreement="reconcile.json")
    paths["html"]    # out/report/report.html
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labeler import fmt, io
from labeler.errors import InputError
from labeler.report.templating import environment

if TYPE_CHECKING:
    from labeler.report.shapes import HasDict


DEFAULT_TITLE = "Human vs LLM labels"
MAX_TABLE_ROWS = 1000
SWAPS_LISTED = 100
"""Run pairs that swap places listed at most (the largest); every one is counted."""
TOP_RUNS = 20
"""The runs table shows the best this many runs; the others are collapsed below it."""
"""Rows of the per-query tables shown in HTML/Markdown; report.json always has them all."""

AGREEMENT_STATS: tuple[tuple[str, str], ...] = (
    ("n", "pairs judged by both"),
    ("exact_agreement", "exact agreement"),
    ("cohen_kappa", "Cohen's kappa"),
    ("cohen_kappa_linear", "Cohen's kappa, linear weights"),
    ("cohen_kappa_quadratic", "Cohen's kappa, quadratic weights"),
    ("krippendorff_alpha_ordinal", "Krippendorff's alpha (ordinal)"),
    ("binary_agreement", "binary agreement (grade ≥ 2)"),
    ("mean_signed_difference", "mean signed difference (LLM − human)"),
)


# ---------------------------------------------------------------------- escaping


fmt_num = fmt.num
_finite = fmt.finite


# ---------------------------------------------------------------------- agreement input

def load_agreement(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a reconcile report (JSON) and check its confusion matrix."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a valid JSON file ({exc})", path=p) from None
    out = as_agreement(data, source=str(p))
    if out is None:
        raise InputError("the agreement report is empty (null)", path=p)
    return out


def as_agreement(agreement: Any, source: str = "<agreement>") -> dict[str, Any] | None:
    """A reconcile report as a dict: from a dict, an object with ``to_dict()``, a JSON path
    or None. Its ``confusion_matrix`` (if any) must be 4×4 non-negative counts."""
    if agreement is None:
        return None
    if isinstance(agreement, (str, os.PathLike)):
        return load_agreement(agreement)
    if hasattr(agreement, "to_dict") and not isinstance(agreement, Mapping):
        agreement = agreement.to_dict()
    if not isinstance(agreement, Mapping):
        raise InputError("an agreement report must be a JSON object", path=source)
    data = dict(agreement)
    if "confusion_matrix" not in data and isinstance(data.get("agreement"), Mapping):
        data = dict(data["agreement"])
    matrix = data.get("confusion_matrix")
    if matrix is not None:
        data["confusion_matrix"] = _check_matrix(matrix, source)
    ci = data.get("ci")
    if isinstance(ci, Mapping) and "level" in ci:
        level = ci["level"]
        if isinstance(level, bool) or not isinstance(level, (int, float)) \
                or not 0 < level < 1:
            raise InputError("ci.level must be a number between 0 and 1, got "
                             f"{str(level)[:40]!r}",
                             path=source)
    return data


def _check_matrix(matrix: Any, source: str) -> list[list[int]]:
    try:
        rows = [[float(v) for v in row] for row in matrix]
    except (TypeError, ValueError):
        rows = []
    ok = (len(rows) == 4 and all(len(r) == 4 for r in rows)
          and all(math.isfinite(v) and v >= 0 and v == int(v) for r in rows for v in r))
    if not ok:
        raise InputError("confusion_matrix must be 4×4 non-negative counts "
                         "(rows human grades 0-3, columns LLM grades 0-3)", path=source)
    return [[int(v) for v in r] for r in rows]


def _agreement_context(agreement: dict[str, Any] | None) -> dict[str, Any] | None:
    if agreement is None:
        return None
    raw = agreement.get("ci")
    cis: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    stats = [(label, agreement[key], key == "n", _interval(cis.get(key)))
             for key, label in AGREEMENT_STATS
             if key in agreement and _finite(agreement[key]) is not None]
    ci_note = None
    if cis:
        unit = {"query": "whole queries", "pair": "pairs"}.get(str(cis.get("unit")),
                                                               str(cis.get("unit", "")))
        ci_note = (f"{float(cis.get('level', 0.95)):.0%} intervals: {cis.get('method', '')}, "
                   f"{cis.get('n_resamples', '?')} resamples of {unit}")
    return {"stats": stats, "matrix": agreement.get("confusion_matrix"), "ci_note": ci_note}


def _interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = _finite(value[0]), _finite(value[1])
        if lo is not None and hi is not None:
            return lo, hi
    return None


# ---------------------------------------------------------------------- context

PAIRS_WORDS = {"all": "Every pair of runs", "best": "Each run against the best one",
               "adjacent": "Each run against its neighbour in the order"}


def _leniency(delta: Any) -> str:
    """``lenient`` (LLM labels score the run higher), ``strict`` (lower) or ``""``."""
    f = _finite(delta)
    return "" if not f else ("lenient" if f > 0 else "strict")


def _context(data: Mapping[str, Any], title: str, agreement: dict[str, Any] | None,
             judge: Mapping[str, Any] | None, drift: Mapping[str, Any] | None = None
             ) -> dict[str, Any]:
    """What the templates show, from the comparison's plain data (``to_dict()``)."""
    from labeler.report import ppi_text
    from labeler.report.text import (
        VERDICT_WORDS, counts_line, ppi_verdicts_line, ppi_words, ranking_lines,
        runs_by_human_rank, scope_line, swap_significance, test_words,
    )

    st = data["statistics"]
    has_ppi = bool(st["ppi"])
    runs = []
    for tag, r in runs_by_human_rank(data):
        n, judged = data["n_queries"][tag], data["judged_share"][tag]
        runs.append({"system": tag, "human": r["human"], "llm": r["llm"], "delta": r["delta"],
                     "rank_human": r["rank"]["human"], "rank_llm": r["rank"]["llm"],
                     "n_queries_human": n["human"], "n_queries_llm": n["llm"],
                     "judged_share_human": judged["human"], "judged_share_llm": judged["llm"],
                     "human_ci": r["human_ci"], "llm_ci": r["llm_ci"],
                     "leniency": _leniency(r["delta"]), "ppi": r.get("ppi"),
                     "human_only_ci": r.get("human_only_ci")})
    pairs = [{**p, "ppi": p.get("ppi")} for p in data["pairs"]]
    per_query = sorted(({"system": tag, "query_id": q, **v}
                        for tag, qs in data["per_query"].items() for q, v in qs.items()),
                       key=lambda r: (r["system"], r["query_id"]))
    ideal = data["ideal_ranking_change"]
    judged_by = ideal.get("judged") or {}
    tests = test_words(st)
    return {
        "title": title, "k": data["k"], "label": data["measure"], "gain": data["gain"],
        "include_empty": data["include_empty"],
        "runs": runs, "headline": data["headline"],
        "verdicts_line": (ppi_verdicts_line(data, st["alpha"]) if has_ppi else
                          f"Verdicts {counts_line(data)} ({tests})"),
        "counts": data["verdicts"], "pairs": pairs, "alpha": st["alpha"],
        "test_words": tests, "has_ppi": has_ppi,
        "ppi_runs": ppi_text.ppi_runs(data) if has_ppi else [],
        "ppi_scope": ppi_text.ppi_scope_line(data) if has_ppi else "",
        "resolved": ppi_text.resolved_pairs(data) if has_ppi else [],
        "t_counts_line": f"verdicts {counts_line(data)} ({tests})",
        "scope_line": scope_line(data), "verdict_words": VERDICT_WORDS,
        "pairs_words": PAIRS_WORDS[st["pairs"]],
        "ppi_words": ppi_words(st) if has_ppi else "",
        "planning": st.get("planning"), "stat_notes": list(st.get("notes") or ()),
        "advice": [dict(a) for a in st.get("to_resolve") or ()],
        "tau": data["kendall_tau"], "rho": data["spearman_rho"], "n_runs": len(runs),
        "ranking_lines": ranking_lines(data["ranking"], ppi_text.rank_scope(data)),
        "rank_scope": ppi_text.rank_scope(data),
        **(_ppi_order_context(data) if has_ppi else {
            "order_human": tuple(data["order"]["human"]),
            "order_llm": tuple(data["order"]["llm"]), "swaps": data["swaps"]["pairs"],
            "n_swaps": data["swaps"]["n"], "n_pairs": data["swaps"]["n_pairs"],
            "swap_note": swap_significance(data)}),
        "ideal": {key: ideal[key] for key in ("mean", "median", "n_queries")},
        "ideal_rows": [{"query_id": q, "ndcg": v, **(judged_by.get(q) or {})}
                       for q, v in ideal["per_query"].items()],
        "most_changed": data["most_changed"],
        "per_query": per_query[:MAX_TABLE_ROWS],
        "n_per_query": len(per_query), "max_rows": MAX_TABLE_ROWS,
        "n_queries": len({r["query_id"] for r in per_query}),
        "agreement": _agreement_context(agreement),
        "judge": dict(judge) if judge else None,
        "drift": dict(drift) if drift else None,
        "top_runs": TOP_RUNS,
    }


def _ppi_order_context(data: Mapping[str, Any]) -> dict[str, Any]:
    """With PPI, the orders and swaps the report shows: by PPI estimate against by LLM mean."""
    from labeler.report import ppi_text

    by_ppi, by_llm = ppi_text.ppi_order(data)
    found = ppi_text.ppi_swaps(data)
    n_swaps = len(found)
    if len(found) > SWAPS_LISTED:  # thousands of runs: the largest only, as without PPI
        found = sorted(found, key=lambda s: -(abs(s["ppi"][0] - s["ppi"][1])
                                              + abs(s["llm"][0] - s["llm"][1])))[:SWAPS_LISTED]
    swaps = [{"human_first": s["ppi_first"], "llm_first": s["llm_first"], "human": s["ppi"],
              "llm": s["llm"], "verdict": s["verdict"]} for s in found]
    n = sum(1 for r in ppi_text.ppi_runs(data) if r["estimate"] is not None
            and r["llm"] is not None)
    return {"order_human": by_ppi, "order_llm": by_llm, "swaps": swaps, "n_swaps": n_swaps,
            "n_pairs": n * (n - 1) // 2, "swap_note": ppi_text.ppi_swap_note(data)}


# ---------------------------------------------------------------------- renderers

def render_markdown(comparison: HasDict | Mapping[str, Any], title: str = DEFAULT_TITLE,
                    agreement: Any = None, judge: Mapping[str, Any] | None = None,
                    drift: Mapping[str, Any] | None = None,
                    certify: Mapping[str, Any] | None = None) -> str:
    """A comparison or its plain data (``to_dict()``) as Markdown (tables; data strings
    escaped). ``certify``: a certified leaderboard's data, shown as its own section."""
    from labeler.report import certify as certified

    ctx = _context(_plain(comparison), title, as_agreement(agreement), judge, drift)
    section = certified.render_markdown(certify, level=2) if certify else None
    return environment(autoescape=False).get_template("report.md.j2").render(
        certify_md=section, **ctx)


def render_html(comparison: HasDict | Mapping[str, Any], title: str = DEFAULT_TITLE,
                agreement: Any = None, judge: Mapping[str, Any] | None = None,
                drift: Mapping[str, Any] | None = None,
                certify: Mapping[str, Any] | None = None) -> str:
    """A comparison or its plain data (``to_dict()``) as one self-contained HTML page with
    inline PNG plots; ``certify`` (a certified leaderboard's data) adds its section."""
    from labeler.report import certify as certified
    from labeler.report import plots
    agree = as_agreement(agreement)
    data = _plain(comparison)
    ctx = _context(data, title, agree, judge, drift)
    images = {"scatter": plots.to_data_uri(plots.ndcg_scatter(data)),
              "deltas": plots.to_data_uri(plots.delta_distribution(data))}
    if data["ideal_ranking_change"]["n_queries"]:
        images["ideal"] = plots.to_data_uri(plots.ideal_change(data))
    if agree is not None and agree.get("confusion_matrix") is not None:
        images["confusion"] = plots.to_data_uri(
            plots.confusion_heatmap(agree["confusion_matrix"]))
    section = certified.render_html(certify) if certify else None   # every value escaped
    return environment(autoescape=True).get_template("report.html.j2").render(
        images=images, certify_html=section, **ctx)


def render_text(comparison: HasDict | Mapping[str, Any]) -> str:
    """A plain-text summary for the terminal: the pair verdicts first, then the runs."""
    from labeler.report.text import render_text as _render

    return _render(_plain(comparison))


def _plain(comparison: HasDict | Mapping[str, Any]) -> Mapping[str, Any]:
    return comparison if isinstance(comparison, Mapping) else comparison.to_dict()


# ---------------------------------------------------------------------- writer

def write_report(comparison: HasDict | Mapping[str, Any], out_dir: str | os.PathLike[str],
                 agreement: Any = None, title: str = DEFAULT_TITLE,
                 judge: Mapping[str, Any] | None = None,
                 drift: Mapping[str, Any] | None = None,
                 certify: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``out_dir`` atomically.

    ``agreement``: a reconcile report (dict, JSON path, or an object with ``to_dict()``);
    when given, the HTML shows its confusion matrix and statistics. ``judge``: who made the
    LLM labels (:func:`labeler.pipeline.provenance.judge_summary`). ``drift``: what changed
    since the previous nightly run (a ``drift.json`` object), shown as a table. ``certify``:
    the certified leaderboard (a ``certify.json`` object), shown as its own section.

    Usage::

        paths = write_report(compare(human=h, llm=l, runs=runs), "report/")
    """
    agree = as_agreement(agreement)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("the report directory is a file", path=out)
    result = _plain(comparison)  # once: its ranking block resamples the queries
    data = {**result, "title": title, "agreement": agree,
            "judge": dict(judge) if judge else None, "drift": dict(drift) if drift else None,
            "certify": dict(certify) if certify else None}
    paths = {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}
    md = render_markdown(result, title, agree, judge, drift, certify)
    html = render_html(result, title, agree, judge, drift, certify)
    io.write_json(data, paths["json"])
    io.write_text(md, paths["md"])
    io.write_text(html, paths["html"])
    return paths
