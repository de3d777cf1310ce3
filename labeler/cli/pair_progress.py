"""Progress of the pair tests of a long comparison: a rich bar on a terminal, else a plain
line on stderr about every 30 seconds. Nothing is shown for a comparison that ends quickly.

Usage::

    with PairProgress() as progress:
        compare(..., progress=progress)
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

SHOW_AFTER_S = 2.0
"""Show nothing for a comparison whose pairs are done within this many seconds."""
PLAIN_EVERY_S = 30.0


class PairProgress:
    """A ``progress(done, total)`` callback for :func:`labeler.compare`."""

    def __init__(self, stream: Any = None, plain_every: float = PLAIN_EVERY_S) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.plain_every = plain_every
        self.started = time.monotonic()
        self.last_line = self.started
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> PairProgress:
        self.started = self.last_line = time.monotonic()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.started < SHOW_AFTER_S or total <= 0:
            return
        if getattr(self.stream, "isatty", lambda: False)():
            if self._bar is None:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
                from rich.progress import TimeRemainingColumn

                self._bar = Progress(TextColumn("testing pairs"), BarColumn(),
                                     MofNCompleteColumn(), TimeRemainingColumn(),
                                     console=Console(file=self.stream), transient=True)
                self._bar.start()
                self._task = self._bar.add_task("pairs", total=total)
            self._bar.update(self._task, completed=done, total=total)
        elif now - self.last_line >= self.plain_every or done == total:
            self.last_line = now
            print(f"testing pairs: {done:,} of {total:,} ({now - self.started:.0f} s)",
                  file=self.stream, flush=True)
