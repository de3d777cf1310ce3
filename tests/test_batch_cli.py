"""Batch mode from the command line: `labeler label --batch ...` and `[judge] batch = true`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner, Result
from labelkit import make_pairs, write_pairs
from test_batch import _vllm_run_batch

from labeler import io
from labeler.labelling.batchfile import BatchStore
from labeler.cli import main
from labeler.testing import FakeLLMServer

QUICK = ["--backoff-base", "0.005", "--backoff-max", "0.05"]


def _label(srv: FakeLLMServer, *args: str | Path) -> Result:
    return CliRunner().invoke(main, ["label", "--model", "fake-judge", "--base-url",
                                     srv.base_url, *QUICK, *map(str, args)])


def test_batch_wait_exits_5_without_output_then_the_same_command_collects(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LABELER_BATCH_POLL", "0.01")
    pairs = write_pairs(make_pairs(7), tmp_path / "pairs.jsonl")
    out = tmp_path / "labels.jsonl"
    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=0.5)
        first = _label(srv, "--pairs", pairs, "--out", out, "--batch", "--batch-wait", "0")
        (batch_id,) = srv.batches.batches
        assert first.exit_code == 5, first.output
        assert f"{batch_id} " in first.stderr and "not finished yet" in first.stderr
        assert not out.exists()
        second = _label(srv, "--pairs", pairs, "--out", out, "--batch")
        assert srv.batches.stats()["batches"] == 1 and srv.calls == 0
    assert second.exit_code == 0, second.output
    assert f"batch {batch_id}: completed, 7/7 requests done" in second.stderr
    assert "7 judged, 0 cached, 0 failed" in second.stderr
    assert len(io.read_labels(out)) == 7


def test_killed_after_submission_the_same_command_resumes(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(9), tmp_path / "pairs.jsonl")
    out, cache = tmp_path / "labels.jsonl", tmp_path / "cache"
    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=1.0)
        args = ["label", "--pairs", str(pairs), "--model", "fake-judge", "--base-url",
                srv.base_url, "--out", str(out), "--cache-dir", str(cache), "--batch"]
        proc = subprocess.Popen([sys.executable, "-m", "labeler", *args],
                                stderr=subprocess.DEVNULL, env={**os.environ,
                                                                "LABELER_BATCH_POLL": "0.01"})
        store, deadline = BatchStore(cache / "batches"), time.monotonic() + 30
        while not any(s.batch_id for s in store.live(srv.base_url, "fake-judge")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert not out.exists()
        again = CliRunner(env={"LABELER_BATCH_POLL": "0.01"}).invoke(main, [*args, *QUICK])
        assert srv.batches.stats()["batches"] == 1
    assert again.exit_code == 0, again.output
    assert "resuming batch" in again.stderr and len(io.read_labels(out)) == 9


def test_batch_file_out_then_in_round_trip(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(5), tmp_path / "pairs.jsonl")
    requests, results, out = (tmp_path / "requests.jsonl", tmp_path / "results.jsonl",
                              tmp_path / "labels.csv")
    with FakeLLMServer() as srv:
        wrote = _label(srv, "--pairs", pairs, "--batch-file-out", requests)
        assert wrote.exit_code == 0, wrote.output
        assert "wrote 5 requests" in wrote.stderr and "vllm run-batch" in wrote.stderr
        assert "with --batch-file-in results.jsonl (and --out)" in wrote.stderr
        assert srv.calls == 0 and srv.batches.stats()["requests"] == 0
        _vllm_run_batch(srv, requests, results)
        read = _label(srv, "--pairs", pairs, "--batch-file-in", results, "--out", out)
    assert read.exit_code == 0, read.output
    labels = io.read_labels(out)
    assert (labels["status"] == "ok").all() and len(labels) == 5


def test_batch_options_that_exclude_each_other_exit_2(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(2), tmp_path / "pairs.jsonl")
    with FakeLLMServer() as srv:
        both = _label(srv, "--pairs", pairs, "--out", tmp_path / "o.jsonl", "--batch",
                      "--batch-file-in", tmp_path / "r.jsonl")
        wait = _label(srv, "--pairs", pairs, "--out", tmp_path / "o.jsonl", "--batch-wait", "5")
        over = _label(srv, "--pairs", pairs, "--batch-file-out", pairs)
        no_out = _label(srv, "--pairs", pairs, "--batch")
        assert srv.calls == 0 and srv.batches.stats()["requests"] == 0
    assert both.exit_code == 2 and "exclude each other" in both.stderr
    assert wait.exit_code == 2 and "--batch-wait needs --batch" in wait.stderr
    assert over.exit_code == 2 and "--batch-file-out" in over.stderr
    assert json.loads(pairs.read_text().splitlines()[0])["chunk_id"] == "c0000"  # untouched
    assert no_out.exit_code == 2 and "--out" in no_out.stderr


def _config(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    write_pairs(make_pairs(12), tmp_path / "pairs.jsonl")
    config = tmp_path / "job.toml"
    config.write_text(f"""\
out_dir = "out"
cache_dir = "cache"
inputs = {{pairs = "pairs.jsonl"}}
prices = {{"fake-judge" = {{input = 1.0, output = 2.0, batch_input = 0.25, batch_output = 0.5}}}}
[judge]
model = "fake-judge"
base_url = "{base_url}"
batch = true
{extra}
""", encoding="utf-8")
    return config


def test_run_config_batch_progress_lines_go_to_run_log(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        config = _config(tmp_path, srv.base_url)
        result = CliRunner(env={"LABELER_BATCH_POLL": "0.01"}).invoke(
            main, ["run", str(config)])
        n_lines = sum(len(b) for b in srv.batches.stats()["lines"])
    assert result.exit_code == 0, result.output
    latest = tmp_path / "out" / (tmp_path / "out" / "latest.txt").read_text().strip()
    log = (latest / "run.log").read_text()
    assert "labeler.labelling.batch: batch batch_fake000001: completed" in log
    assert "estimated cost" in log
    summary = json.loads((latest / "manifest.json").read_text())
    labels = io.read_labels(latest / "labels.jsonl")
    assert len(labels) == n_lines
    cost = labels["input_tokens"].sum() * 0.25e-6 + labels["output_tokens"].sum() * 0.5e-6
    assert abs(summary["usage"]["cost_usd"] - cost) < 1e-12


def test_run_config_batch_wait_exits_5_then_the_next_run_collects(tmp_path: Path) -> None:
    runner = CliRunner(env={"LABELER_BATCH_POLL": "0.01"})
    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=0.5)
        config = _config(tmp_path, srv.base_url, "batch_wait = 0")
        first = runner.invoke(main, ["run", str(config)])
        assert first.exit_code == 5, first.output
        assert "not finished yet" in first.stderr
        assert not (tmp_path / "out" / "latest.txt").exists()
        (partial,) = (tmp_path / "out" / "runs").iterdir()
        assert "left unfinished" in (partial / "run.log").read_text()
        config.write_text(config.read_text().replace("batch_wait = 0", "batch_wait = 30"))
        second = runner.invoke(main, ["run", str(config)])
        assert srv.batches.stats()["batches"] == 1
    assert second.exit_code == 0, second.output
    assert (tmp_path / "out" / "latest.txt").exists()
