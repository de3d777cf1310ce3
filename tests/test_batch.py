"""Batch mode through the real ``openai`` client and real HTTP against the fake Batch API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from labelkit import FAST, judge_for, make_pairs, server_grades
from openai import AsyncOpenAI

from labeler.labelling.batch import BatchNotReady, BatchOptions, abatch_label, write_batch_file
from labeler.labelling.batchfile import (
    CORRECTION,
    BatchStore,
    batch_cost_usd,
    load_batch_prices,
    split_lines,
)
from labeler.labelling.cache import LabelCache
from labeler.errors import ConfigError, InputError
from labeler.judges.openai_judge import OpenAIJudge
from labeler.labelling.stage import label_pairs
from labeler.labelling.limits import cost_usd
from labeler.testing import FakeLLMServer, FaultPlan

QUICK = {"poll_first": 0.01, "poll_max": 0.05}


def run(srv: FakeLLMServer, pairs: Any, cache_dir: Path, log: list[str] | None = None,
        **options: Any) -> Any:
    opts = BatchOptions(**{**QUICK, **options}, log=(log.append if log is not None
                                                     else lambda _: None))
    with LabelCache(cache_dir) as cache:
        return asyncio.run(abatch_label(pairs, judge_for(srv), cache=cache, options=opts,
                                        retry=FAST))


def grade_of(judge: Any, pair: Any) -> int:
    """The grade the fake server answers for this pair's request (its default grade)."""
    return FakeLLMServer.grade_for(judge.prompt.render(pair["query"], pair["chunk"]))


def submitted(srv: FakeLLMServer, n: int, cache_dir: Path) -> tuple[BatchStore, Any]:
    """Submit a job of ``n`` pairs and stop waiting at once: its store and its one state."""
    srv.batches.configure(processing_s=0.3)
    with pytest.raises(BatchNotReady):
        run(srv, make_pairs(n), cache_dir, wait=0.0)
    store = BatchStore(cache_dir / "batches")
    (state,) = store.live(srv.base_url, "fake-judge")
    return store, state


def sent_ids(srv: FakeLLMServer) -> list[list[str]]:
    return srv.batches.stats()["lines"]


def test_batch_labels_equal_online_labels_and_lines_are_the_online_request(
        tmp_path: Path) -> None:
    pairs = make_pairs(24)
    with FakeLLMServer() as online:
        expected = label_pairs(pairs, judge_for(online), retry=FAST).records
        online_bodies = sorted(json.dumps(r["body"], sort_keys=True) for r in online.requests)
    with FakeLLMServer() as srv:
        result = run(srv, pairs, tmp_path)
        inputs = [f for f in srv.batches.files.values() if f["purpose"] == "batch"]
        lines = [json.loads(x) for f in inputs
                 for x in srv.batches.contents[f["id"]].splitlines()]
    assert result.records["grade"].tolist() == expected["grade"].tolist()
    assert (result.records["status"] == "ok").all() and result.exit_code == 0
    assert {x["url"] for x in lines} == {"/v1/chat/completions"}
    assert sorted(json.dumps(x["body"], sort_keys=True) for x in lines) == online_bodies
    assert len({x["custom_id"] for x in lines}) == 24


def test_failed_lines_succeed_in_a_follow_up_and_unparseable_ones_end_failed(
        tmp_path: Path) -> None:
    never = {"c0003", "c0007"}

    def grade(text: str) -> int:  # two chunks always answer an out-of-range grade
        return 7 if any(f"[{c}]" in text for c in never) else FakeLLMServer.grade_for(text)

    with FakeLLMServer(faults=FaultPlan(fail_first=1), grade_fn=grade) as srv:
        result = run(srv, make_pairs(12), tmp_path)
        batches = sent_ids(srv)
        last = srv.batches.contents[max(f["id"] for f in srv.batches.files.values()
                                           if f["purpose"] == "batch")]
        judge = judge_for(srv)
    rec = result.records.set_index("chunk_id")
    assert set(rec.index[rec["status"] == "failed"]) == never
    failed = rec.loc[sorted(never)]
    assert failed["grade"].isna().all()
    assert failed["error"].str.contains("out of range|0.3|grade", regex=True).all()
    assert (failed["attempts"] == FAST.max_retries + 1).all()
    assert (failed["error"].str.contains(f"gave up after {FAST.max_retries + 1}")).all()
    ok = rec[rec["status"] == "ok"]
    assert (ok["attempts"] == 2).all()  # the first line of each failed (503), the follow-up not
    pairs = make_pairs(12).set_index("chunk_id")
    assert ok["grade"].to_dict() == {c: grade_of(judge, pairs.loc[c]) for c in ok.index}
    # first batch: all 12; second: all 12 again (503s); then only the two unreadable ones
    assert [len(b) for b in batches] == [12, 12] + [2] * (FAST.max_retries - 1)
    assert CORRECTION[:30].encode() in last  # asked again with a correction, not unchanged
    assert result.exit_code == 3


