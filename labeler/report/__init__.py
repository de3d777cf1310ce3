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
__all__ = list(_NAMES)   # the public names are the lazy table's, in its order
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
