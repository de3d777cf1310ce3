"""The judges leaderboard as ``report.json``, ``report.md`` and a self-contained ``report.html``.

Data strings are escaped (jinja2 autoescaping in HTML, :func:`labeler.report.escape.md_escape`
in
Markdown); the HTML's confusion matrices are inline PNGs (:mod:`labeler.report.plots`).

Usage::

    from labeler.report.judges import write_judges_report
    write_judges_report(leaderboard(human=h, llm=sets).to_dict(), "out/judges")["html"]
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labeler import fmt, io
from labeler.errors import InputError
from labeler.report.templating import environment

if TYPE_CHECKING:
    from labeler.report.shapes import HasDict


DEFAULT_TITLE = "Which judge agrees with the humans?"
BY_NAME = 8
"""Up to this many judges, the disputed pairs show each judge's grade in its own column."""


def _context(data: Mapping[str, Any], title: str) -> dict[str, Any]:
    board: Mapping[str, Mapping[str, Any]] = data["judges"]
    judges = []
    for rank, (name, rep) in enumerate(board.items(), 1):
        ci = (rep.get("ci") or {}).get("krippendorff_alpha_ordinal")
        judges.append({
            "rank": rank, "name": name, "alpha": rep["krippendorff_alpha_ordinal"],
            "alpha_ci": fmt.interval(ci) if ci else fmt.MISSING,
            "kappa": rep["cohen_kappa"], "kappa_linear": rep["cohen_kappa_linear"],
            "kappa_quadratic": rep["cohen_kappa_quadratic"], "exact": rep["exact_agreement"],
            "binary": rep["binary_agreement"], "lean": rep["mean_signed_difference"],
            "tau": rep.get("kendall_tau"), "matrix": rep["confusion_matrix"]})
    disputed = [dict(d) for d in data["disagreements"]]
    for d in disputed:   # many judges: counts per grade instead of one column per judge
        d["counts"] = [sum(v == g for v in d["grades"].values()) for g in range(4)]
    return {"title": title, "n": data["n"], "n_judges": len(judges), "judges": judges,
            "has_tau": any(j["tau"] is not None for j in judges),
            "k": data["k"], "disputed": disputed, "by_name": len(judges) <= BY_NAME,
            "ci_note": _ci_note(data), "versus": data["versus_best"],
            "versus_test": data["versus_best_test"], "best": data["best"],
            "not_shown_worse": data["not_shown_worse"][1:]}


def _ci_note(data: Mapping[str, Any]) -> str | None:
    """What the intervals are: ``95% CI: percentile bootstrap, 1000 resamples of whole
    queries`` (None without intervals)."""
    ci = next((rep["ci"] for rep in data["judges"].values() if rep.get("ci")), None)
    if not ci:
        return None
    unit = "whole queries" if ci.get("unit") == "query" else "pairs"
    return (f"{float(ci.get('level', 0.95)):.0%} CI: {ci.get('method', 'bootstrap')}, "
            f"{ci.get('n_resamples')} resamples of {unit}")


def render_markdown(data: Mapping[str, Any], title: str = DEFAULT_TITLE) -> str:
    """The leaderboard (its plain data, ``to_dict()``), confusion matrices and disputed pairs
    as Markdown."""
    return str(environment(False).get_template("judges.md.j2").render(**_context(data, title)))


def render_html(data: Mapping[str, Any], title: str = DEFAULT_TITLE) -> str:
    """One self-contained HTML page (inline CSS, confusion matrices as PNG data URIs) of the
    leaderboard's plain data (``to_dict()``)."""
    from labeler.report import plots
    images = {name: plots.to_data_uri(plots.confusion_heatmap(rep["confusion_matrix"]))
              for name, rep in data["judges"].items()}
    return str(environment(True).get_template("judges.html.j2").render(
        images=images, **_context(data, title)))


def write_judges_report(board: Mapping[str, Any] | HasDict, out_dir: str | os.PathLike[str],
                        title: str = DEFAULT_TITLE) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``out_dir`` atomically,
    from a leaderboard or its plain data (``to_dict()``).

    Usage: ``write_judges_report(board, "judges-report/")["html"]``
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("the report directory is a file", path=out)
    data = board if isinstance(board, Mapping) else board.to_dict()
    paths = {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}
    md, html = render_markdown(data, title), render_html(data, title)
    io.write_json({**data, "title": title}, paths["json"])
    io.write_text(md, paths["md"])
    io.write_text(html, paths["html"])
    return paths