def test_rerun_of_a_finished_job_makes_no_request(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        first = run(srv, make_pairs(10), tmp_path)
        before = srv.batches.stats()["requests"]
        calls = srv.calls
        again = run(srv, make_pairs(10), tmp_path)
        assert srv.batches.stats()["requests"] == before and srv.calls == calls
    assert again.summary.cached == 10 and again.summary.calls == 0
    assert again.records["grade"].tolist() == first.records["grade"].tolist()


def test_new_pairs_are_the_only_lines_of_the_next_batch(tmp_path: Path) -> None:
    pairs = make_pairs(15)
    with FakeLLMServer() as srv:
        run(srv, pairs.iloc[:10], tmp_path)
        result = run(srv, pairs, tmp_path)
        batches = sent_ids(srv)
    assert [len(b) for b in batches] == [10, 5]
    assert result.summary.cached == 10 and result.summary.judged == 5


def test_wait_timeout_then_collection_without_a_second_submission(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=0.6)
        with pytest.raises(BatchNotReady) as info:
            run(srv, make_pairs(8), tmp_path, wait=0.05)
        assert info.value.exit_code == 5
        (bid, status, _, total), = info.value.batches
        assert bid.startswith("batch_") and status in ("validating", "in_progress")
        assert total == 8 and bid in str(info.value)
        log: list[str] = []
        result = run(srv, make_pairs(8), tmp_path, log=log)
        assert srv.batches.stats()["batches"] == 1
    assert any(f"resuming batch {bid}" in line for line in log)
    assert result.summary.judged == 8 and result.exit_code == 0


def test_a_job_is_split_across_files(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        result = run(srv, make_pairs(10), tmp_path, max_requests=4)
        assert [len(b) for b in sent_ids(srv)] == [4, 4, 2]
    assert result.summary.judged == 10
    lines = [(f"id{i}", b"x" * 30 + b"\n") for i in range(7)]
    files = list(split_lines(lines, tmp_path, max_requests=100, max_bytes=100))
    assert [ids for _, ids in files] == [["id0", "id1", "id2"], ["id3", "id4", "id5"], ["id6"]]
    assert all(p.stat().st_size <= 100 for p, _ in files)


def test_a_batch_refused_for_its_format_steps_down_and_is_resubmitted(tmp_path: Path) -> None:
    log: list[str] = []
    with FakeLLMServer() as srv:
        srv.batches.configure(refuse_format="json_schema")
        result = run(srv, make_pairs(6), tmp_path, log=log)
        stats = srv.batches.stats()
        states = [b["status"] for b in srv.batches.batches.values()]
        second = srv.batches.contents[list(srv.batches.batches.values())[1]["input_file_id"]]
    assert states == ["failed", "completed"] and stats["batches"] == 2
    assert all(json.loads(x)["body"]["response_format"]["type"] == "json_object"
               for x in second.splitlines())
    assert (result.records["status"] == "ok").all()
    assert (result.records["attempts"] == 1).all()  # a refused format is no attempt of a pair
    assert any("refused the json_schema output format" in line for line in log)


def test_expired_lines_keep_the_answers_the_batch_has(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        srv.batches.configure(expire_lines=0.3, fail_lines=0.1)
        result = run(srv, make_pairs(30), tmp_path)
        first = next(iter(srv.batches.batches.values()))
        batches = sent_ids(srv)
    assert first["status"] == "expired" and first["request_counts"]["completed"] > 0
    assert len(batches[1]) == first["request_counts"]["failed"]  # only what it lacked
    assert result.summary.failed == 0 and result.summary.judged == 30


def test_a_full_batch_queue_waits_for_room(tmp_path: Path) -> None:
    log: list[str] = []
    with FakeLLMServer() as srv:
        srv.batches.configure(queue_limit=1, processing_s=0.05)
        result = run(srv, make_pairs(9), tmp_path, log=log, max_requests=3)
        assert srv.batches.stats()["batches"] == 3
    assert result.summary.judged == 9
    assert any("batch queue is full" in line for line in log)


def _vllm_run_batch(srv: FakeLLMServer, src: Path, dst: Path) -> None:
    """What ``vllm run-batch -i src -o dst`` does: each line's body to the chat endpoint."""
    async def go() -> None:
        async with AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0) as client:
            out = []
            for n, text in enumerate(src.read_text().splitlines()):
                line = json.loads(text)
                resp = await client.chat.completions.create(**line["body"])
                out.append({"id": f"vllm-{n}", "custom_id": line["custom_id"],
                            "response": {"status_code": 200, "request_id": f"r{n}",
                                         "body": resp.model_dump()}, "error": None})
            dst.write_text("".join(json.dumps(x) + "\n" for x in out))
    asyncio.run(go())


def test_vllm_file_round_trip(tmp_path: Path) -> None:
    pairs = make_pairs(8)
    src, dst = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    with FakeLLMServer() as srv:
        with LabelCache(tmp_path / "cache") as cache:
            assert write_batch_file(pairs, judge_for(srv), src, cache=cache) == 8
        assert srv.calls == 0 and srv.batches.stats()["requests"] == 0
        _vllm_run_batch(srv, src, dst)
        grades = server_grades(srv)
        calls = srv.calls
        half = tmp_path / "half.jsonl"
        half.write_text("".join(dst.read_text().splitlines(keepends=True)[:5]))
        partial = run(srv, pairs, tmp_path / "cache", file_in=half)
        result = run(srv, pairs, tmp_path / "cache", file_in=dst)
        assert srv.calls == calls and srv.batches.stats()["requests"] == 0
        with LabelCache(tmp_path / "cache") as cache:  # all cached now: nothing to write
            assert write_batch_file(pairs, judge_for(srv), src, cache=cache) == 0
    assert partial.summary.judged == 5 and partial.summary.failed == 3
    assert partial.records["error"].str.contains("no answer in half.jsonl").sum() == 3
    assert result.summary.cached == 5 and result.summary.judged == 3
    assert result.records.set_index("chunk_id")["grade"].to_dict() == grades


def test_a_results_file_of_another_job_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "other.jsonl"
    out.write_text(json.dumps({"custom_id": "nope", "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "2"}}]}}, "error": None}) + "\n")
    with FakeLLMServer() as srv, pytest.raises(InputError, match="other.jsonl.*none of its 1"):
        run(srv, make_pairs(3), tmp_path, file_in=out)
    out.write_text("{not json\n")
    with FakeLLMServer() as srv, pytest.raises(InputError, match="other.jsonl, line 1"):
        run(srv, make_pairs(3), tmp_path, file_in=out)


def test_batch_price_is_half_unless_the_table_says_otherwise(tmp_path: Path) -> None:
    online = cost_usd("gpt-4o-mini", 1_000_000, 200_000)
    assert online is not None
    assert batch_cost_usd("gpt-4o-mini", 1_000_000, 200_000) == pytest.approx(online / 2)
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"gpt-4o-mini": {"input": 1, "output": 2, "batch_input": 0.3,
                                                 "batch_output": 0.5}}))
    batch = load_batch_prices(table)
    assert batch_cost_usd("gpt-4o-mini-2024-07-18", 1_000_000, 2_000_000,
                          batch_prices=batch) == pytest.approx(0.3 + 1.0)
    assert batch_cost_usd("unknown-model", 10, 10) is None


def test_fake_batch_api_refuses_a_wrong_purpose_and_unknown_batches() -> None:
    import openai

    async def go(srv: FakeLLMServer) -> None:
        async with AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0) as client:
            with pytest.raises(openai.BadRequestError, match="purpose"):
                await client.files.create(file=("a.jsonl", b"{}\n"), purpose="assistants")
            with pytest.raises(openai.NotFoundError):
                await client.batches.retrieve("batch_nope")
    with FakeLLMServer() as srv:
        asyncio.run(go(srv))


def test_azure_batches_use_the_azure_client_deployment_and_api_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "test-key")
    with FakeLLMServer() as srv, LabelCache(tmp_path) as cache:
        judge = OpenAIJudge("fake-judge", base_url=srv.base_url.removesuffix("/v1"),
                            azure=True, api_version="2024-10-21", timeout=5.0)
        result = asyncio.run(abatch_label(make_pairs(4), judge, cache=cache,
                                          options=BatchOptions(**QUICK), retry=FAST))
        stats = srv.batches.stats()
        batch = next(iter(srv.batches.batches.values()))
        lines = [json.loads(x) for x in srv.batches.contents[batch["input_file_id"]].splitlines()]
    assert result.summary.judged == 4
    assert stats["api_versions"] == ["2024-10-21"]
    assert batch["endpoint"] == "/chat/completions"
    assert {x["url"] for x in lines} == {"/chat/completions"}
    assert {x["body"]["model"] for x in lines} == {"fake-judge"}  # the deployment name


