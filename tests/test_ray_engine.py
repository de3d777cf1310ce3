"""``labeler label --engine ray``: Ray Data actors running labeler's own judge, against the fake
server over real HTTP (faults included), with a kill and a resume.

Two ways in, as users have them: a cluster joined with ``--ray-address`` (one head, started by
``ray start --head`` for this module, serves the kill-and-resume and the refused-key jobs) and
a Ray started for the job alone (the SIGTERM job). Every Ray run is a CLI subprocess with a
hard timeout (its process group is killed after it: a Ray started by a killed driver leaves
agents behind). Marked ``ray``; skipped without the ``ray`` extra
(``pip install -e '.[test,ray]'``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from labeler.judges import make_judge
from labeler.labelling.cache import LabelCache
from labeler.errors import ConfigError
from labeler.settings import JudgeConfig, judge_config
from labeler.testing import FakeLLMServer, FaultPlan

KEY = "sk-raytest-0123456789abcdef"
MODEL = "fake-judge"
REFUSE = "REFUSE-THIS-CHUNK"
FAULTY = FaultPlan(rate_limit=0.05, retry_after=0.05, server_error=0.04,
                   server_error_text=0.04, malformed=0.03, bad_body=0.02,
                   bad_body_kind="not_json", refuse_marker=REFUSE)
RUN_TIMEOUT = 120.0


def _env(ray_tmp: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "OPENAI_"))}
    # RAY_AUTH_MODE: a head and its drivers agree on no token (Ray >= 2.5x defaults to one,
    # kept in the home directory, which a test should neither read nor write)
    env.update(OPENAI_API_KEY=KEY, RAY_TMPDIR=ray_tmp, PYTHONUNBUFFERED="1",
               RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    return env


def _write_pairs(path: Path, n: int) -> pd.DataFrame:
    df = pd.DataFrame({
        "query_id": [f"q{i % 37}" for i in range(n)],
        "query": [f"what is topic {i % 37}" for i in range(n)],
        "chunk_id": [f"d{i}" for i in range(n)],
        "chunk": [f"passage {i} about topic {i % 41}" + (f" {REFUSE}" if i % 97 == 5 else "")
                  for i in range(n)]})
    df.to_json(path, orient="records", lines=True)
    return df


def _label_args(srv: FakeLLMServer, tmp: Path, out: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "labeler", "label", "--pairs", str(tmp / "pairs.jsonl"),
            "--model", MODEL, "--base-url", srv.base_url, "--cache-dir", str(tmp / "cache"),
            "--out", str(tmp / out), "--concurrency", "8", "--backoff-base", "0.01",
            "--backoff-max", "0.2", "--max-retries", "4", *extra]


@contextlib.contextmanager
def _cli(args: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """The CLI in its own process group, which is killed (with any Ray left) on the way out."""
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _run(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    with _cli(args, env) as proc:
        try:
            _, err = proc.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"labeler label did not finish within {RUN_TIMEOUT:g}s")
        return proc.returncode, err


def _quiet(srv: FakeLLMServer, still: float = 1.5, limit: float = 60.0) -> None:
    """Wait until the server has had no request for ``still`` seconds."""
    deadline = time.monotonic() + limit
    seen, since = srv.calls, time.monotonic()
    while time.monotonic() - since < still:
        assert time.monotonic() < deadline, "requests went on long after the kill"
        time.sleep(0.2)
        if srv.calls != seen:
            seen, since = srv.calls, time.monotonic()


def _keys(df: pd.DataFrame, base_url: str) -> dict[str, int]:
    """The cache key of each pair (as either engine computes it) → the pair's row."""
    judge = make_judge(JudgeConfig(model=MODEL, base_url=base_url), api_key=KEY)
    return {LabelCache.key(judge.cache_material(q, c)): i
            for i, (q, c) in enumerate(zip(df["query"], df["chunk"]))}


