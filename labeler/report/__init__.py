"""Renderers: terminal text, Markdown, self-contained HTML, notebook tables and plots.

They take plain data (dicts, frames, small dataclasses) and never import the stages.

Usage::

    from labeler.report import write_report
    write_report(comparison, "out/report")
"""

from __future__ import annotations

from labeler._lazy import lazy_names

_NAMES = {
    "write_report": "comparison",
    "render_markdown": "comparison",
    "render_html": "comparison",
    "write_judges_report": "judges",
    "trec_eval_text": "trec_text",
}
__all__ = ["render_html", "render_markdown", "trec_eval_text", "write_judges_report",
           "write_report"]
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