def test_a_cancelled_batch_keeps_its_answers(tmp_path: Path) -> None:
    async def cancel(srv: FakeLLMServer, batch_id: str) -> None:
        async with AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0) as client:
            await client.batches.cancel(batch_id)

    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=1.0)
        with pytest.raises(BatchNotReady) as info:
            run(srv, make_pairs(600), tmp_path, wait=0.4)
        asyncio.run(cancel(srv, info.value.batches[0][0]))
        log: list[str] = []
        srv.batches.configure(processing_s=0.0)
        result = run(srv, make_pairs(600), tmp_path, log=log)
        first = next(iter(srv.batches.batches.values()))
        batches = sent_ids(srv)
    assert first["status"] == "cancelled"
    kept = first["request_counts"]["completed"]
    assert 0 < kept < 600 and len(batches) == 2 and len(batches[1]) == 600 - kept
    assert result.summary.judged == 600 and result.exit_code == 0
    assert any("cancelled" in line for line in log)


def test_progress_lines_and_the_cost_estimate_are_logged(tmp_path: Path) -> None:
    log: list[str] = []
    prices = {"fake-judge": (1.0, 2.0)}
    with FakeLLMServer() as srv, LabelCache(tmp_path) as cache:
        result = asyncio.run(abatch_label(
            make_pairs(5), judge_for(srv), cache=cache, prices=prices, retry=FAST,
            options=BatchOptions(**QUICK, log=log.append)))
    assert log[0].startswith("submitting 5 requests") and "estimated cost" in log[0]
    assert any(line.endswith("completed, 5/5 requests done, 0 failed") for line in log)
    records = result.records  # the cost at half the online price, from the records' tokens
    cost = (records["input_tokens"].sum() * 0.5 + records["output_tokens"].sum() * 1.0) / 1e6
    assert result.summary.cost_usd == pytest.approx(cost, rel=1e-12)
    estimate = float(log[0].split("at most $")[1].split()[0])
    assert estimate >= result.summary.cost_usd  # an upper bound: every answer at max_tokens


