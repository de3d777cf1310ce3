"""A full disk under ``--out`` is a clear error (exit 2) that names the output, with nothing
half-written left behind — not an "unexpected error". The disk fills up for real in the
writer: the file gets its first bytes, then the next write fails with ENOSPC."""

from __future__ import annotations

import errno
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from labeler.cli import main

from labelkit import make_pairs, write_pairs


def _fill_up(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pd.DataFrame.to_json

    def to_json(self: pd.DataFrame, path: object = None, *args: object, **kw: object) -> object:
        if isinstance(path, (str, Path)):
            Path(path).write_text('{"query_id": "q0"')  # the first bytes made it
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(self, path, *args, **kw)

    monkeypatch.setattr(pd.DataFrame, "to_json", to_json)


def test_a_full_disk_under_out_is_a_clear_error_and_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = write_pairs(make_pairs(4), tmp_path / "pairs.jsonl")
    out = tmp_path / "out" / "labels.jsonl"
    _fill_up(monkeypatch)
    res = CliRunner().invoke(main, ["label", "--pairs", str(pairs), "--model", "lexical",
                                    "--out", str(out), "--no-cache"])
    assert res.exit_code == 2, res.output
    assert "disk is full" in res.output and str(out) in res.output
    assert "unexpected" not in res.output
    assert not out.exists() and list(out.parent.iterdir()) == []


def test_a_full_disk_elsewhere_is_exit_2_too(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = write_pairs(make_pairs(4), tmp_path / "pairs.jsonl")

    def full(*args: object, **kw: object) -> None:
        raise OSError(errno.EDQUOT, "Disk quota exceeded", str(tmp_path / "x"))

    monkeypatch.setattr("labeler.io.write_labels", full)
    res = CliRunner().invoke(main, ["label", "--pairs", str(pairs), "--model", "lexical",
                                    "--out", str(tmp_path / "labels.jsonl"), "--no-cache"])
    assert res.exit_code == 2, res.output
    assert "disk is full" in res.output and "unexpected" not in res.output
