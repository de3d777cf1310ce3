"""One exception family for everything a user can act on.

Usage::

    from labeler.errors import InputError
    raise InputError("grade must be an integer 0-3, got '5'", path="h.qrels", line=12)
"""

from __future__ import annotations

import os

from labeler.redact import redact


class LabelerError(Exception):
    """Base of all labeler errors; ``exit_code`` is what the CLI exits with."""

    exit_code: int = 1

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 line: int | None = None, row: int | None = None) -> None:
        self.message = redact(message)  # a URL or a key quoted anywhere never shows
        self.path = redact(str(path)) if path is not None else None
        self.line = line
        self.row = row
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f", line {self.line}"
            elif self.row is not None:
                where += f", row {self.row}"
            where += ": "
        return where + self.message


class InputError(LabelerError):
    """Bad input file or value: names the file and the line or row (exit 2)."""

    exit_code = 2


class ConfigError(LabelerError):
    """Bad configuration: a setting, a config key, a missing key or model (exit 2).

    ``setting`` names the library setting at fault (``max_tokens``). A setting written in the
    message between backticks (`` `max_tokens` ``) is shown by the CLI as the command's flag
    (``--max-tokens``).
    """

    exit_code = 2

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 line: int | None = None, row: int | None = None,
                 setting: str | None = None) -> None:
        self.setting = setting
        super().__init__(message, path=path, line=line, row=row)


class EndpointError(LabelerError):
    """The LLM endpoint refused the job: unreachable, 401/403/404, bad request (exit 2)."""

    exit_code = 2


class OutputError(LabelerError):
    """An output cannot be written: the disk is full or over quota (exit 2); nothing
    half-written is left."""

    exit_code = 2


class JudgeError(LabelerError):
    """One judgement could not be obtained (carries the reason; recorded as `failed`)."""

    exit_code = 1

    def __init__(self, message: str, *, retryable: bool = False,
                 last_answer: str | None = None) -> None:
        self.retryable = retryable
        self.last_answer = last_answer
        super().__init__(message)


class DriftError(LabelerError):
    """A scheduled run drifted past its threshold (exit 4)."""

    exit_code = 4


class Interrupted(KeyboardInterrupt):
    """The command was stopped by SIGINT (Ctrl-C) or SIGTERM (a scheduler's timeout, a
    cancelled CI job): exit 128 + the signal's number (130, 143). ``str()`` is the one line
    the CLI prints (what was kept, how to resume)."""

    def __init__(self, signum: int, message: str = "") -> None:
        import signal

        self.signum = signum
        self.exit_code = 128 + signum
        self.signal_name = signal.Signals(signum).name
        super().__init__(message or f"interrupted ({self.signal_name})")
