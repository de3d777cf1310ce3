"""Progress of the pair tests of a long comparison (:class:`labeler.report.progress.Progress`:
a bar on a terminal, plain lines every ~30 s otherwise). Nothing is shown for a comparison
whose pairs are done within a couple of seconds.

Usage::

    with PairProgress() as progress:
        compare(human=human, llm=llm, runs=runs, progress=progress)
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

SHOW_AFTER_S = 2.0
"""Show nothing for a comparison whose pairs are done within this many seconds."""


class PairProgress:
    """A ``progress(done, total)`` callback for :func:`labeler.compare`."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.shown = 0
        self._bar: Any = None

    def __enter__(self) -> PairProgress:
        self.started = time.monotonic()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.close()

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            if time.monotonic() - self.started < SHOW_AFTER_S or total <= 0:
                return
            from labeler.report.progress import Progress

            self._bar = Progress("testing pairs", total=total)
        if done > self.shown:
            self._bar.advance(done - self.shown)
            self.shown = done
