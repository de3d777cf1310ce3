"""The output directory of a scheduled job: dated run directories, ``latest``, the lock, logs.

Layout of an output directory ``OUT``::

    OUT/.lock                  held (fcntl.flock) while a run is in progress
    OUT/runs/<UTC timestamp>/  one directory per finished run (``…Z.partial`` while running,
                               ``…Z.interrupted`` when SIGINT/SIGTERM stopped it: labels only)
    OUT/latest                 symlink to the newest finished run (``runs/<timestamp>``)
    OUT/latest.txt             the same, as text, for systems without symlinks
    OUT/runs/<ts>/accepted.json  written by ``labeler run --accept``: when, and what
                               ``latest`` pointed at before

``latest`` is the last *accepted* run: a run whose judge changed (the guard,
:mod:`labeler.pipeline.guard`) is finished but does not move it until :func:`accept_run`.

Usage::

    with hold_lock(out):
        run_dir = new_run_dir(out)            # OUT/runs/20261121T023000Z.partial
        ...                                    # write outputs into it
        final = finish_run_dir(run_dir)        # renamed to OUT/runs/20261121T023000Z
        set_latest(out, final)
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from labeler.errors import LabelerError
from labeler.io import write_text

try:  # POSIX; elsewhere runs are not locked (documented)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LockedError", "accept_run", "finish_run_dir", "hold_lock", "latest_run",
           "log_to_file", "mark_killed", "new_run_dir", "set_latest"]

PARTIAL = ".partial"
INTERRUPTED = ".interrupted"
"""Suffix of a run stopped by SIGINT/SIGTERM after labelling: its labels and run.log are
kept; ``latest`` does not point at it."""
log = logging.getLogger("labeler.run")


class LockedError(LabelerError):
    """Another run holds the output directory's lock (exit 2)."""

    exit_code = 2


