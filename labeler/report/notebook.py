"""How result objects look in a notebook: compact HTML tables (``_repr_html_``), and a
progress line that works in Jupyter without widgets.

Every text is escaped (run tags and ids come from user files).

Usage::

    result = labeler.label(pairs, model="lexical")
    result          # in Jupyter: the summary and the first records, as a table
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from labeler import fmt

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["JupyterProgress", "agreement_html", "comparison_html", "in_notebook", "label_html",
           "reconciliation_html", "score_html"]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return fmt.num(value)
    if value is None:
        return fmt.MISSING
    return html.escape(str(value))


def table(rows: Iterable[Iterable[Any]], header: Iterable[str], caption: str = "") -> str:
    """A small HTML table; floats with 4 decimals, everything escaped."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
                   for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _frame(df: pd.DataFrame, caption: str, limit: int = 10) -> str:
    shown = df.head(limit)
    rows = [[None if _missing(v) else v for v in r] for r in shown.itertuples(index=False)]
    more = f" (first {limit} of {len(df)})" if len(df) > limit else ""
    return table(rows, [str(c) for c in df.columns], caption + more)


def _missing(v: Any) -> bool:
    try:
        return bool(v != v) or v is None  # NaN / NA
    except (TypeError, ValueError):
        return False


def label_html(records: pd.DataFrame, summary: str) -> str:
    """A labelling job's summary line, then the first of its records.

    Usage: ``label_html(result.records, result.summary.render())``
    """
    cols = [c for c in ("query_id", "chunk_id", "grade", "status", "rationale", "error")
            if c in records.columns]
    return f"<p>{html.escape(summary)}</p>" + _frame(records[cols], "label records")


def score_html(summary: pd.DataFrame) -> str:
    """A score result's per-run summary: run, k, mean, median, queries, judged share.

    Usage: ``score_html(result.summary)``
    """
    cols = ["system", "k", "mean", "median", "n_queries", "n_empty", "judged_share"]
    return _frame(summary[[c for c in cols if c in summary.columns]], "NDCG@k per run",
                  limit=50)


def comparison_html(data: Mapping[str, Any]) -> str:
    """Runs under human and LLM labels, and the order correlation, from a comparison's plain
    data (``to_dict()``); with PPI, the headline and the PPI readout's runs table (the
    estimates, both label sets on the labelled queries, the LLM means over all).

    Usage: ``comparison_html(comparison.to_dict())``
    """
    tail = (f"<p>Kendall's tau {fmt.num(data['kendall_tau'])}, Spearman's rho "
            f"{fmt.num(data['spearman_rho'])} between the two orders of the runs.</p>")
    if data["statistics"]["ppi"]:
        from labeler.report.ppi_text import ppi_runs

        names = {"system": "run", "estimate": "human, PPI", "labelled_human": "human, labelled",
                 "labelled_llm": "LLM, labelled", "delta": "delta, labelled",
                 "llm": "LLM, all queries", "rank_ppi": "rank PPI", "rank_llm": "rank LLM"}
        rows = [[r[key] for key in names] for r in ppi_runs(data)]
        return (f"<p>{html.escape(str(data['headline']))}</p>"
                + _rows(rows, list(names.values()),
                        f"{data['measure']}: PPI estimates vs LLM labels", limit=50) + tail)
    rows = [[tag, r["human"], r["llm"], r["delta"], r["rank"]["human"], r["rank"]["llm"]]
            for tag, r in data["runs"].items()]
    return (_rows(rows, ["system", "human", "llm", "delta", "rank_human", "rank_llm"],
                  f"NDCG@{data['k']}: human vs LLM labels", limit=50) + tail)


def _rows(rows: list[list[Any]], header: list[str], caption: str, limit: int) -> str:
    """Plain rows as :func:`_frame` shows a table's: the first ``limit``, missing values
    as n/a."""
    shown = [[None if _missing(v) else v for v in r] for r in rows[:limit]]
    more = f" (first {limit} of {len(rows)})" if len(rows) > limit else ""
    return table(shown, header, caption + more)


_AGREEMENT_ROWS = (("n", "pairs judged by both"), ("exact_agreement", "exact agreement"),
                   ("cohen_kappa", "Cohen's kappa"),
                   ("cohen_kappa_quadratic", "Cohen's kappa, quadratic"),
                   ("krippendorff_alpha_ordinal", "Krippendorff's alpha (ordinal)"),
                   ("binary_agreement", "binary agreement (grade >= 2)"),
                   ("mean_signed_difference", "mean signed difference (LLM - human)"))


def agreement_html(d: Mapping[str, Any]) -> str:
    """The headline agreement statistics with their intervals, and the confusion matrix, of
    an agreement report's plain data (``to_dict()``).

    Usage: ``agreement_html(report.to_dict())``
    """
    ci = d.get("ci") or {}
    rows = [[label, d.get(key) if key != "n" else str(d.get(key)), fmt.interval(ci.get(key))
             if ci.get(key) else ""] for key, label in _AGREEMENT_ROWS]
    matrix = d.get("confusion_matrix") or []
    grid = table([[f"human {g}", *map(str, row)] for g, row in enumerate(matrix)],
                 ["", "LLM 0", "LLM 1", "LLM 2", "LLM 3"], "confusion matrix")
    return table(rows, ["statistic", "value", "95% CI"], "agreement with human labels") + grid


def reconciliation_html(data: Mapping[str, Any]) -> str:
    """Agreement (if any), then the merged label counts, of a reconcile result's plain data
    (``to_dict()``: the agreement's keys when there is one, and ``merged``).

    Usage: ``reconciliation_html(result.to_dict())``
    """
    counts = data["merged"]
    parts = [agreement_html(data)] if "confusion_matrix" in data else [
        "<p>No pair is judged by both the LLM and the humans.</p>"]
    parts.append(table([[k, str(v)] for k, v in counts.items()], ["merged labels", "pairs"]))
    return "".join(parts)


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where a terminal progress bar cannot draw)."""
    import sys

    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except AttributeError:
        return False
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


class JupyterProgress:
    """One line of text in the output cell, updated in place (no widgets needed)."""

    def __init__(self, total: int, what: str = "labelling") -> None:
        from IPython.display import display

        self.total, self.what = total, what
        self._handle = display(self._text(0, ""), display_id=True)

    def _text(self, done: int, info: str) -> Any:
        from IPython.display import HTML

        share = done / self.total if self.total else 1.0
        return HTML(f"<code>{html.escape(self.what)} {done}/{self.total} ({share:.0%}) "
                    f"{html.escape(info)}</code>")

    def update(self, done: int, info: str) -> None:
        if self._handle is not None:
            self._handle.update(self._text(done, info))
