"""The verdict cache: keys, re-runs with zero calls, kill -9 resumption, shared directories."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from labeler import io
from labeler.labelling.cache import LabelCache, cache_key, default_cache_dir
from labeler.cli import main
from labeler.judges import Verdict
from labeler.labelling.stage import label_pairs
from labeler.labelling.limits import RetryPolicy
from labeler.testing import FakeLLMServer, FaultPlan

from labelkit import FAST, judge_for, make_pairs, server_grades, write_pairs


def test_key_is_canonical_and_covers_what_changes_the_answer() -> None:
    with FakeLLMServer() as srv:
        base = judge_for(srv).cache_material("q", "c")
        assert cache_key(base) == cache_key(dict(reversed(list(base.items()))))
        variants = [judge_for(srv, temperature=0.3), judge_for(srv, max_tokens=20),
                    judge_for(srv, logprobs=True), judge_for(srv, prompt="umbrela-style")]
        keys = {cache_key(j.cache_material("q", "c")) for j in variants}
        keys |= {cache_key(judge_for(srv).cache_material("q2", "c")),
                 cache_key(judge_for(srv).cache_material("q", "c2")),
                 cache_key(judge_for(srv, samples=3).cache_material("q", "c", 1)),
                 cache_key(judge_for(srv, samples=3).cache_material("q", "c", 2))}
        assert cache_key(base) not in keys and len(keys) == 8
        other = judge_for(srv)
        other.model = "another-model"
        assert cache_key(other.cache_material("q", "c")) != cache_key(base)


def test_cache_round_trip_and_default_directory(tmp_path: Path) -> None:
    assert default_cache_dir() == Path(os.environ["LABELER_CACHE_DIR"])
    v = Verdict(grade=2, rationale="r", input_tokens=10, output_tokens=3, expected_grade=1.9,
                raw="the raw answer")
    with LabelCache(tmp_path / "c") as cache:
        cache.set("k", v)
        assert "k" in cache and len(cache) == 1
        got = cache.get("k")
        assert cache.get("missing") is None
        many = [cache_key({"n": i}) for i in range(1200)]  # more than one SQL batch
        cache.set_many((k, Verdict(grade=i % 4)) for i, k in enumerate(many[::2]))
        looked_up = cache.get_many(["k", "missing", *many])
        assert looked_up == [cache.get(k) for k in ["k", "missing", *many]]
        assert looked_up[2].grade == 0 and looked_up[3] is None and looked_up[4].grade == 1
    assert got == Verdict(grade=2, rationale="r", input_tokens=10, output_tokens=3,
                          expected_grade=1.9)


def test_rerun_of_a_finished_job_makes_zero_calls_even_with_the_server_gone(
        tmp_path: Path) -> None:
    pairs = make_pairs(30)
    with LabelCache(tmp_path / "cache") as cache:
        with FakeLLMServer() as srv:
            judge = judge_for(srv)
            first = label_pairs(pairs, judge, cache=cache, retry=FAST)
            srv.reset()
            second = label_pairs(pairs, judge, cache=cache, retry=FAST)
            assert srv.calls == 0
        # The endpoint is down now: no preflight is needed, every label comes from the cache.
        third = label_pairs(pairs, judge, cache=cache, retry=FAST)
    assert second.summary.calls == 0 and second.summary.cached == 30
    assert second.records["cached"].all() and (second.records["attempts"] == 0).all()
    assert second.summary.input_tokens == 0
    for again in (second, third):
        assert again.records["grade"].tolist() == first.records["grade"].tolist()
        assert again.records["rationale"].tolist() == first.records["rationale"].tolist()


def test_failures_are_not_cached_and_only_they_are_asked_again(tmp_path: Path) -> None:
    pairs = make_pairs(20)
    with LabelCache(tmp_path / "cache") as cache, FakeLLMServer() as srv:
        judge = judge_for(srv, structured="json_schema")
        srv.set(faults=FaultPlan(unavailable=0.3))

        first = label_pairs(pairs, judge, cache=cache, retry=RetryPolicy(0, 0, 0))
        n_failed = first.summary.failed
        assert 0 < n_failed < 20 and len(cache) == 20 - n_failed
        srv.set(faults=FaultPlan())
        srv.reset()
        second = label_pairs(pairs, judge, cache=cache, retry=FAST)
        assert srv.calls == n_failed
        expected = server_grades(srv)
    assert second.summary.failed == 0 and second.summary.cached == 20 - n_failed
    redone = second.records[~second.records["cached"]]
    assert redone["chunk_id"].tolist() == first.records.loc[
        first.records["status"] == "failed", "chunk_id"].tolist()
    assert [int(g) for g in redone["grade"]] == [expected[c] for c in redone["chunk_id"]]


def _label_cmd(url: str, pairs: Path, out: Path, cache: Path, concurrency: int) -> list[str]:
    return [sys.executable, "-m", "labeler", "label", "--pairs", str(pairs), "--model",
            "fake-judge", "--base-url", url, "--out", str(out), "--cache-dir", str(cache),
            "--concurrency", str(concurrency), "--backoff-base", "0.01", "--backoff-max",
            "0.05"]


def test_kill_9_midway_then_rerun_finishes_asking_only_what_was_in_flight(
        tmp_path: Path) -> None:
    n, concurrency = 48, 4
    pairs = write_pairs(make_pairs(n), tmp_path / "pairs.jsonl")
    out, cache_dir = tmp_path / "labels.jsonl", tmp_path / "cache"
    with FakeLLMServer(latency=0.15) as srv:
        proc = subprocess.Popen(_label_cmd(srv.base_url, pairs, out, cache_dir, concurrency),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while srv.calls < 20 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        assert not out.exists()  # no half-written output
        with LabelCache(cache_dir) as cache:
            n_cached = len(cache)
        assert 10 <= n_cached < n
        srv.reset()
        srv.set(latency=0.0)  # slow answers were only there to catch the job mid-way
        done = CliRunner().invoke(main, _label_cmd(srv.base_url, pairs, out, cache_dir,
                                                   concurrency)[3:])
        assert done.exit_code == 0, done.output
        assert srv.calls <= (n - n_cached) + concurrency
        asked_again = srv.calls
    labels = io.read_labels(out)
    assert len(labels) == n and (labels["status"] == "ok").all()
    assert int(labels["cached"].sum()) == n - asked_again
    expected = {c: FakeLLMServer.grade_for(m) for c, m in _messages(make_pairs(n)).items()}
    assert [int(g) for g in labels["grade"]] == [expected[c] for c in labels["chunk_id"]]


def _messages(pairs: pd.DataFrame) -> dict[str, list[dict[str, str]]]:
    from labeler.judges.prompts import load_prompt

    prompt = load_prompt("default")
    return {r.chunk_id: prompt.render(r.query, r.chunk) for r in pairs.itertuples()}


def test_two_jobs_sharing_one_cache_directory_both_finish(tmp_path: Path) -> None:
    """A `labeler label` process and an in-process job label the same pairs at the same
    time into one cache directory: both finish with the right labels."""
    n = 60
    pairs = make_pairs(n)
    write_pairs(pairs, tmp_path / "pairs.jsonl")
    cache_dir, out = tmp_path / "shared-cache", tmp_path / "labels.jsonl"
    with FakeLLMServer(latency=0.08) as srv:
        proc = subprocess.Popen(_label_cmd(srv.base_url, tmp_path / "pairs.jsonl", out,
                                           cache_dir, 4),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while srv.calls < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        with LabelCache(cache_dir) as cache:
            mine = label_pairs(pairs, judge_for(srv), cache=cache, retry=FAST, concurrency=4)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert srv.calls <= 2 * n
    expected = {c: FakeLLMServer.grade_for(m) for c, m in _messages(pairs).items()}
    for labels in (io.read_labels(out), mine.records):
        assert (labels["status"] == "ok").all()
        assert [int(g) for g in labels["grade"]] == [expected[c] for c in labels["chunk_id"]]
    assert mine.summary.cached > 0  # it did pick up what the other process had stored
    with LabelCache(cache_dir) as cache:
        assert len(cache) == n


def test_an_answer_stored_by_another_job_mid_run_is_not_asked_again(tmp_path: Path) -> None:
    """After this job's lookup, another job (another connection) stores the last pair's
    verdict: this job takes it from the cache instead of paying for it."""
    pairs = make_pairs(4)
    with FakeLLMServer(latency=0.2) as srv, LabelCache(tmp_path / "cache") as cache:
        judge = judge_for(srv, structured="json_schema")
        last = cache_key(judge.cache_material(pairs["query"].iloc[3], pairs["chunk"].iloc[3]))

        def other_job() -> None:
            deadline = time.monotonic() + 10
            while srv.calls < 1 and time.monotonic() < deadline:  # the first pair is asked
                time.sleep(0.01)
            with LabelCache(tmp_path / "cache") as other:
                other.set(last, Verdict(grade=3, rationale="from the other job"))

        writer = threading.Thread(target=other_job)
        writer.start()
        result = label_pairs(pairs, judge, cache=cache, concurrency=1, retry=FAST)
        writer.join()
        asked = srv.calls
    rec = result.records
    assert asked == 3 and bool(rec["cached"].iloc[3]) and not rec["cached"].iloc[:3].any()
    assert rec["rationale"].iloc[3] == "from the other job" and int(rec["grade"].iloc[3]) == 3


def test_a_pair_repeating_another_in_the_same_job_is_paid_once(tmp_path: Path) -> None:
    pairs = make_pairs(3)
    pairs.loc[2, ["query", "chunk"]] = pairs.loc[0, ["query", "chunk"]].to_numpy()
    with FakeLLMServer() as srv, LabelCache(tmp_path / "cache") as cache:
        result = label_pairs(pairs, judge_for(srv, structured="json_schema"), cache=cache,
                             concurrency=1, retry=FAST)
        asked = srv.calls
    assert asked == 2 and result.records["cached"].tolist() == [False, False, True]


def test_the_cached_form_keeps_every_field_of_a_verdict_but_the_raw_answer() -> None:
    from dataclasses import fields

    v = Verdict(grade=2, rationale="why", input_tokens=3, output_tokens=4, expected_grade=1.5,
                raw="the model's whole answer")
    stored = v.to_cache()
    # usage_known is kept as the tokens themselves: null when unknown
    assert set(stored) == {f.name for f in fields(Verdict)} - {"raw", "usage_known"}
    assert Verdict.from_cache(stored) == Verdict(grade=2, rationale="why", input_tokens=3,
                                                 output_tokens=4, expected_grade=1.5)


def test_cached_votes_past_the_first_lookup_are_used_and_kept_when_the_job_stops_early(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache is looked up a few slots at a time as the job goes: cached votes beyond the
    first lookup are not asked, and a job stopped early (key revoked) still records every
    cached vote as judged."""
    import labeler.labelling.job

    monkeypatch.setattr(labeler.labelling.job, "LOOKUP_CHUNK", 4)
    pairs = make_pairs(16)
    for revoke_after, cached_rows in ((None, [9, 14]), (2, [9, 14])):
        with FakeLLMServer(api_key="sk-test", revoke_after=revoke_after) as srv, \
                LabelCache(tmp_path / f"cache{revoke_after}") as cache:
            judge = judge_for(srv, structured="json_schema", api_key="sk-test")
            for i in cached_rows:
                cache.set(cache_key(judge.cache_material(pairs["query"].iloc[i],
                                                         pairs["chunk"].iloc[i])),
                          Verdict(grade=1, rationale="stored earlier"))
            result = label_pairs(pairs, judge, cache=cache, concurrency=1, retry=FAST)
            asked = srv.calls
        rec = result.records
        assert rec.index[rec["cached"]].tolist() == cached_rows
        assert (rec.loc[cached_rows, "rationale"] == "stored earlier").all()
        if revoke_after is None:
            assert asked == 14 and (rec["status"] == "ok").all()
        else:  # two answers, then the refusal stops the job: the cached votes still count
            assert result.summary.stopped and (rec["status"] == "ok").sum() == 2 + 2
