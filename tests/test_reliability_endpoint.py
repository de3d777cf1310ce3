"""`labeler label` against an endpoint that misbehaves: one regression test per fault class.

Every test goes through the real CLI, the real openai client and real HTTP to the local fake
server; each asserts what a user sees — the exit status, the records written, the message.
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main
from labeler.testing import FakeLLMServer, FaultPlan, messages_text

from labelkit import make_pairs, server_grades, write_pairs

FAST = ("--backoff-base", "0.01", "--backoff-max", "0.05")
KEY = "sk-test-Sup3rSecretKey0123456789"


def _label(srv: FakeLLMServer, tmp: Path, *args: str, n: int = 8,
           pairs: pd.DataFrame | None = None, out: str = "labels.jsonl") -> tuple[Any, Path]:
    src = write_pairs(make_pairs(n) if pairs is None else pairs, tmp / "pairs.jsonl")
    target = tmp / out
    res = CliRunner().invoke(main, ["label", "--pairs", str(src), "--model", "fake-judge",
                                    "--base-url", srv.base_url, "--out", str(target),
                                    *FAST, *args])
    return res, target


def _prompt_tokens(srv: FakeLLMServer, chunk_id: str) -> int:
    """What the server billed (prompt tokens) for every request about one chunk."""
    return sum(max(1, len(messages_text(r["body"]["messages"])) // 4) for r in srv.requests
               if r["status"] == 200 and f"[{chunk_id}]" in messages_text(r["body"]["messages"]))


# ------------------------------------------------------------------ 3. timeout is a deadline

def test_a_server_dripping_its_body_does_not_hold_a_request_past_timeout(tmp_path: Path) -> None:
    plan = FaultPlan(drip=1.0, drip_s=0.5)  # ~300 bytes at 16 bytes / 0.5 s: ~10 s a body
    with FakeLLMServer(faults=plan) as srv:
        started = time.monotonic()
        res, out = _label(srv, tmp_path, "--timeout", "1", "--max-retries", "0",
                          "--structured", "json_schema", "--concurrency", "4", n=4)
        wall = time.monotonic() - started
    assert res.exit_code == 3, res.output
    assert wall < 5  # four requests in parallel, each cut at 1 s (not ~10 s each)
    labels = io.read_labels(out)
    assert (labels["status"] == "failed").all()
    assert labels["error"].str.contains("timed out after 1s").all()


# ------------------------------------------------------------------ 4. stop early, keep records

def test_a_key_revoked_mid_job_stops_it_and_every_pair_still_has_a_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeLLMServer(api_key=KEY, revoke_after=5) as srv:
        res, out = _label(srv, tmp_path, "--concurrency", "1", n=30)
        expected = server_grades(srv)
        calls = srv.calls
    assert res.exit_code == 2, res.output
    labels = io.read_labels(out)
    assert labels["chunk_id"].tolist() == make_pairs(30)["chunk_id"].tolist()
    ok = labels[labels["status"] == "ok"]
    assert len(ok) == 5 and [int(g) for g in ok["grade"]] == [expected[c] for c in ok["chunk_id"]]
    failed = labels[labels["status"] == "failed"]
    assert failed["grade"].isna().all()
    assert failed["error"].str.contains("rejected the API key").all()
    assert calls <= 7  # stopped at the first refusal, not one refusal per pair
    assert "stopped early" in res.stderr and "rejected the API key" in res.stderr


def test_an_endpoint_that_dies_mid_job_stops_it_fast_with_every_record(tmp_path: Path) -> None:
    with FakeLLMServer(die_after=6) as srv:
        started = time.monotonic()
        res, out = _label(srv, tmp_path, "--concurrency", "2", "--max-retries", "5", n=80)
        calls = srv.calls
    assert time.monotonic() - started < 10
    assert res.exit_code == 3, res.output
    labels = io.read_labels(out)
    assert len(labels) == 80 and (labels["status"] == "ok").sum() == 6
    failed = labels[labels["status"] == "failed"]
    assert failed["error"].str.contains("stopped answering").any()
    assert calls < 40  # not max-retries+1 calls for every remaining pair
    assert "stopped early" in res.stderr


# ------------------------------------------------------------------ 5. Retry-After

def test_a_retry_after_longer_than_max_wait_fails_the_attempt_at_once(tmp_path: Path) -> None:
    plan = FaultPlan(rate_limit=1.0, retry_after_header="3600")
    with FakeLLMServer(faults=plan) as srv:
        started = time.monotonic()
        res, out = _label(srv, tmp_path, "--structured", "json_schema", n=16)
        calls = srv.calls
    assert time.monotonic() - started < 5
    assert res.exit_code == 3, res.output
    labels = io.read_labels(out)
    assert labels["error"].str.contains("asks to wait 3600s, longer than `max_wait` 600s").all()
    assert calls == 16  # no retry: the wait was longer than the job may wait


@pytest.mark.parametrize("header", ["nan", "-5", "soon"])
def test_an_unreadable_or_negative_retry_after_falls_back_to_the_backoff(
        tmp_path: Path, header: str) -> None:
    plan = FaultPlan(rate_limit=1.0, retry_after_header=header)
    with FakeLLMServer(faults=plan) as srv:
        res, out = _label(srv, tmp_path, "--structured", "json_schema", "--max-retries", "3",
                          "--backoff-base", "0.05", "--backoff-max", "0.2", n=4)
        times: dict[str, list[float]] = {}
        for r in srv.requests:
            times.setdefault(messages_text(r["body"]["messages"]), []).append(r["t"])
    assert res.exit_code == 3, res.output
    assert io.read_labels(out)["error"].str.contains("rate limited").all()
    gaps = [b - a for ts in times.values() for a, b in itertools.pairwise(ts)]
    assert len(gaps) == 4 * 3
    assert statistics.median(gaps) > 0.01  # backed off (zero-wait retries had gaps ~0.001 s)


# ------------------------------------------------------------------ 6. malformed 200 bodies

@pytest.mark.parametrize("kind", ["choices_object", "choices_int", "no_choices", "message_list",
                                  "not_json", "logprob_text"])
def test_a_malformed_answer_body_is_a_failed_attempt_never_a_crash(
        tmp_path: Path, kind: str) -> None:
    plan = FaultPlan(bad_body=0.5, bad_body_kind=kind)
    with FakeLLMServer(faults=plan) as srv:
        res, out = _label(srv, tmp_path, "--structured", "json_schema", "--max-retries", "0",
                          "--logprobs", n=12)
        faulted = {r["attempt"] for r in srv.requests if r["fault"] == "bad_body"}
    assert faulted  # the fault really happened
    assert res.exit_code == 3, res.output
    labels = io.read_labels(out)
    assert len(labels) == 12 and (labels["status"] == "ok").any()
    failed = labels[labels["status"] == "failed"]
    assert len(failed) and failed["error"].str.contains("malformed response").all()


@pytest.mark.parametrize("kind", ["usage_text", "negative_usage"])
def test_odd_usage_keeps_the_grade_with_unknown_tokens_never_a_crash_or_a_negative_cost(
        tmp_path: Path, kind: str) -> None:
    with FakeLLMServer(faults=FaultPlan(bad_body=1.0, bad_body_kind=kind)) as srv:
        res, out = _label(srv, tmp_path, "--structured", "json_schema", n=4)
    assert res.exit_code == 0, res.output
    labels = io.read_labels(out)
    assert (labels["status"] == "ok").all()
    # unknown, never a made-up 0 (and never negative)
    assert labels["input_tokens"].isna().all() and labels["output_tokens"].isna().all()
    assert "tokens 0 in" in res.stderr and "4 answers had no usable token usage" in res.stderr


# ------------------------------------------------------------------ 7. the key never leaks

def test_a_key_echoed_by_the_server_appears_nowhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cache = tmp_path / "cache"
    with FakeLLMServer(api_key=KEY, revoke_after=3, echo_key=True) as srv:
        res, out = _label(srv, tmp_path, "--concurrency", "1", "--cache-dir", str(cache), n=6)
        echoed = [r for r in srv.requests if r["status"] == 401]
    assert res.exit_code == 2, res.output
    assert echoed  # the server did echo the key back
    texts = [res.output, res.stderr, out.read_text()]
    texts += [p.read_bytes().decode("latin-1") for p in cache.rglob("*") if p.is_file()]
    assert all(KEY not in t and KEY[3:] not in t for t in texts)
    assert "Incorrect API key provided: Bearer [redacted]" in io.read_labels(out)["error"].iloc[-1]


# ------------------------------------------------------------------ 8. the endpoint in the key

def test_the_same_model_on_another_server_is_not_served_from_the_cache(tmp_path: Path) -> None:
    with FakeLLMServer() as first, FakeLLMServer(grade_fn=lambda text: 3) as second:
        a, _ = _label(first, tmp_path, out="a.jsonl")
        b, out_b = _label(second, tmp_path, out="b.jsonl")
        assert second.calls >= 8  # asked, not served the first server's answers
    assert a.exit_code == 0 and b.exit_code == 0
    assert (io.read_labels(out_b)["grade"] == 3).all()
    assert "8 judged, 0 cached" in b.stderr


# ------------------------------------------------------------------ 9. full disk under the cache

def test_a_full_disk_under_the_cache_warns_once_and_the_labels_are_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labeler.labelling import cache as cache_module
    opened = cache_module.LabelCache.__init__

    def full_disk(self: Any, directory: Any = None) -> None:
        opened(self, directory)  # then SQLite may not grow the database by a single page
        pages = self._store._sql("PRAGMA page_count").fetchone()[0]
        self._store._sql(f"PRAGMA max_page_count = {pages}")

    monkeypatch.setattr(cache_module.LabelCache, "__init__", full_disk)
    with FakeLLMServer() as srv:
        res, out = _label(srv, tmp_path, "--concurrency", "4", n=60)
        expected = server_grades(srv)
    assert res.exit_code == 0, res.output
    labels = io.read_labels(out)
    assert (labels["status"] == "ok").all() and len(labels) == 60
    assert [int(g) for g in labels["grade"]] == [expected[c] for c in labels["chunk_id"]]
    assert res.stderr.count("cannot use the cache") == 1
    assert "disk is full" in res.stderr


# ------------------------------------------------------------------ 10. per-pair refusals

@pytest.mark.parametrize("kind", ["content_filter", "context_length"])
def test_a_refusal_of_one_pair_fails_that_pair_only(tmp_path: Path, kind: str) -> None:
    plan = FaultPlan(refuse_marker="[c0000]", refuse_kind=kind)
    with FakeLLMServer(faults=plan) as srv:
        res, out = _label(srv, tmp_path, "--concurrency", "1", n=6)
        formats = [r["response_format"] for r in srv.requests if "[c0000]" not in
                   messages_text(r["body"]["messages"])]
    assert res.exit_code == 3, res.output
    labels = io.read_labels(out).set_index("chunk_id")
    assert labels.loc["c0000", "status"] == "failed"
    assert "refused this pair" in labels.loc["c0000", "error"]
    assert (labels.drop(index="c0000")["status"] == "ok").all()
    assert formats == ["json_schema"] * 5  # the job kept its structured output


# ------------------------------------------------------------------ 11. tokens of failed attempts

def test_tokens_of_failed_attempts_are_counted_in_the_record_and_the_cost(
        tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"fake-judge": {"input": 1.0, "output": 0.0}}))
    with FakeLLMServer(faults=FaultPlan(malformed=0.5)) as srv:
        res, out = _label(srv, tmp_path, "--structured", "json_schema", "--prices", str(prices),
                          n=12)
        billed = {c: _prompt_tokens(srv, c) for c in make_pairs(12)["chunk_id"]}
        malformed = sum(r["fault"] == "malformed" for r in srv.requests)
    assert malformed >= 3
    labels = io.read_labels(out)
    assert dict(zip(labels["chunk_id"], labels["input_tokens"])) == billed
    total = sum(billed.values())
    assert f"tokens {total} in" in res.stderr
    assert f"${total / 1e6:.4f}" in res.stderr


# ------------------------------------------------------------------ 12. real local servers

@pytest.mark.parametrize(("server", "field"), [("llamacpp", "schema"), ("vllm", "guided_json"),
                                               ("ollama", "format")])
def test_local_servers_get_the_schema_in_their_own_field(
        tmp_path: Path, server: str, field: str) -> None:
    with FakeLLMServer(structured=server) as srv:
        res, out = _label(srv, tmp_path, "--concurrency", "4", n=10)
        requests = srv.requests
    assert res.exit_code == 0, res.output
    assert (io.read_labels(out)["status"] == "ok").all()
    assert len(requests) <= 10 + 1  # one refused json_schema probe, then one call a pair
    objects = [r["body"] for r in requests if r["response_format"] == "json_object"]
    assert len(objects) == 10
    for body in objects:
        sent = body["response_format"] if field == "schema" else body
        assert sent[field]["properties"]["grade"]["enum"] == [0, 1, 2, 3]


def test_an_unparseable_answer_is_never_asked_again_unchanged(tmp_path: Path) -> None:
    with FakeLLMServer(structured="llamacpp", faults=FaultPlan(malformed=1.0)) as srv:
        started = time.monotonic()
        res, out = _label(srv, tmp_path, "--max-retries", "5", n=5)
        bodies = [json.dumps(r["body"], sort_keys=True) for r in srv.requests
                  if r["status"] == 200]
    assert time.monotonic() - started < 5
    assert res.exit_code == 3, res.output
    assert len(bodies) == len(set(bodies)) == 10  # the question, then once with a correction
    labels = io.read_labels(out)
    assert labels["error"].str.contains("also after a correction").all()
    assert (labels["attempts"] == 1).all()
