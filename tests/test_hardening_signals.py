"""SIGTERM and SIGINT in the middle of a labelling job (cron timeouts, systemd, CI
cancellation, Ctrl-C): real signals sent to a real ``labeler`` process labelling against a
slow local fake server. Every pair gets its record, nothing is left half-written, one line
says how to resume, the exit status is 128 + the signal, and a re-run finishes the job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labeler import io
from labeler.testing import FakeLLMServer

from labelkit import make_pairs, write_job, write_pairs

N = 40


def _start(args: list[str], env_cache: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "LABELER_CACHE_DIR": str(env_cache), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "labeler", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _signal_after(proc: subprocess.Popen[str], srv: FakeLLMServer, sig: int,
                  calls: int = 6) -> tuple[int, str, str]:
    deadline = time.monotonic() + 60
    while srv.calls < calls and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_label_writes_every_record_and_resumes(tmp_path: Path, sig: int, code: int) -> None:
    pairs = write_pairs(make_pairs(N), tmp_path / "pairs.jsonl")
    out = tmp_path / "labels.jsonl"
    cache = tmp_path / "cache"
    with FakeLLMServer(latency=0.15) as srv:
        args = ["label", "--pairs", str(pairs), "--model", "fake-judge", "--base-url",
                srv.base_url, "--out", str(out), "--concurrency", "2"]
        rc, _, err = _signal_after(_start(args, cache), srv, sig)
        assert rc == code, err
        assert "Traceback" not in err and "CancelledError" not in err
        labels = io.read_labels(out)
        assert labels["chunk_id"].tolist() == make_pairs(N)["chunk_id"].tolist()
        ok, failed = labels[labels["status"] == "ok"], labels[labels["status"] == "failed"]
        assert len(ok) >= 4 and len(failed) >= 1
        assert failed["error"].str.startswith("interrupted").all()
        assert failed["grade"].isna().all()
        resume = [line for line in err.splitlines() if "run the same command again" in line]
        assert len(resume) == 1
        assert not list(tmp_path.glob(".labels.jsonl.*"))  # no temporary file left behind
        srv.reset()
        srv.set(latency=0.0)  # slow answers were only there to catch the job mid-way
        again = subprocess.run([sys.executable, "-m", "labeler", *args], text=True,
                               capture_output=True,
                               env={**os.environ, "LABELER_CACHE_DIR": str(cache)})
        assert again.returncode == 0, again.stderr
        assert srv.calls == len(failed)  # only the interrupted pairs are asked again
    assert (io.read_labels(out)["status"] == "ok").all()


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_run_leaves_no_partial_directory(tmp_path: Path, sig: int, code: int) -> None:
    with FakeLLMServer(latency=0.15) as srv:
        config = write_job(tmp_path, f"""\
out_dir = "out"
cache_dir = "cache"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 2
[judge]
model = "fake-judge"
base_url = "{srv.base_url}"
concurrency = 2
""")
        rc, _, err = _signal_after(_start(["run", str(config)], tmp_path / "cache"), srv, sig)
    assert rc == code, err
    assert "Traceback" not in err
    runs = tmp_path / "out" / "runs"
    assert not list(runs.glob("*.partial"))
    (kept,) = runs.glob("*.interrupted")
    labels = io.read_labels(kept / "labels.jsonl")
    assert (labels["status"] == "ok").any() and labels["error"].str.startswith("interrupted").any()
    assert not (tmp_path / "out" / "latest.txt").exists()
    assert sum("run the same command again" in line for line in err.splitlines()) == 1