def test_a_kill_between_upload_and_create_finds_the_batch_instead_of_a_second(
        tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        store, state = submitted(srv, 6, tmp_path)
        state.batch_id, state.status = None, "uploaded"  # as if killed before it was saved
        store.save(state)
        lost = state.model_copy(update={"local": "x" * 32, "file_id": None,
                                        "status": "preparing"})
        store.save(lost)  # and one killed before its upload: nothing of it exists remotely
        result = run(srv, make_pairs(6), tmp_path)
        assert srv.batches.stats()["batches"] == 1
    assert result.summary.judged == 6 and store.live(srv.base_url, "fake-judge") == []


def test_a_batch_refused_for_a_full_token_queue_waits_for_room(tmp_path: Path) -> None:
    log: list[str] = []
    with FakeLLMServer() as srv:
        srv.batches.configure(queue_limit=1, queue_refusal="fail", processing_s=0.1)
        result = run(srv, make_pairs(9), tmp_path, log=log, max_requests=3)
        states = [b["status"] for b in srv.batches.batches.values()]
    assert result.summary.judged == 9 and result.exit_code == 0
    assert (result.records["attempts"] == 1).all()  # a full queue is no attempt of a pair
    assert "failed" in states and states.count("completed") == 3
    assert any("wait for a running batch to end" in line for line in log)


def test_the_public_label_function_takes_the_batch_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import labeler

    monkeypatch.setenv("LABELER_BATCH_POLL", "0.01")
    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=0.3)
        common = {"model": "fake-judge", "base_url": srv.base_url, "cache_dir": tmp_path,
                  "batch": True}
        with pytest.raises(BatchNotReady):
            labeler.label(make_pairs(4), batch_wait=0, **common)
        result = labeler.label(make_pairs(4), **common)
        assert srv.batches.stats()["batches"] == 1
    assert result.summary.judged == 4
    with pytest.raises(ConfigError, match="needs an LLM judge"):
        labeler.label(make_pairs(2), model="lexical", batch=True, cache_dir=tmp_path)


