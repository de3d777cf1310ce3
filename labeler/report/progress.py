"""Progress of a long step, wherever it runs: a bar on a terminal, a line in a notebook cell,
and without either (cron, ``nohup``, a log file) a plain line every ~30 s with the count, the
rate and the time left.

Usage::

    from labeler.report.progress import Progress
    bar = Progress("labelling", total=5000)
    bar.advance(1, info="cached 10 · failed 0"); bar.close()
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["EVERY_ENV", "Progress"]

EVERY_ENV = "LABELER_PROGRESS_EVERY"
"""Seconds between plain progress lines when there is no terminal (default 30)."""


class Progress:
    """``enabled``: None picks by where it runs (terminal → bar, notebook → cell, else plain
    lines every ``every`` seconds, or ``$LABELER_PROGRESS_EVERY``); False draws nothing."""

    def __init__(self, what: str, total: int, *, enabled: bool | None = None,
                 every: float | None = None) -> None:
        from labeler.report.notebook import JupyterProgress, in_notebook

        self.what, self.total, self.done = what, total, 0
        self._start = time.monotonic()
        self._next = 0.0
        self._bar: Any = None
        self._cell: JupyterProgress | None = None
        self._every: float | None = None
        self._info = ""
        if enabled is False:
            return
        if in_notebook():
            self._cell = JupyterProgress(total, what)
        elif sys.stderr.isatty() or enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, TextColumn,
                                       TimeRemainingColumn)
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn(what), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[info]}"), TimeRemainingColumn(),
                                     console=Console(stderr=True), transient=False)
            self._task = self._bar.add_task(what, total=total, info="")
            self._bar.start()
        else:
            self._every = every if every is not None else float(os.environ.get(EVERY_ENV, 30))
            self._next = self._start + self._every

    def advance(self, n: int = 1, info: str | Callable[[], str] | None = None) -> None:
        """``n`` more done; ``info`` (or a function that makes it, called only when the
        progress is shown) replaces the short text beside the count."""
        self.done += n
        if isinstance(info, str):
            self._info = info
        now = time.monotonic()
        if now < self._next and self.done != self.total:
            return
        if callable(info):
            self._info = info()
        if self._bar is not None:
            self._next = now + 0.1
            self._bar.update(self._task, completed=self.done, info=self._info)
        elif self._cell is not None:
            self._next = now + 0.5
            self._cell.update(self.done, self._info)
        elif self._every is not None and self.done != self.total:
            self._next = now + self._every
            print(self.line(now), file=sys.stderr, flush=True)

    def line(self, now: float | None = None) -> str:
        """The plain progress line: count, share, rate, time left, info."""
        elapsed = (now if now is not None else time.monotonic()) - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else None
        share = self.done / self.total if self.total else 1.0
        eta = f"~{_duration(left)} left" if left is not None else "time left unknown"
        text = (f"{self.what}: {self.done}/{self.total} ({share:.0%}), {rate:.1f}/s, {eta}")
        return f"{text} · {self._info}" if self._info else text

    def close(self, info: str | None = None) -> None:
        """The final state (the bar completed, the cell's last line)."""
        if info is not None:
            self._info = info
        if self._cell is not None:
            self._cell.update(self.done, f"done · {self._info}" if self._info else "done")
            self._cell = None
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, info=self._info)
            self._bar.stop()
            self._bar = None


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
