"""The one Jinja environment the reports render with (templates in ``report/templates``).

Built once per process and per escaping mode, so each template is compiled once: a nightly
job or a notebook that writes many reports does not parse the same templates again.

    env = environment(autoescape=True); env.get_template("report.html.j2").render(...)
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from labeler import fmt
from labeler.report.escape import md_escape

if TYPE_CHECKING:
    import jinja2


@functools.lru_cache(maxsize=2)
def environment(autoescape: bool) -> jinja2.Environment:
    """The shared environment: strict undefined names, the number filters, Markdown escaping."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("labeler.report", "templates"),
                             autoescape=autoescape, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(num=fmt.num, signed=_signed, count=fmt.count, share=fmt.share,
                       md=md_escape, interval=fmt.interval, pvalue=fmt.pvalue, usd=fmt.usd)
    return env


def _signed(x: Any) -> str:
    return fmt.num(x, signed=True)
