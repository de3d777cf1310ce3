"""A cache directory someone else wrote: planted pickles, invalid values, a corrupt or
read-only database — none runs code, none becomes a label, none stops the job.

Every test plants the entry the way an attacker or a broken disk would (diskcache's own
pickling ``Disk``, raw SQL, a text file as ``cache.db``), then runs the real CLI against the
local fake server.
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import diskcache
import pandas as pd
import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main
from labeler.labelling.cache import LabelCache, cache_key
from labeler.testing import FakeLLMServer

from labelkit import judge_for, make_pairs, server_grades, write_pairs

FAST = ("--backoff-base", "0.01", "--backoff-max", "0.05")


class _Payload:
    """Unpickling this runs ``open(path, 'w')``: proof that a lookup executed code."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def _keys(srv: FakeLLMServer, pairs: pd.DataFrame) -> list[str]:
    judge = judge_for(srv)
    return [cache_key(judge.cache_material(q, c)) for q, c in zip(pairs["query"], pairs["chunk"])]


def _label(srv: FakeLLMServer, tmp: Path, cache: Path, pairs: pd.DataFrame, *args: str
           ) -> tuple[Any, Path]:
    src = write_pairs(pairs, tmp / "pairs.jsonl")
    out = tmp / "labels.jsonl"
    res = CliRunner().invoke(main, ["label", "--pairs", str(src), "--model", "fake-judge",
                                    "--base-url", srv.base_url, "--out", str(out),
                                    "--cache-dir", str(cache), *FAST, *args])
    return res, out


def _plant(cache: Path, items: dict[str, Any]) -> None:
    """Store ``items`` with diskcache's default (pickling) Disk, as an old labeler did."""
    with diskcache.Cache(str(cache)) as raw:
        for k, v in items.items():
            raw.set(k, v)


def test_a_planted_pickle_never_runs_and_its_pair_is_asked(tmp_path: Path) -> None:
    pairs = make_pairs(4)
    proof = tmp_path / "pwned"
    cache = tmp_path / "cache"
    with FakeLLMServer() as srv:
        keys = _keys(srv, pairs)
        _plant(cache, {keys[0]: _Payload(proof), keys[1]: {"grade": 3, "rationale": "old"}})
        res, out = _label(srv, tmp_path, cache, pairs)
        grades = server_grades(srv)
    assert not proof.exists()
    assert res.exit_code == 0, res.output
    labels = io.read_labels(out)
    assert not labels["cached"].any()  # the old pickled verdict is not trusted either
    assert labels["grade"].tolist() == [grades[c] for c in labels["chunk_id"]]
    assert res.output.count("labeler cache migrate") == 1  # one clear message, with the fix


def test_migrate_with_trust_converts_an_old_cache_and_a_rerun_is_free(tmp_path: Path) -> None:
    pairs = make_pairs(3)
    cache = tmp_path / "cache"
    with FakeLLMServer() as srv:
        keys = _keys(srv, pairs)
        _plant(cache, {keys[0]: {"grade": 2, "rationale": "old", "input_tokens": 5,
                                 "output_tokens": 1, "expected_grade": None},
                       keys[1]: {"grade": 9}, keys[2]: {"grade": 1, "rationale": "x"}})
        refused = CliRunner().invoke(main, ["cache", "migrate", str(cache)])
        assert refused.exit_code == 2 and "--trust" in refused.output
        done = CliRunner().invoke(main, ["cache", "migrate", str(cache), "--trust"])
        assert done.exit_code == 0, done.output
        assert "2 converted" in done.output and "1 dropped" in done.output
        with diskcache.Cache(str(cache)) as raw:  # now plain JSON text, no pickle left
            modes = {m for (m,) in raw._sql("SELECT mode FROM Cache").fetchall()}
        assert modes == {diskcache.core.MODE_RAW}
        _, out = _label(srv, tmp_path, cache, pairs)
        assert srv.calls == 1  # only the invalid one is asked
    labels = io.read_labels(out)
    assert labels["cached"].tolist() == [True, False, True]
    assert labels["grade"].tolist()[0] == 2 and labels["grade"].tolist()[2] == 1


