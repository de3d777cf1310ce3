"""The verdict cache: a diskcache (SQLite) directory keyed by what changes the answer.

The key is the SHA-256 of the canonical JSON (sorted keys, no spaces) of a judge's
``cache_material`` — model, prompt text, rendered messages, sampling parameters, vote
index. The value is the verdict only (grade, rationale, tokens, expected grade): never
a key, never headers. Only successes are stored, each as soon as it is judged, so a job
killed at any point loses only what was in flight. Several processes may share one
directory at the same time (SQLite locking).

Usage::

    from labeler.labelling.cache import LabelCache
    with LabelCache("~/.cache/labeler") as cache:
        key = cache.key(judge.cache_material(query, chunk))
        verdict = cache.get(key)          # None when not cached
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import diskcache

from labeler.errors import ConfigError
from labeler.judges.base import Verdict

ENV_VAR = "LABELER_CACHE_DIR"


class CacheError(Exception):
    """The cache could not be read or written (full disk, read-only, locked, corrupt).

    The labelling stage warns once and goes on without the cache: labels cost money, the
    cache only saves it."""


def default_cache_dir() -> Path:
    """``$LABELER_CACHE_DIR``, else ``$XDG_CACHE_HOME/labeler``, else ``~/.cache/labeler``."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "labeler"


def cache_key(material: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``material``."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class LabelCache:
    """Verdicts on disk (see module docstring). Thread- and process-safe."""

    key = staticmethod(cache_key)

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory else default_cache_dir()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # Never evict: labels cost money (and no culling pass on every write: nothing
            # expires). SQLite waits up to 60 s for another writer.
            self._store = diskcache.Cache(str(self.directory), eviction_policy="none",
                                          timeout=60, size_limit=2**62, cull_limit=0)
        except (OSError, diskcache.Timeout) as exc:
            raise ConfigError(f"cannot open the cache directory ({exc}); set `cache_dir` to "
                              "another directory or turn the cache off (`no_cache`)",
                              path=self.directory) from None

    def get(self, key: str) -> Verdict | None:
        """The cached verdict for ``key``, or ``None``; :class:`CacheError` if unreadable."""
        try:
            value = self._store.get(key)
        except _FAULTS as exc:
            raise CacheError(_why(exc)) from None
        return Verdict.from_cache(value) if isinstance(value, dict) else None

    def get_many(self, keys: Iterable[str]) -> list[Verdict | None]:
        """:meth:`get` for many keys, in order (batched SQL reads: fast for big re-runs)."""
        keys = list(keys)
        try:
            found = self._fetch_many(keys)
        except (sqlite3.Error, AttributeError, TypeError, ValueError):
            return [self.get(k) for k in keys]  # diskcache internals changed: one by one
        return [Verdict.from_cache(v) if isinstance(v := found.get(k), dict) else None
                for k in keys]

    def _fetch_many(self, keys: list[str], batch: int = 500) -> dict[str, Any]:
        # diskcache keeps str keys as raw TEXT in its `Cache` table; Disk.fetch decodes values.
        store = self._store
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
            row = self._store._sql("PRAGMA data_version").fetchone()
            return int(row[0])
        except (*_FAULTS, AttributeError, TypeError, ValueError, IndexError):
            return None

    def set(self, key: str, verdict: Verdict) -> None:
        """Store a successful verdict (committed at once); :class:`CacheError` on failure."""
        try:
            self._store.set(key, verdict.to_cache())
        except _FAULTS as exc:
            raise CacheError(_why(exc)) from None

    def set_many(self, items: Iterable[tuple[str, Verdict]]) -> int:
        """Store many verdicts in one transaction; returns how many."""
        n = 0
        try:
            with self._store.transact():
                for key, verdict in items:
                    self._store.set(key, verdict.to_cache())
                    n += 1
        except _FAULTS as exc:
            raise CacheError(_why(exc)) from None
        return n

    def __contains__(self, key: object) -> bool:
        return key in self._store

    def __len__(self) -> int:
        return len(self._store)

    def close(self) -> None:
        """Close the SQLite connections."""
        with contextlib.suppress(*_FAULTS):  # nothing left to save
            self._store.close()

    def __enter__(self) -> LabelCache:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


_FAULTS = (sqlite3.Error, OSError, diskcache.Timeout)


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "disk is full" in text or getattr(exc, "errno", None) == 28:
        return f"the disk is full: {text}"
    return text