def utc_stamp(now: datetime | None = None) -> str:
    """``20261121T023000Z``: sortable, filename-safe, UTC."""
    return (now or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


@contextlib.contextmanager
def hold_lock(out_dir: Path) -> Iterator[Path]:
    """Hold ``out_dir/.lock`` for the duration; a second holder gets :class:`LockedError`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ".lock"
    if fcntl is None:  # pragma: no cover - Windows
        log.warning("no fcntl on this platform: %s is not locked", out_dir)
        yield path
        return
    try:  # never through a symlink: it could truncate whatever file it points at
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if path.is_symlink():
            raise LockedError(f"{path.name} is a symbolic link; labeler does not follow it "
                              "(remove it)", path=path) from None
        raise LockedError(f"cannot open the lock file ({exc.strerror})", path=path) from None
    fh = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown process"
            raise LockedError(f"another run holds the lock ({holder}); wait for it to finish "
                              "or use another output directory", path=path) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} since {utc_stamp()}\n")
        fh.flush()
        yield path
    finally:
        fh.close()  # closing releases the flock


KILLED = ".killed"
"""Suffix given to a ``.partial`` run found by the next run: its process died without a word
(``kill -9``, a power cut); what it wrote is kept for a look, ``latest`` never points at it."""


def new_run_dir(out_dir: Path, now: datetime | None = None) -> Path:
    """Create ``out_dir/runs/<stamp>.partial`` (``<stamp>-2`` … if the second is taken)."""
    runs = out_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = utc_stamp(now)
    name, n = stamp, 1
    while (runs / name).exists() or (runs / (name + PARTIAL)).exists():
        n += 1
        name = f"{stamp}-{n}"
    path = runs / (name + PARTIAL)
    path.mkdir()
    return path


def mark_killed(out_dir: Path) -> list[Path]:
    """Rename every ``runs/<stamp>.partial`` to ``<stamp>.killed`` and report it: called by a
    run holding the lock, before it starts, any such folder belongs to a run that died
    without finishing. Returns the new names."""
    runs = out_dir / "runs"
    done: list[Path] = []
    if not runs.is_dir():
        return done
    stale = sorted(p for p in runs.glob("*" + PARTIAL) if p.is_dir() and not p.is_symlink())
    for path in stale:
        base = path.name.removesuffix(PARTIAL)
        target, n = runs / (base + KILLED), 1
        while target.exists():
            n += 1
            target = runs / f"{base}-{n}{KILLED}"
        try:
            os.replace(path, target)
        except OSError as exc:
            log.warning("%s was left by a run that died; it could not be renamed (%s)",
                        path, exc.strerror)
            continue
        log.warning("%s was left unfinished by a run that died (killed, or the machine "
                    "stopped); kept as %s, which latest never names", path.name, target.name)
        done.append(target)
    return done


def finish_run_dir(run_dir: Path) -> Path:
    """Rename ``….partial`` to its final name once every output is written."""
    final = run_dir.with_name(run_dir.name.removesuffix(PARTIAL))
    os.replace(run_dir, final)
    return final


def set_latest(out_dir: Path, run_dir: Path) -> None:
    """Point ``out_dir/latest`` (symlink) and ``out_dir/latest.txt`` at ``run_dir``."""
    rel = run_dir.relative_to(out_dir).as_posix()
    write_text(rel + "\n", out_dir / "latest.txt")
    link = out_dir / "latest"
    if link.is_dir() and not link.is_symlink():
        log.warning("%s is a real directory, not a link: it was left as it is and does not "
                    "point at the newest run (%s names it)", link, out_dir / "latest.txt")
        return
    tmp = out_dir / f".latest.{os.getpid()}.tmp"
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(rel, target_is_directory=True)
        os.replace(tmp, link)
    except OSError as exc:  # no symlinks here: latest.txt is the pointer
        with contextlib.suppress(OSError):
            tmp.unlink()
        log.debug("could not update the latest symlink (%s); latest.txt is current", exc)


def latest_run(out_dir: Path) -> Path | None:
    """The newest finished run directory of ``out_dir`` (from ``latest.txt``), or None."""
    pointer = out_dir / "latest.txt"
    if pointer.is_file():
        target = out_dir / pointer.read_text(encoding="utf-8").strip()
        if target.is_dir():
            return target
    link = out_dir / "latest"
    return link.resolve() if link.is_dir() else None


@contextlib.contextmanager
def log_to_file(path: Path, level: int = logging.INFO) -> Iterator[None]:
    """Copy the ``labeler`` loggers' records to ``path`` for the duration."""
    logger = logging.getLogger("labeler")
    from labeler.redact import RedactingFilter

    handler = logging.FileHandler(path, encoding="utf-8")
    handler.addFilter(RedactingFilter())
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                           "%Y-%m-%dT%H:%M:%S%z"))
    old_level = logger.level
    if logger.getEffectiveLevel() > level:
        logger.setLevel(level)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        handler.close()


def accept_run(run_dir: Path, out_dir: Path | None = None) -> tuple[Path, Path | None]:
    """Accept the finished run ``run_dir`` (``OUT/runs/<stamp>``): ``latest`` points at it and
    ``accepted.json`` records when and what ``latest`` was before. ``out_dir`` defaults to
    the run's ``OUT``; a run elsewhere, unfinished or interrupted is refused (exit 2).
    Returns ``(the run, the previous latest or None)``.

    Usage: ``accept_run(Path("labeler-runs/runs/20261121T023000Z"))``
    """
    from labeler.errors import InputError
    from labeler.io import write_json

    path = Path(run_dir).resolve()
    if not path.is_dir():
        raise InputError("--accept: no such run directory", path=run_dir)
    if path.name.endswith((PARTIAL, INTERRUPTED)) or not (path / "manifest.json").is_file():
        raise InputError("--accept: not a finished run (no manifest.json, or the run is "
                         "partial or interrupted)", path=run_dir)
    out = path.parent.parent
    if path.parent.name != "runs" or (out_dir is not None and out != Path(out_dir).resolve()):
        where = f"{out_dir}/runs/" if out_dir is not None else "an output directory's runs/"
        raise InputError(f"--accept: not a run directory in {where}", path=run_dir)
    with hold_lock(out):
        before = latest_run(out)
        write_json({"accepted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "latest_before": before.name if before is not None else None},
                   path / "accepted.json")
        set_latest(out, path)
    return path, before
