"""The OpenAI-compatible judge over real HTTP (the real `openai` client, the fake server)."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from labeler.errors import ConfigError, EndpointError
from labeler.judges.openai_judge import OpenAIJudge, judgement_schema, retry_after_seconds
from labeler.labelling.stage import label_pairs
from labeler.labelling.limits import RetryPolicy
from labeler.testing import FakeLLMServer, FaultPlan

from labelkit import FAST, judge_for, make_pairs, server_grades


@pytest.mark.parametrize("style", ["json", "plain", "grade_colon", "final_score", "fenced",
                                   "verbose"])
def test_every_answer_style_is_read_as_the_server_graded(style: str) -> None:
    pairs = make_pairs(12)
    with FakeLLMServer(answer_style=style, structured="ignore") as srv:
        result = label_pairs(pairs, judge_for(srv), retry=FAST, concurrency=4)
        expected = server_grades(srv)
    rec = result.records
    assert (rec["status"] == "ok").all()
    assert rec["grade"].tolist() == [expected[c] for c in pairs["chunk_id"]]
    assert result.summary.calls == 12


def test_json_schema_is_sent_with_the_judgement_schema_and_bounded_tokens() -> None:
    with FakeLLMServer() as srv:
        result = label_pairs(make_pairs(5), judge_for(srv, max_tokens=50), retry=FAST)
        bodies = [r["body"] for r in srv.requests]
    assert result.summary.failed == 0
    for body in bodies:
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == judgement_schema()
        assert body["max_tokens"] == 50
        assert body["temperature"] == 0.0
    assert judgement_schema()["properties"]["grade"]["enum"] == [0, 1, 2, 3]


@pytest.mark.parametrize(("structured", "mode"), [
    ("reject_json_schema_400", "json_object"),
    ("reject_json_schema_500", "json_object"),
    ("json_object_only", "json_object"),
    ("json_schema", "json_schema"),
])
def test_structured_output_steps_down_once_per_job(structured: str, mode: str) -> None:
    pairs = make_pairs(40)
    with FakeLLMServer(structured=structured, latency=0.01) as srv:
        judge = judge_for(srv)
        result = label_pairs(pairs, judge, retry=FAST, concurrency=16)
        kinds = [r["response_format"] for r in srv.requests]
        expected = server_grades(srv)
    assert judge.mode == mode
    assert result.summary.failed == 0
    refused = structured != "json_schema"
    assert kinds.count("json_schema") == (1 if refused else 40)
    assert len(kinds) == 40 + refused  # one refused request, no retry storm
    assert result.records["grade"].tolist() == [expected[c] for c in pairs["chunk_id"]]


def test_forced_text_mode_sends_no_response_format() -> None:
    with FakeLLMServer(answer_style="verbose") as srv:
        judge = judge_for(srv, structured="text")
        result = label_pairs(make_pairs(6), judge, retry=FAST)
        assert all("response_format" not in r["body"] for r in srv.requests)
    assert result.summary.failed == 0 and judge.mode == "text"


def test_500_on_every_request_is_a_server_error_not_a_refusal() -> None:
    with FakeLLMServer(faults=FaultPlan(server_error=1.0)) as srv:
        judge = judge_for(srv)
        result = label_pairs(make_pairs(3), judge,
                             retry=RetryPolicy(max_retries=1, backoff_base=0.001,
                                               backoff_max=0.01))
    assert judge.mode == "json_schema"  # both modes failed alike: no step-down
    assert (result.records["status"] == "failed").all()
    assert result.records["error"].str.contains("HTTP 500").all()


def test_logprobs_store_the_expected_grade() -> None:
    with FakeLLMServer() as srv:
        result = label_pairs(make_pairs(8), judge_for(srv, logprobs=True), retry=FAST)
        assert all(r["body"]["top_logprobs"] == 4 for r in srv.requests)
    rec = result.records
    assert rec["expected_grade"].notna().all()
    # The fake puts 0.7 of the mass on its grade: the expectation leans to it.
    assert ((rec["expected_grade"] - rec["grade"].astype(float)).abs() < 0.8).all()
    assert rec["expected_grade"].between(0, 3).all()


def test_samples_store_votes_and_the_lower_median() -> None:
    pairs = make_pairs(15)
    with FakeLLMServer(sample_noise=0.6, seed=3) as srv:
        result = label_pairs(pairs, judge_for(srv, samples=3), retry=FAST, concurrency=8)
        temps = {r["body"]["temperature"] for r in srv.requests}
        assert srv.calls == 45
    rec = result.records
    assert temps == {0.7}
    assert rec["votes"].map(len).eq(3).all()
    assert (rec["grade"] == rec["votes"].map(lambda v: sorted(v)[1])).all()
    assert (rec["vote_spread"] == rec["votes"].map(lambda v: max(v) - min(v))).all()
    assert rec["vote_spread"].max() >= 1  # the noisy server did disagree with itself


def test_even_samples_take_the_lower_median() -> None:
    with FakeLLMServer(sample_noise=1.0, seed=1) as srv:
        rec = label_pairs(make_pairs(10), judge_for(srv, samples=2), retry=FAST).records
    split = rec[rec["vote_spread"] > 0]
    assert not split.empty
    assert (split["grade"] == split["votes"].map(min)).all()


def test_a_rejected_key_stops_the_job_fast_with_a_clear_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with FakeLLMServer(api_key="sk-right") as srv:
        started = time.monotonic()
        with pytest.raises(EndpointError, match="rejected the API key"):
            label_pairs(make_pairs(50), judge_for(srv), retry=FAST, concurrency=8)
        assert time.monotonic() - started < 5
        assert srv.calls == 1  # stopped at the first answer, not after every pair


def test_an_unknown_model_stops_the_job() -> None:
    with FakeLLMServer(models=["other-model"]) as srv:
        with pytest.raises(EndpointError, match="`model` 'fake-judge'"):
            label_pairs(make_pairs(5), judge_for(srv), retry=FAST)


@pytest.mark.parametrize(("status", "message"), [(400, r"refused the request \(HTTP 400"),
                                               (403, "access denied"), (404, "not found")])
def test_400_403_404_stop_the_job_without_a_retry(status: int, message: str) -> None:
    with FakeLLMServer(faults=FaultPlan(always=status)) as srv:
        with pytest.raises(EndpointError, match=message):
            label_pairs(make_pairs(5), judge_for(srv, structured="json_schema"), retry=FAST,
                        concurrency=1)
        assert srv.calls == 1  # neither the stage nor the client asked again


def test_an_unreachable_endpoint_is_found_by_the_preflight() -> None:
    with FakeLLMServer() as srv:
        url = srv.base_url
    started = time.monotonic()
    judge = OpenAIJudge("m", base_url=url, timeout=30)
    with pytest.raises(EndpointError, match="cannot reach"):
        label_pairs(make_pairs(5), judge, retry=FAST)
    assert time.monotonic() - started < 5


def test_retry_after_is_honoured_and_capped() -> None:
    plan = FaultPlan(rate_limit=0.5, retry_after=1.0)
    text = _first_attempt_rate_limited(plan)
    pairs = make_pairs(1).assign(chunk=text)
    with FakeLLMServer(faults=plan) as srv:
        slow = label_pairs(pairs, judge_for(srv, structured="json_schema"),
                           retry=RetryPolicy(3, backoff_base=0.001, backoff_max=5.0))
        srv.reset()
        capped = label_pairs(pairs, judge_for(srv, structured="json_schema"),
                             retry=RetryPolicy(3, backoff_base=0.001, backoff_max=0.05))
    assert slow.records["attempts"].iloc[0] == 2
    assert slow.records["latency_s"].iloc[0] >= 1.0
    assert capped.records["attempts"].iloc[0] == 2
    assert capped.records["latency_s"].iloc[0] < 0.8


def _first_attempt_rate_limited(plan: FaultPlan) -> str:
    """A chunk text whose first request the plan answers 429 and second answers normally."""
    from labeler.judges.prompts import load_prompt
    from labeler.testing import messages_text

    prompt = load_prompt("default")
    for i in range(200):
        chunk = f"[c0000] passage variant {i}"
        text = messages_text(prompt.render("what is topic 0", chunk))
        if plan.decide(text, 1) == "rate_limit" and plan.decide(text, 2) is None:
            return chunk
    raise AssertionError("no suitable text found")


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({}) is None
    assert 0 <= retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) < 1
    # An HTTP date is GMT even without the zone; an unreadable value falls back to the
    # policy's backoff instead of crashing the job.
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds({"retry-after": soon.removesuffix(" GMT")}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "  "}) is None


def test_configuration_errors() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIJudge("gpt-4o-mini")  # no key, no base URL
    with pytest.raises(ConfigError, match="samples"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", samples=0)
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT"):
        OpenAIJudge("m", azure=True)


def test_azure_client_uses_deployment_urls_and_api_version(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key")
    with FakeLLMServer() as srv:
        judge = OpenAIJudge("my-deployment", base_url=srv.base_url.removesuffix("/v1"),
                            azure=True, api_version="2024-10-21", timeout=5)
        client = judge._get_client()
        assert str(client.base_url).endswith("/openai/")
        assert judge.mode == "json_schema" and judge.azure
        asyncio.run(judge.aclose())


def test_bodies_the_client_cannot_decode_are_retried_then_failed() -> None:
    """Not the fake server: a broken endpoint answering 200 with garbage bodies."""
    from aiohttp import web

    bodies = ["hello", '{"id": "x"}', "[1, 2]", "{not json"]
    served: list[str] = []

    async def chat(request: web.Request) -> web.Response:
        served.append(bodies[len(served) % len(bodies)])
        return web.Response(text=served[-1], content_type="application/json")

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            judge = OpenAIJudge("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=5)
            from labeler.labelling.stage import alabel_pairs
            result = await alabel_pairs(make_pairs(2), judge, retry=FAST)
        finally:
            await runner.cleanup()
        rec = result.records
        assert (rec["status"] == "failed").all() and (rec["attempts"] == 5).all()
        assert rec["error"].str.contains("malformed response").all()

    asyncio.run(serve())
    assert len(served) >= 10
