"""Terminal tables that survive a pipe: full cell text without a terminal, and text from the
data (run tags, query ids) shown as it is — never read as rich markup, escape sequences
removed.

Usage::

    console = make_console()
    table.add_row(cell(run_tag), ...)
    console.print(table)
"""

from __future__ import annotations

import re
import sys
from typing import Any

from labeler._lean import declare_lean

declare_lean(__name__)   # drawn by `labeler score`, without pandas

CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07?|[\x00-\x1f\x7f-\x9f]")
"""Terminal escape sequences and control characters: taken out of every cell we print."""


def make_console() -> Any:
    """A rich Console on stdout; without a terminal it is wide enough that no cell is cut
    or wrapped (CI logs keep full run names)."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console()
    return Console(width=100_000, no_color=True, highlight=False)


def cell(value: Any) -> Any:
    """Data shown in a table cell: control characters and escape sequences removed, square
    brackets kept literally (a rich ``Text``, not markup)."""
    from rich.text import Text

    return Text(CONTROL.sub("", str(value)))
