"""Check a command's outputs before it does any work: never over one of its inputs (after
resolving links), never somewhere it cannot write.

Usage::

    from labeler.io.guard import check_outputs
    check_outputs(inputs={"--pairs": pairs}, outputs={"--out": out, "--qrels-out": qrels})
    check_outputs(inputs={...}, dirs={"--report": report_dir})   # outputs that are folders
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from labeler.errors import ConfigError, InputError

PathArg = str | os.PathLike[str] | None


def _same(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)  # hard links too
    except OSError:
        return False


def _input_path(value: str | os.PathLike[str]) -> Path:
    """An input's file: ``NAME=PATH`` (a named run) is PATH, as the readers take it."""
    from labeler.io.readers import parse_run_arg

    try:
        return Path(parse_run_arg(value)[1])
    except InputError:   # a malformed NAME=PATH: the reader says so when it reads
        return Path(value)


def _writable_place(path: Path, flag: str, want_dir: bool) -> None:
    """``path`` can be created (or replaced) as a file, or as a folder when ``want_dir``."""
    if path.exists():
        if want_dir and not path.is_dir():
            raise ConfigError(f"{flag} {path} is a file, not a folder; give a folder path")
        if not want_dir and path.is_dir():
            raise ConfigError(f"{flag} {path} is a folder; give a file path")
        place = path if want_dir else path.parent
        if not os.access(place, os.W_OK | os.X_OK):
            raise ConfigError(f"{flag} {path}: cannot write in {place} (permission denied)")
        return
    ancestor = path.parent
    while not ancestor.exists():
        if ancestor == ancestor.parent:
            break
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        raise ConfigError(f"{flag} {path}: {ancestor} is a file, so nothing can be written "
                          "under it")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {path}: cannot write in {ancestor} (permission denied)")


def check_outputs(inputs: Mapping[str, PathArg | list[PathArg] | tuple[PathArg, ...]],
                  outputs: Mapping[str, PathArg] | None = None,
                  dirs: Mapping[str, PathArg] | None = None) -> None:
    """Raise :class:`~labeler.errors.ConfigError` (exit 2) when an output is one of the
    inputs, when two outputs are the same file, or when an output cannot be written.

    ``inputs`` and ``outputs`` map the flag a path came from to the path (``None``: not
    given); an input flag may hold several paths. ``dirs`` are outputs that are folders.
    """
    ins: list[tuple[str, Path]] = []
    for flag, value in inputs.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        ins += [(flag, _input_path(v)) for v in values if v is not None and str(v) != "-"]
    outs = [(flag, Path(v), False) for flag, v in (outputs or {}).items() if v is not None]
    outs += [(flag, Path(v), True) for flag, v in (dirs or {}).items() if v is not None]
    for flag, out, want_dir in outs:
        for in_flag, src in ins:
            if _same(out, src):
                raise ConfigError(f"{flag} {out} is the input {in_flag} {src}: writing it "
                                  "would destroy the input; choose another output path")
        _writable_place(out, flag, want_dir)
    files = [(flag, out) for flag, out, want_dir in outs if not want_dir]
    for i, (flag, out) in enumerate(files):
        for other_flag, other in files[i + 1:]:
            if _same(out, other):
                raise ConfigError(f"{flag} and {other_flag} are the same file {out}; give "
                                  "each output its own path")

