"""The verdict cache: a diskcache (SQLite) directory keyed by what changes the answer.

The key is the SHA-256 of the canonical JSON (sorted keys, no spaces) of a judge's
``cache_material`` — model, prompt text, rendered messages, sampling parameters, vote
index. The value is the verdict only (grade, rationale, tokens, expected grade) as JSON
text: never a key, never headers, and never a pickle — a value in any other form (an old
pickled cache, an entry planted by someone else) is not loaded, it is a miss and is asked
again. A value that is JSON but not a valid verdict (a grade out of 0–3, a string for a
grade, nesting deeper than JSON readers take) is a miss too; a rationale is cut to
:data:`~labeler.judges.parse.MAX_RATIONALE` characters. Each kind of skipped entry is reported
once (:attr:`LabelCache.warnings`).

A directory shared, synced or unpacked from someone else cannot make labeler touch a file
outside it: values live in the database only (never as files); a row that names a file
(``../x``, an absolute path) is dropped, with one warning, before any read or write, and the
cache library is never let remove or open such a file; settings rows the library does not
define are dropped and its own are set by labeler on every open; a ``cache.db`` (or its
``-wal`` / ``-shm``) that is a symbolic link is refused (the job goes on without the cache).

Only successes are stored, each as soon as it is judged, so a job killed at any point loses
only what was in flight. Several processes may share one directory at the same time
(SQLite locking). A directory that is read-only serves its answers and stores none; a
database that cannot be read at all (corrupt, not a database) raises :class:`CacheError` on
first use, and the job goes on without it.

Usage::

    from labeler.labelling.cache import LabelCache
    with LabelCache("~/.cache/labeler") as cache:
        key = cache.key(judge.cache_material(query, chunk))
        verdict = cache.get(key)          # None when not cached
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import diskcache

from labeler.errors import ConfigError
from labeler.fmt import clean_text
from labeler.judges.base import Verdict, cache_key
from labeler.judges.parse import MAX_RATIONALE

ENV_VAR = "LABELER_CACHE_DIR"
MIGRATE_HINT = "labeler cache migrate {dir} --trust"
"""The command that converts an old (pickled) cache a user trusts to the JSON form."""
_TEXT_LIMIT = 1 << 20  # a cached verdict is small; larger values are never stored as files
_SETTINGS: dict[str, Any] = {
    "statistics": 0, "tag_index": 0, "eviction_policy": "none", "size_limit": 2**62,
    "cull_limit": 0, "sqlite_auto_vacuum": 1, "sqlite_cache_size": 2**13,
    "sqlite_journal_mode": "wal", "sqlite_mmap_size": 2**26, "sqlite_synchronous": 1,
    "disk_min_file_size": 2**62, "disk_pickle_protocol": 5}
"""Every setting diskcache reads from its ``Settings`` table, given by labeler on each open (a
planted value never applies). Never evict: labels cost money (and no culling pass on every
write: nothing expires); no value is ever large enough to be stored as a file."""
_FILES = (diskcache.core.DBNAME, f"{diskcache.core.DBNAME}-wal", f"{diskcache.core.DBNAME}-shm")


class CacheError(Exception):
    """The cache could not be read or written (full disk, read-only, locked, corrupt).

    The labelling stage warns once and goes on without the cache: labels cost money, the
    cache only saves it."""


class _Skipped:
    """What the JSON disk gives for a value it does not load (a pickle, a file)."""

    def __init__(self, why: str) -> None:
        self.why = why


PICKLED = _Skipped("pickled")
FOREIGN = _Skipped("foreign")


class JSONTextDisk(diskcache.Disk):
    """A diskcache ``Disk`` that stores values as JSON text in the database and never
    unpickles anything: keys are plain strings, a pickled or file-backed value is returned
    as a :class:`_Skipped` marker (a miss), never loaded."""

    def store(self, value: Any, read: bool, key: Any = diskcache.core.UNKNOWN
              ) -> tuple[int, int, str | None, Any]:
        if type(value) is not str or len(value) >= _TEXT_LIMIT or read:
            raise TypeError("the verdict cache stores JSON text only")
        return 0, diskcache.core.MODE_RAW, None, value

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode == diskcache.core.MODE_PICKLE:
            return PICKLED
        if mode != diskcache.core.MODE_RAW or filename is not None or not isinstance(value, str):
            return FOREIGN
        return value

    def remove(self, file_path: str) -> None:
        """Nothing: labeler stores no files, so a file a row names was planted — possibly
        ``../x`` or an absolute path — and is never deleted (nor its parent folders)."""

    def get(self, key: Any, raw: bool) -> Any:
        if not raw:
            return FOREIGN  # a pickled key: never loaded
        return super().get(key, raw)


def default_cache_dir() -> Path:
    """``$LABELER_CACHE_DIR``, else ``$XDG_CACHE_HOME/labeler``, else ``~/.cache/labeler``."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "labeler"