def _decided(srv: FakeLLMServer, df: pd.DataFrame, into: dict[int, set[int]]) -> None:
    """Add the grades the server answered for each pair (row) since its last reset."""
    for rec in srv.requests:
        if rec["status"] == 200 and rec["fault"] is None:
            into.setdefault(_row(rec, df), set()).add(int(rec["grade"]))


def _row(rec: dict[str, object], df: pd.DataFrame) -> int:
    body = rec["body"]
    assert isinstance(body, dict)
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    found = re.search(r"<chunk>\n(.*?)\n</chunk>", user, re.S)
    assert found is not None
    return int(df.index[df["chunk"] == found.group(1)][0])


def _asked(srv: FakeLLMServer, df: pd.DataFrame) -> set[int]:
    """The pairs (rows) the server was asked about since its last reset."""
    return {_row(rec, df) for rec in srv.requests}


def _cached_rows(cache_dir: Path, keys: dict[str, int]) -> set[int]:
    with LabelCache(cache_dir) as cache:
        return {row for key, row in keys.items() if cache.get(key) is not None}


@pytest.fixture()
def ray_tmp() -> Iterator[str]:
    pytest.importorskip("ray.data", reason="the ray extra is not installed")
    path = tempfile.mkdtemp(prefix="lray", dir="/tmp")  # short: Ray's socket paths
    yield path
    shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class Head:
    address: str
    tmp: str


@pytest.fixture(scope="module")
def ray_head() -> Iterator[Head]:
    """A one-node Ray cluster (``ray start --head --block``, its own process group, killed
    whole after the module's tests)."""
    pytest.importorskip("ray.data", reason="the ray extra is not installed")
    tmp = tempfile.mkdtemp(prefix="lrayh", dir="/tmp")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ray_cli = Path(sys.executable).with_name("ray")
    args = [str(ray_cli), "start", "--head", f"--port={port}", "--num-cpus=4",
            "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={tmp}",
            "--node-ip-address=127.0.0.1", "--block"]
    proc = subprocess.Popen(args, env=_env(tmp), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        started = threading.Event()
        seen: list[str] = []

        def watch() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                seen.append(line)
                if "Ray runtime started" in line:
                    started.set()

        threading.Thread(target=watch, daemon=True).start()
        if not started.wait(RUN_TIMEOUT):
            pytest.fail("ray start --head did not start: " + "".join(seen[-20:]))
        yield Head(f"127.0.0.1:{port}", tmp)
    finally:
        # SIGKILL: on SIGTERM a head that has run jobs drains for up to 30 s first
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


def test_engine_settings_are_checked_where_they_are_declared() -> None:
    with pytest.raises(ConfigError, match="`engine` ray and `batch` exclude each other"):
        judge_config(model=MODEL, engine="ray", batch=True)
    with pytest.raises(ConfigError, match="`ray_actors` needs `engine` ray"):
        judge_config(model=MODEL, ray_actors=2)
    with pytest.raises(ConfigError, match="ray_actors"):
        judge_config(model=MODEL, engine="ray", ray_actors=0)
    cfg = judge_config(model=MODEL, engine="ray", ray_address="auto", ray_actors=3)
    assert (cfg.engine, cfg.ray_address, cfg.ray_actors) == ("ray", "auto", 3)
    assert "engine" not in cfg.judge_options()  # the judge (and the cache key) never see it


def test_engine_ray_without_ray_exits_2_with_the_install_hint(tmp_path: Path) -> None:
    _write_pairs(tmp_path / "pairs.jsonl", 3)
    code = ("import sys; sys.modules['ray'] = None; sys.modules['ray.data'] = None; "
            "from labeler.cli import run; sys.argv[0] = 'labeler'; run()")
    args = [sys.executable, "-c", code, "label", "--pairs", str(tmp_path / "pairs.jsonl"),
            "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1", "--no-cache",
            "--out", str(tmp_path / "out.jsonl"), "--engine", "ray"]
    res = subprocess.run(args, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "OPENAI_API_KEY": KEY})
    assert res.returncode == 2, res.stderr
    assert "pip install 'labeler[ray]'" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.ray
