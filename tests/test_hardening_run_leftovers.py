"""``labeler run`` against a hostile config and a killed predecessor: a NUL in a path is a
clear error naming the key (exit 2), a value of the wrong TOML type (``true`` for a count,
``"10"`` for a number) is refused rather than coerced, and a ``runs/<stamp>.partial`` left by
a run killed with ``kill -9`` is found by the next run, kept as ``<stamp>.killed`` and
reported."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import main

from labelkit import write_job

JOB = """\
out_dir = "out"
k = [10]
[inputs]
queries = "{queries}"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 2
[judge]
model = "lexical"
"""


@pytest.mark.parametrize(("queries", "key"), [
    ("data/queries.tsv\\u0000.evil", "inputs.queries"),
    ("data/queries.tsv", "judge.prompt"),
])
def test_a_nul_in_a_config_value_is_exit_2_naming_the_key(tmp_path: Path, queries: str,
                                                          key: str) -> None:
    text = JOB.format(queries=queries)
    if key == "judge.prompt":
        text += 'prompt = "default\\u0000"\n'
    config = write_job(tmp_path, text)
    res = CliRunner().invoke(main, ["run", str(config)])
    assert res.exit_code == 2, res.output
    assert key in res.output and "NUL" in res.output and "unexpected" not in res.output
    assert not (tmp_path / "out" / "runs").exists()


@pytest.mark.parametrize(("line", "key"), [
    ("k = [true]", "k.0"), ('k = ["10"]', "k.0"), ("k = [10.5]", "k.0"),
])
def test_config_values_are_never_coerced(tmp_path: Path, line: str, key: str) -> None:
    text = JOB.format(queries="data/queries.tsv").replace("k = [10]", line)
    config = write_job(tmp_path, text + "concurrency = true\n")
    res = CliRunner().invoke(main, ["run", str(config), "--check"])
    assert res.exit_code == 2, res.output
    assert key in res.output and "judge.concurrency" in res.output


def test_a_run_killed_with_sigkill_is_found_and_reported_by_the_next(tmp_path: Path) -> None:
    config = write_job(tmp_path, JOB.format(queries="data/queries.tsv"))
    code = ("import os, sys, signal; from labeler.pipeline import rundir; "
            "from pathlib import Path; out = Path(sys.argv[1]); "
            "lock = rundir.hold_lock(out); lock.__enter__(); "
            "d = rundir.new_run_dir(out); (d / 'labels.jsonl').write_text('{}'); "
            "print(d, flush=True); os.kill(os.getpid(), signal.SIGKILL)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = Path(proc.stdout.strip())
    assert left.name.endswith(".partial") and left.is_dir()
    time.sleep(1.1)  # the next run gets its own second
    res = CliRunner().invoke(main, ["run", str(config)])
    assert res.exit_code == 0, res.output
    runs = sorted(p.name for p in (tmp_path / "out" / "runs").iterdir())
    assert not [r for r in runs if r.endswith(".partial")]
    killed = left.with_name(left.name.replace(".partial", ".killed"))
    assert killed.is_dir() and (killed / "labels.jsonl").is_file()
    assert left.name in res.output and "died" in res.output
    latest = (tmp_path / "out" / "latest.txt").read_text().strip()
    assert not latest.endswith(".killed")
    assert os.path.basename(latest) in runs
