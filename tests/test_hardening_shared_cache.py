"""A cache directory shared, synced or unpacked from someone else cannot make labeler touch a
file outside it, crash the job, or copy a planted giant rationale into every output.

Every test plants the hostile row with raw SQL into a real cache, then runs the real CLI
against the local fake server (the fresh answer is stored over the planted row)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main
from labeler.labelling.cache import LabelCache
from labeler.testing import FakeLLMServer

from test_hardening_cache import _keys, _label


def _plant_rows(cache: Path, rows: list[tuple[str, int, str | None, object]]) -> None:
    """Insert (key, mode, filename, value) rows as a hostile writer would."""
    LabelCache(cache).close()  # the real schema
    with sqlite3.connect(cache / "cache.db") as db:
        now = time.time()
        for key, mode, filename, value in rows:
            db.execute("INSERT OR REPLACE INTO Cache (key, raw, store_time, expire_time, "
                       "access_time, access_count, tag, size, mode, filename, value) "
                       "VALUES (?, 1, ?, NULL, ?, 0, NULL, 0, ?, ?, ?)",
                       (key, now, now, mode, filename, value))


def _victims(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "victim").mkdir()
    (tmp_path / "other" / "deep").mkdir(parents=True)
    near, far = tmp_path / "victim" / "precious.txt", tmp_path / "other" / "deep" / "keep.txt"
    near.write_text("precious")
    far.write_text("keep")
    return near, far


@pytest.mark.parametrize("mode", [2, 3, 4])  # binary, text, pickle: every file-backed kind
def test_a_row_naming_a_file_outside_the_cache_never_touches_it(tmp_path: Path,
                                                                mode: int) -> None:
    near, far = _victims(tmp_path)
    cache = tmp_path / "cache"
    from labelkit import make_pairs

    pairs = make_pairs(3)
    with FakeLLMServer() as srv:
        keys = _keys(srv, pairs)
        _plant_rows(cache, [(keys[0], mode, "../victim/precious.txt", None),
                            (keys[1], mode, str(far), None)])
        res, out = _label(srv, tmp_path, cache, pairs)
        again, _ = _label(srv, tmp_path, cache, pairs)
    assert res.exit_code == 0, res.output
    assert near.read_text() == "precious" and far.read_text() == "keep"
    assert res.output.count("naming a file") == 1  # one warning for both rows
    assert len(io.read_labels(out)) == 3
    assert again.exit_code == 0 and io.read_labels(out)["cached"].all()
    with sqlite3.connect(cache / "cache.db") as db:
        assert db.execute("SELECT COUNT(*) FROM Cache WHERE filename IS NOT NULL"
                          ).fetchone()[0] == 0


def test_a_row_planted_while_the_cache_is_open_is_never_opened_nor_removed(
        tmp_path: Path) -> None:
    near, far = _victims(tmp_path)
    cache = LabelCache(tmp_path / "cache")
    from labeler.judges.base import Verdict

    cache.set("k1", Verdict(grade=1))
    with sqlite3.connect(tmp_path / "cache" / "cache.db") as db:
        db.execute("UPDATE Cache SET filename = ?, mode = 2 WHERE key = 'k1'", (str(far),))
    assert cache.get("k1") is None  # a miss, the file is not read
    cache.set("k1", Verdict(grade=2))  # diskcache would delete the old row's file here
    cache._store.delete("k1")
    cache.close()
    assert near.read_text() == "precious" and far.read_text() == "keep"


def test_planted_settings_and_a_deeply_nested_value_warn_and_the_job_goes_on(
        tmp_path: Path) -> None:
    from labelkit import make_pairs

    pairs = make_pairs(3)
    cache = tmp_path / "cache"
    with FakeLLMServer() as srv:
        keys = _keys(srv, pairs)
        _plant_rows(cache, [(keys[0], 1, None, "[" * 200_000 + "]" * 200_000)])
        with sqlite3.connect(cache / "cache.db") as db:
            db.executemany("INSERT OR REPLACE INTO Settings VALUES (?, ?)",
                           [("disk_evil", 1), ("sqlite_user_version", 7), ("count", "many"),
                            ("_sql", "x"), ("eviction_policy", "least-recently-used"),
                            ("disk_min_file_size", 0)])
        res, out = _label(srv, tmp_path, cache, pairs)
        migrated = CliRunner().invoke(main, ["cache", "migrate", str(cache), "--trust"])
        again, _ = _label(srv, tmp_path, cache, pairs)
    assert res.exit_code == 0, res.output
    assert res.output.count("not valid verdicts") == 1
    assert len(io.read_labels(out)) == 3
    assert migrated.exit_code == 0, migrated.output
    assert again.exit_code == 0 and io.read_labels(out)["cached"].all()
    with sqlite3.connect(cache / "cache.db") as db:
        settings = dict(db.execute("SELECT key, value FROM Settings").fetchall())
    assert "disk_evil" not in settings and "_sql" not in settings
    assert settings["eviction_policy"] == "none" and settings["disk_min_file_size"] >= 2**40


def test_a_planted_giant_rationale_is_not_copied_into_the_outputs(tmp_path: Path) -> None:
    from labelkit import make_pairs

    pairs = make_pairs(2)
    cache = tmp_path / "cache"
    with FakeLLMServer() as srv:
        keys = _keys(srv, pairs)
        _plant_rows(cache, [
            (keys[0], 1, None, '{"grade": 2, "rationale": "%s"}' % ("x" * 900_000)),
            (keys[1], 1, None, '{"grade": 1, "rationale": "%s"}' % ("y" * 20_000_000))])
        res, out = _label(srv, tmp_path, cache, pairs)
    assert res.exit_code == 0, res.output
    labels = io.read_labels(out)
    assert labels["rationale"].str.len().max() <= 500
    assert out.stat().st_size < 10_000


def test_cache_db_as_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    from labelkit import make_pairs

    target = tmp_path / "notes.txt"
    target.write_text("my notes\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "cache.db").symlink_to(target)
    with FakeLLMServer() as srv:
        res, out = _label(srv, tmp_path, cache, make_pairs(3))
        migrated = CliRunner().invoke(main, ["cache", "migrate", str(cache), "--trust"])
    assert target.read_text() == "my notes\n"
    assert res.exit_code == 0, res.output
    assert res.output.count("symbolic link") == 1
    assert len(io.read_labels(out)) == 3
    assert migrated.exit_code == 2 and "symbolic link" in migrated.output