def test_ray_engine_faults_kill_resume_then_local_all_cached(tmp_path: Path,
                                                             ray_head: Head) -> None:
    """A faulty server; a Ray job killed mid-way; the Ray re-run asks only the pairs the
    cache lacks; every pair once, graded as the server decided or failed with the reason;
    then the local engine re-asks only the failed pairs, and a last run is all cache hits."""
    n = 400
    df = _write_pairs(tmp_path / "pairs.jsonl", n)
    decided: dict[int, set[int]] = {}
    env = _env(ray_head.tmp)
    on_head = ("--engine", "ray", "--ray-address", ray_head.address)
    with FakeLLMServer(latency=0.15, faults=FAULTY, api_key=KEY) as srv:
        keys = _keys(df, srv.base_url)
        # 1. killed once a fair share of the pairs is cached (SIGKILL: nothing cleaned up)
        with _cli(_label_args(srv, tmp_path, "killed.jsonl", *on_head,
                              "--ray-actors", "2"), env) as proc:
            deadline = time.monotonic() + RUN_TIMEOUT
            while time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.3)
                if len(_cached_rows(tmp_path / "cache", keys)) >= n // 5:
                    break
            assert proc.poll() is None, f"finished before the kill: {proc.stderr.read()}"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        _quiet(srv)  # the actors of a killed driver die within seconds; their last requests
        assert not (tmp_path / "killed.jsonl").exists()
        cached = _cached_rows(tmp_path / "cache", keys)
        assert n // 5 <= len(cached) < n
        calls_killed = srv.calls
        _decided(srv, df, decided)

        # 2. the Ray re-run asks exactly the pairs not cached, each at most a few times
        srv.set(latency=0.01)
        srv.reset()
        # (one actor: two were killed above; each actor costs seconds of CPU to start)
        code, err = _run(_label_args(srv, tmp_path, "labels.jsonl", *on_head,
                                     "--ray-actors", "1"), env)
        assert code == 3, err  # the refused pairs failed
        asked = _asked(srv, df)
        assert asked == set(range(n)) - cached
        _decided(srv, df, decided)
        assert srv.calls <= 2 * 5 * len(asked)  # (1 + retries) x a correction, at most
        assert calls_killed + srv.calls < 2 * 5 * n
        out = pd.read_json(tmp_path / "labels.jsonl", lines=True, dtype={"grade": "Int64"})
        assert len(out) == n and not out.duplicated(["query_id", "chunk_id"]).any()
        assert out["chunk_id"].tolist() == df["chunk_id"].tolist()
        ok = out["status"] == "ok"
        assert ok.sum() > 0.9 * n
        assert all(out.at[i, "grade"] in decided[i] for i in out.index[ok])
        assert out.loc[ok & out.index.isin(list(cached)), "cached"].all()
        assert not out.loc[ok & ~out.index.isin(list(cached)), "cached"].any()
        refused = df["chunk"].str.contains(REFUSE)
        assert (~ok[refused]).all() and out.loc[refused, "error"].str.contains("filtered").all()
        failed = out[~ok]
        assert failed["error"].str.len().gt(0).all() and failed["grade"].isna().all()
        judged = ok & ~out.index.isin(list(cached))
        assert (out.loc[judged, "input_tokens"] > 0).all()
        assert (out.loc[judged, "attempts"] >= 1).all()
        summary = err.strip().splitlines()
        assert any(f"labelled {n} pairs" in line for line in summary), err
        assert f"{srv.calls} calls" in err

        # 3. the local engine re-asks only the failed pairs (the server now answers them)
        srv.set(faults=FaultPlan())
        srv.reset()
        code, err = _run(_label_args(srv, tmp_path, "local.jsonl", "--engine", "local"), env)
        assert code == 0, err
        assert _asked(srv, df) == set(failed.index)
        _decided(srv, df, decided)
        local = pd.read_json(tmp_path / "local.jsonl", lines=True, dtype={"grade": "Int64"})
        assert (local["status"] == "ok").all()
        assert local.loc[ok, "grade"].tolist() == out.loc[ok, "grade"].tolist()
        assert all(local.at[i, "grade"] in decided[i] for i in local.index)
        assert local.loc[ok, "cached"].all() and not local.loc[~ok, "cached"].any()

        # 4. and then everything is a cache hit, for either engine's labels
        srv.reset()
        code, err = _run(_label_args(srv, tmp_path, "again.jsonl", "--engine", "local"), env)
        assert code == 0, err
        assert srv.calls == 0 and "0 calls" in err
        again = pd.read_json(tmp_path / "again.jsonl", lines=True, dtype={"grade": "Int64"})
        assert again["cached"].all()
        assert again["grade"].tolist() == local["grade"].tolist()

    # the key reached the actors (the server demands it) and was never written down
    for path in [*tmp_path.rglob("*"), *Path(ray_head.tmp).rglob("*")]:
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError):
                assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.ray