def _tokens(value: Any) -> tuple[bool, int | None]:
    if value is None:
        return True, None
    ok = type(value) is int and 0 <= value < 2**53
    return ok, value if ok else None


def verdict_of(value: Any) -> Verdict | None:
    """The verdict a cached JSON object describes, or None when it is not a valid one
    (grade a whole number 0–3, rationale text, tokens whole and non-negative or null,
    expected grade a number in [0, 3] or null)."""
    if not isinstance(value, dict):
        return None
    grade, rationale = value.get("grade"), value.get("rationale", "")
    if isinstance(rationale, str):
        rationale = rationale[:MAX_RATIONALE]  # a planted 20 MB one is not echoed everywhere
    if type(grade) is not int or not 0 <= grade <= 3 or not isinstance(rationale, str):
        return None
    ok_in, tin = _tokens(value.get("input_tokens", 0))
    ok_out, tout = _tokens(value.get("output_tokens", 0))
    eg = value.get("expected_grade")
    if eg is not None and (isinstance(eg, bool) or not isinstance(eg, (int, float))
                           or not math.isfinite(eg) or not 0 <= eg <= 3):
        return None
    if not (ok_in and ok_out):
        return None
    known = tin is not None and tout is not None
    return Verdict(grade=grade, rationale=clean_text(rationale), input_tokens=tin or 0,
                   output_tokens=tout or 0, expected_grade=None if eg is None else float(eg),
                   usage_known=known)


def _encode(verdict: Verdict) -> str:
    return json.dumps(verdict.to_cache(), ensure_ascii=True, separators=(",", ":"),
                      allow_nan=False)