def test_a_key_echoed_in_a_results_file_is_written_nowhere(tmp_path: Path) -> None:
    secret = "sk-test-never-write-me-0123456789"
    pairs = make_pairs(2)
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    with FakeLLMServer() as srv:
        judge = OpenAIJudge("fake-judge", base_url=srv.base_url, api_key=secret)
        write_batch_file(pairs, judge, requests)
        ids = [json.loads(x)["custom_id"] for x in requests.read_text().splitlines()]
        results.write_text("".join(json.dumps({"custom_id": cid, "response": {
            "status_code": 401, "body": {"error": {"message": f"Incorrect API key: {secret}"}}},
            "error": None}) + "\n" for cid in ids))
        with LabelCache(tmp_path / "cache") as cache:
            result = asyncio.run(abatch_label(pairs, OpenAIJudge(
                "fake-judge", base_url=srv.base_url, api_key=secret), cache=cache,
                options=BatchOptions(file_in=results)))
    assert (result.records["status"] == "failed").all()
    assert result.records["error"].str.contains("Incorrect API key").all()
    assert not result.records.astype(str).apply(lambda c: c.str.contains(secret)).any().any()


def test_an_explicit_format_refused_fails_at_once_with_the_reason(tmp_path: Path) -> None:
    with FakeLLMServer() as srv, LabelCache(tmp_path) as cache:
        srv.batches.configure(refuse_format="json_schema")
        judge = OpenAIJudge("fake-judge", base_url=srv.base_url, structured="json_schema",
                            timeout=5.0)
        result = asyncio.run(abatch_label(make_pairs(3), judge, cache=cache,
                                          options=BatchOptions(**QUICK), retry=FAST))
        assert srv.batches.stats()["batches"] == 1  # the same refused request is not resent
    assert result.exit_code == 3 and (result.records["status"] == "failed").all()
    assert result.records["error"].str.contains("response_format json_schema").all()


def test_a_batch_the_endpoint_forgot_is_asked_again(tmp_path: Path) -> None:
    log: list[str] = []
    with FakeLLMServer() as srv:
        store, state = submitted(srv, 5, tmp_path)
        state.batch_id = "batch_deleted"  # e.g. expired and purged since the last run
        store.save(state)
        result = run(srv, make_pairs(5), tmp_path, log=log)
        assert srv.batches.stats()["batches"] == 2
    assert result.summary.judged == 5 and result.exit_code == 0
    assert any("batch_deleted is unknown to the endpoint" in line for line in log)


def test_each_vote_is_its_own_line_and_the_grade_is_the_lower_median(tmp_path: Path) -> None:
    with FakeLLMServer(sample_noise=1.0, seed=3) as srv, LabelCache(tmp_path) as cache:
        judge = judge_for(srv, samples=3, seed=11)
        result = asyncio.run(abatch_label(make_pairs(4), judge, cache=cache,
                                          options=BatchOptions(**QUICK), retry=FAST))
        (ids,) = sent_ids(srv)
    assert len(ids) == 12 and len(set(ids)) == 12
    rec = result.records
    assert rec["votes"].map(len).tolist() == [3] * 4
    assert any(len(set(v)) > 1 for v in rec["votes"])  # the votes do differ
    assert rec["grade"].tolist() == [sorted(v)[1] for v in rec["votes"]]


@pytest.mark.parametrize("method", ["set_many", "get_many"])  # cannot be written / read
def test_a_cache_that_fails_is_a_warning_not_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    from labeler.labelling.cache import CacheError

    def broken(self: LabelCache, arg: Any) -> Any:
        raise CacheError("the disk is full" if method == "set_many"
                         else "database disk image is malformed")

    pairs = make_pairs(4)
    src, dst = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    with FakeLLMServer() as srv:
        with LabelCache(tmp_path / "cache") as cache:
            write_batch_file(pairs, judge_for(srv), src, cache=cache)
        _vllm_run_batch(srv, src, dst)
        monkeypatch.setattr(LabelCache, method, broken)
        result = run(srv, pairs, tmp_path / "cache", file_in=dst)
    assert result.summary.judged == 4 and result.exit_code == 0
    assert "cannot use the cache" in result.summary.render()