def test_ray_engine_key_refused_mid_job_records_every_pair(tmp_path: Path,
                                                           ray_head: Head) -> None:
    """The endpoint refuses the key after some answers: the job stops early with exit 2,
    every pair still has a record (judged, or failed saying why), as with the local engine."""
    n = 200
    df = _write_pairs(tmp_path / "pairs.jsonl", n)
    env = _env(ray_head.tmp)
    with FakeLLMServer(latency=0.01, api_key=KEY, revoke_after=60) as srv:
        code, err = _run(_label_args(srv, tmp_path, "labels.jsonl", "--engine", "ray",
                                     "--ray-address", ray_head.address, "--ray-actors", "2"),
                         env)
        assert code == 2, err
        out = pd.read_json(tmp_path / "labels.jsonl", lines=True, dtype={"grade": "Int64"})
        assert len(out) == n and out["chunk_id"].tolist() == df["chunk_id"].tolist()
        ok = out["status"] == "ok"
        assert 0 < ok.sum() <= 60  # the answers before the key was refused
        failed = out[~ok]
        assert failed["error"].str.contains("key|stopped", regex=True).all(), failed["error"]
        assert "the job stopped early" in err
        assert KEY not in err and KEY not in (tmp_path / "labels.jsonl").read_text()
        assert srv.calls < 2 * n
    assert json.dumps(KEY)[1:-1] not in err


@pytest.mark.ray
def test_ray_engine_sigterm_writes_every_record_and_exits_143(tmp_path: Path,
                                                              ray_tmp: str) -> None:
    """SIGTERM (a scheduler's timeout) stops the Ray job as it stops the local one: what came
    back is kept and cached, every other pair is recorded failed as interrupted, exit 143."""
    n = 200
    df = _write_pairs(tmp_path / "pairs.jsonl", n)
    with FakeLLMServer(latency=0.2, api_key=KEY) as srv:
        keys = _keys(df, srv.base_url)
        with _cli(_label_args(srv, tmp_path, "labels.jsonl", "--engine", "ray",
                              "--ray-actors", "1"), _env(ray_tmp)) as proc:
            deadline = time.monotonic() + RUN_TIMEOUT
            while time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.3)
                if _cached_rows(tmp_path / "cache", keys):
                    break
            assert proc.poll() is None, "finished before the signal"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        assert proc.returncode == 143, err
    out = pd.read_json(tmp_path / "labels.jsonl", lines=True, dtype={"grade": "Int64"})
    assert out["chunk_id"].tolist() == df["chunk_id"].tolist()
    ok = out["status"] == "ok"
    cached = _cached_rows(tmp_path / "cache", keys)
    assert 0 < ok.sum() < n and set(out.index[ok]) <= cached
    assert out.loc[~ok, "error"].str.startswith("interrupted (SIGTERM)").all()
    assert "interrupted" in err