class LabelCache:
    """Verdicts on disk (see module docstring). Thread- and process-safe."""

    key = staticmethod(cache_key)

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory else default_cache_dir()
        self.warnings: list[str] = []
        """Things the user should hear about once (old entries skipped, read-only)."""
        self.writable = True
        self._broken: str | None = None
        self._store: Any = None
        self._counts = {"pickled": 0, "invalid": 0}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the cache directory ({exc}); set `cache_dir` to "
                              "another directory or turn the cache off (`no_cache`)",
                              path=self.directory) from None
        linked = _linked(self.directory)
        if linked is not None:
            self._broken = linked
            return
        dropped = _sanitise(self.directory)
        if dropped:
            self.warnings.append(
                f"warning: the cache in {self.directory} held {dropped} entr"
                f"{'y' if dropped == 1 else 'ies'} naming a file (labeler never stores "
                "files: planted); dropped, and no file touched")
        try:  # SQLite waits up to 60 s for another writer
            self._store = diskcache.Cache(str(self.directory), disk=JSONTextDisk, timeout=60,
                                          **_SETTINGS)
            self._store._sql("PRAGMA trusted_schema = OFF")
        except (sqlite3.Error, OSError, diskcache.Timeout, TypeError, ValueError) as exc:
            self._open_read_only(exc)

    def _open_read_only(self, exc: BaseException) -> None:
        """A database that cannot be opened for writing: read it as it is, or mark it broken."""
        db = self.directory / diskcache.core.DBNAME
        conn: sqlite3.Connection | None = None
        err: BaseException = exc
        # a WAL database in a read-only directory opens only as immutable (no -shm file)
        for mode in ("mode=ro", "mode=ro&immutable=1"):
            try:
                conn = sqlite3.connect(f"{db.resolve().as_uri()}?{mode}", uri=True,
                                       isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA trusted_schema = OFF")
                conn.execute("SELECT key, raw, mode, filename, value FROM Cache LIMIT 1")
                break
            except (sqlite3.Error, OSError, ValueError) as failed:
                err, conn = failed, None
        if conn is None:
            self._broken = _why(err if db.exists() else exc)
            return
        self._store = _ReadOnlyStore(conn)
        self.writable = False
        self.warnings.append(f"warning: the cache in {self.directory} is read-only ({_why(exc)}): "
                             "its answers are used, new ones are not stored")

    def _check(self) -> Any:
        if self._broken is not None:
            raise CacheError(self._broken)
        return self._store

    def _value(self, raw: Any) -> Verdict | None:
        if raw is None:
            return None
        if raw is PICKLED:
            self._skipped("pickled")
            return None
        try:
            verdict = (verdict_of(json.loads(raw))
                       if isinstance(raw, str) and len(raw) < _TEXT_LIMIT else None)
        except (ValueError, RecursionError):  # RecursionError: nested a million deep
            verdict = None
        if verdict is None:
            self._skipped("invalid")
        return verdict

    def _skipped(self, kind: str) -> None:
        self._counts[kind] += 1
        if self._counts[kind] > 1:
            return
        if kind == "pickled":
            self.warnings.append(
                f"warning: the cache in {self.directory} holds answers in an older format "
                "(pickle) that labeler no longer loads, because a planted entry could run "
                "code; they are asked again. If you trust every writer of that directory, "
                f"convert them once with: {MIGRATE_HINT.format(dir=self.directory)}")
        else:
            self.warnings.append(
                f"warning: the cache in {self.directory} holds answers that are not valid "
                "verdicts (a grade outside 0-3, or not a whole number); they are asked again")

    @property
    def skipped(self) -> dict[str, int]:
        """How many entries were not used, by kind (``pickled``, ``invalid``)."""
        return dict(self._counts)

    def get(self, key: str) -> Verdict | None:
        """The cached verdict for ``key``, or ``None``; :class:`CacheError` if unreadable."""
        store = self._check()
        try:
            value = store.get(key)
        except _FAULTS as exc:
            raise CacheError(_why(exc)) from None
        return self._value(value)

    def get_many(self, keys: Iterable[str]) -> list[Verdict | None]:
        """:meth:`get` for many keys, in order (batched SQL reads: fast for big re-runs)."""
        keys = list(keys)
        store = self._check()
        try:
            found = self._fetch_many(store, keys)
        except _FAULTS as exc:
            raise CacheError(_why(exc)) from None
        except (AttributeError, TypeError, ValueError):
            return [self.get(k) for k in keys]  # diskcache internals changed: one by one
        return [self._value(found.get(k)) for k in keys]

    @staticmethod
    def _fetch_many(store: Any, keys: list[str], batch: int = 500) -> dict[str, Any]:
        # diskcache keeps str keys as raw TEXT in its `Cache` table; Disk.fetch decodes values.
        found: dict[str, Any] = {}
        for start in range(0, len(keys), batch):
            part = keys[start:start + batch]
            rows = store._sql("SELECT key, mode, filename, value FROM Cache WHERE raw = 1 "
                              f"AND key IN ({','.join('?' * len(part))})", part).fetchall()
            for key, mode, filename, value in rows:
                found[key] = store._disk.fetch(mode, filename, value, False)
        return found

    def version(self) -> int | None:
        """A number that changes whenever another connection — another job, in this process
        or another — commits to the cache (SQLite's ``data_version``; this object's own
        writes leave it alone). ``None`` when it cannot be read: then assume it changed.

        A job reads it before its bulk lookup; while it is unchanged, no other job has
        stored anything since, so a key not found then is still not there (one cheap PRAGMA
        instead of a lookup before each request)."""
        try:
            row = self._check()._sql("PRAGMA data_version").fetchone()
            return int(row[0])
        except (*_FAULTS, CacheError, AttributeError, TypeError, ValueError, IndexError):
            return None

    def set(self, key: str, verdict: Verdict) -> None:
        """Store a successful verdict (committed at once); :class:`CacheError` on failure.
        A read-only cache stores nothing (it said so once, in :attr:`warnings`)."""
        store = self._check()
        if not self.writable:
            return
        try:
            store.set(key, _encode(verdict))
        except _FAULTS as exc:
            raise CacheError(_why(exc)) from None

    def set_many(self, items: Iterable[tuple[str, Verdict]]) -> int:
        """Store many verdicts in one transaction; returns how many."""
        store = self._check()
        if not self.writable:
            return 0
        n = 0
        try:
            with store.transact():
                for key, verdict in items:
                    store.set(key, _encode(verdict))
                    n += 1
        except _FAULTS as exc:
            raise CacheError(_why(exc)) from None
        return n

    def __contains__(self, key: object) -> bool:
        return self._broken is None and key in self._store

    def __len__(self) -> int:
        return 0 if self._broken is not None else len(self._store)

    def close(self) -> None:
        """Close the SQLite connections."""
        if self._store is not None:
            with contextlib.suppress(*_FAULTS):  # nothing left to save
                self._store.close()

    def __enter__(self) -> LabelCache:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class _ReadOnlyStore:
    """The few reads :class:`LabelCache` makes, over a read-only SQLite connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._disk = JSONTextDisk(".")

    def _sql(self, query: str, args: Iterable[Any] = ()) -> sqlite3.Cursor:
        return self._conn.execute(query, tuple(args))

    def get(self, key: str) -> Any:
        row = self._sql("SELECT mode, filename, value FROM Cache WHERE raw = 1 AND key = ?",
                        (key,)).fetchone()
        return None if row is None else self._disk.fetch(row[0], row[1], row[2], False)

    def __contains__(self, key: object) -> bool:
        return self._sql("SELECT 1 FROM Cache WHERE raw = 1 AND key = ?",
                         (key,)).fetchone() is not None

    def __len__(self) -> int:
        return int(self._sql("SELECT COUNT(*) FROM Cache").fetchone()[0])

    def close(self) -> None:
        self._conn.close()


class _TrustedDisk(diskcache.Disk):
    """diskcache's pickling Disk for :func:`migrate`, which opens and removes no file."""

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        return FOREIGN if filename is not None else super().fetch(mode, filename, value, read)

    def remove(self, file_path: str) -> None:
        """Nothing (see :meth:`JSONTextDisk.remove`)."""


def migrate(directory: str | os.PathLike[str]) -> tuple[int, int]:
    """Convert an old cache (pickled values) in ``directory`` to JSON, in place.

    Loading a pickle runs whatever code it names: call this only on a directory whose every
    writer you trust. Entries that are not valid verdicts are deleted. Returns (converted,
    dropped).

    Usage: ``converted, dropped = migrate("~/.cache/labeler")``
    """
    path = Path(directory).expanduser()
    linked = _linked(path)
    if linked is not None:
        raise ConfigError(linked, path=path)
    if not (path / diskcache.core.DBNAME).is_file():
        raise ConfigError("no labeler cache here (no cache.db)", path=path)
    dropped = _sanitise(path)
    converted = 0
    try:
        with diskcache.Cache(str(path), disk=_TrustedDisk, **_SETTINGS) as old:
            rows = old._sql("SELECT key FROM Cache WHERE raw = 1 AND mode = ?",
                            (diskcache.core.MODE_PICKLE,)).fetchall()
            for (key,) in rows:
                try:
                    verdict = verdict_of(old.get(key))  # the trusted pickle load
                except Exception:  # any value that does not load (too deep, foreign) is dropped
                    verdict = None
                if verdict is None:
                    old.delete(key)
                    dropped += 1
                else:
                    old.set(key, _encode(verdict))  # short text: stored inline, as JSON
                    converted += 1
    except (sqlite3.Error, OSError, diskcache.Timeout, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot migrate the cache ({_why(exc)})", path=path) from None
    return converted, dropped


def _linked(directory: Path) -> str | None:
    """Why the cache in ``directory`` is refused when its database or a journal of it is a
    symbolic link (SQLite would make whatever file it points at a database)."""
    for name in _FILES:
        if (directory / name).is_symlink():
            return (f"{directory / name} is a symbolic link: labeler opens no cache database "
                    "through a link; remove it or use another cache directory")
    return None


def _sanitise(directory: Path) -> int:
    """Drop, before the cache library reads them, what a planted database could turn against
    labeler: rows that name a file, settings the library does not define, counters that are
    not whole numbers. Returns how many rows named a file. A database that cannot be written
    is left as it is (it is then read through :class:`_ReadOnlyStore`, which opens no file)."""
    db = directory / diskcache.core.DBNAME
    if not db.is_file():
        return 0
    try:
        conn = sqlite3.connect(str(db), timeout=60, isolation_level=None)
    except sqlite3.Error:
        return 0
    known, counters = [*_SETTINGS, *diskcache.core.METADATA], list(diskcache.core.METADATA)
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        tables = {row[0] for row in
                  conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        conn.execute("BEGIN IMMEDIATE")
        if "Settings" in tables:
            conn.execute("DELETE FROM Settings WHERE key IS NULL OR key NOT IN "
                         f"({','.join('?' * len(known))})", known)
            conn.execute("UPDATE Settings SET value = 0 WHERE typeof(value) != 'integer' AND "
                         f"key IN ({','.join('?' * len(counters))})", counters)
        dropped = 0
        if "Cache" in tables:
            dropped = conn.execute("DELETE FROM Cache WHERE filename IS NOT NULL").rowcount
        conn.execute("COMMIT")
        return max(dropped, 0)
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


_FAULTS = (sqlite3.Error, OSError, diskcache.Timeout)


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "disk is full" in text or getattr(exc, "errno", None) == 28:
        return f"the disk is full: {text}"
    return text