@pytest.mark.parametrize("bad", [
    {"grade": 9}, {"grade": -2}, {"grade": 2.9}, {"grade": True}, {"grade": "3"},
    {"rationale": "no grade"}, {"grade": 2, "input_tokens": -5}, [2], "2",
    {"grade": 2, "expected_grade": 7.5},
])
def test_an_invalid_cached_value_is_a_miss_with_one_warning(tmp_path: Path, bad: Any) -> None:
    pairs = make_pairs(3)
    cache = tmp_path / "cache"
    with FakeLLMServer() as srv:
        keys = _keys(srv, pairs)
        LabelCache(cache).close()
        with diskcache.Cache(str(cache)) as raw:  # JSON text, as the new format stores it
            for k in keys[:2]:
                raw.set(k, json.dumps(bad))
        res, out = _label(srv, tmp_path, cache, pairs)
        grades = server_grades(srv)
        assert srv.calls == 3
    assert res.exit_code == 0, res.output
    labels = io.read_labels(out)
    assert labels["grade"].tolist() == [grades[c] for c in labels["chunk_id"]]
    assert res.output.count("not valid verdicts") == 1


def test_a_text_file_as_cache_db_warns_once_and_the_job_goes_on(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "cache.db").write_text("this is not a database\n" * 100)
    with FakeLLMServer() as srv:
        res, out = _label(srv, tmp_path, cache, make_pairs(4))
    assert res.exit_code == 0, res.output
    assert len(io.read_labels(out)) == 4
    assert res.output.count("warning: cannot use the cache") == 1


def test_a_malformed_database_warns_once_and_the_job_goes_on(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pairs = make_pairs(40)
    with FakeLLMServer() as srv:
        assert _label(srv, tmp_path, cache, pairs)[0].exit_code == 0
        db = cache / "cache.db"
        data = bytearray(db.read_bytes())
        data[100:len(data)] = b"\xff" * (len(data) - 100)  # pages overwritten
        db.write_bytes(bytes(data))
        for extra in ("cache.db-wal", "cache.db-shm"):
            (cache / extra).unlink(missing_ok=True)
        res, out = _label(srv, tmp_path, cache, pairs)
    assert res.exit_code == 0, res.output
    assert len(io.read_labels(out)) == 40
    assert res.output.count("warning: cannot use the cache") == 1


def _freeze(paths: list[Path]) -> list[Path]:
    """Make ``paths`` read-only (immutable for root, which ignores permissions)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", *map(str, paths)], check=True)
    else:
        for p in paths:
            p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)
    return paths


def _thaw(paths: list[Path]) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
    else:
        for p in paths:
            p.chmod(stat.S_IMODE(p.stat().st_mode) | 0o200)


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("chattr") is None,
                    reason="root needs chattr to make a directory read-only")
def test_a_read_only_cache_serves_its_hits(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pairs = make_pairs(6)
    with FakeLLMServer() as srv:
        assert _label(srv, tmp_path, cache, pairs.iloc[:4])[0].exit_code == 0
        srv.reset()
        frozen = _freeze([*cache.iterdir(), cache])
        try:
            res, out = _label(srv, tmp_path, cache, pairs)
        finally:
            _thaw(frozen)
        assert res.exit_code == 0, res.output
        assert srv.calls == 2
    labels = io.read_labels(out)
    assert labels["cached"].tolist() == [True] * 4 + [False] * 2
    assert res.output.count("read-only") == 1


def test_the_cache_stores_json_text_never_a_pickle(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        _label(srv, tmp_path, tmp_path / "cache", make_pairs(3))
    with sqlite3.connect(tmp_path / "cache" / "cache.db") as conn:
        rows = conn.execute("SELECT mode, value FROM Cache").fetchall()
    assert len(rows) == 3
    for mode, value in rows:
        assert mode == diskcache.core.MODE_RAW and isinstance(value, str)
        assert set(json.loads(value)) >= {"grade", "rationale"}
    assert pickle.PROTO not in b"".join(v.encode() for _, v in rows)
