"""Faults under concurrency: every pair ends graded as the server decided, or failed with a
reason — none lost, none duplicated, none mis-attributed."""

from __future__ import annotations

import pytest

from labeler.labelling.stage import label_pairs
from labeler.labelling.limits import RetryPolicy
from labeler.testing import FakeLLMServer, FaultPlan

from labelkit import FAST, judge_for, make_pairs, server_grades

TWENTY_PERCENT = FaultPlan(rate_limit=0.05, server_error=0.04, unavailable=0.03, timeout=0.02,
                           disconnect=0.02, malformed=0.02, out_of_range=0.02,
                           retry_after=0.02, hang_s=3.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_twenty_percent_faults_at_concurrency_16(seed: int) -> None:
    pairs = make_pairs(150, n_queries=12).sample(frac=1.0, random_state=seed)
    with FakeLLMServer(faults=TWENTY_PERCENT, seed=seed, latency=0.002) as srv:
        result = label_pairs(pairs, judge_for(srv, timeout=0.4), retry=FAST, concurrency=16)
        expected = server_grades(srv)
        faults = [r["fault"] for r in srv.requests if r["fault"]]
    rec = result.records
    assert len(faults) > 15  # the faults really happened
    # One record per input pair, in input order: none lost, none duplicated.
    assert rec["chunk_id"].tolist() == pairs["chunk_id"].tolist()
    assert rec["query_id"].tolist() == pairs["query_id"].tolist()
    ok = rec["status"] == "ok"
    # Graded exactly as the server decided for that very pair (no mis-attribution).
    assert [int(g) for g in rec.loc[ok, "grade"]] == [expected[c] for c in rec.loc[ok, "chunk_id"]]
    failed = rec.loc[~ok]
    assert failed["grade"].isna().all() and (failed["error"] != "").all()
    assert (rec.loc[ok, "error"] == "").all()
    assert result.summary.judged + result.summary.failed == 150
    # A request the client gave up on before the server read it is not in the server's log.
    assert len(srv.requests) <= result.summary.calls
    assert (rec["attempts"] >= 1).all()
    # An unusable answer is followed by one correction call within the same attempt.
    corrections = sum(f in ("malformed", "out_of_range") for f in faults)
    assert rec["attempts"].sum() <= result.summary.calls <= rec["attempts"].sum() + 2 + corrections
    assert (rec.loc[rec["attempts"] > 1, "status"] == "ok").any()  # retries did rescue pairs


def test_exhausted_retries_are_recorded_failed_never_guessed() -> None:
    pairs = make_pairs(8)
    with FakeLLMServer(faults=FaultPlan(fail_first=10)) as srv:
        result = label_pairs(pairs, judge_for(srv, structured="json_schema"), concurrency=4,
                             retry=RetryPolicy(max_retries=2, backoff_base=0.001,
                                               backoff_max=0.01))
        assert srv.calls == 8 * 3
    rec = result.records
    assert (rec["status"] == "failed").all() and rec["grade"].isna().all()
    assert (rec["attempts"] == 3).all()
    assert rec["error"].str.contains("HTTP 503").all()
    assert rec["error"].str.contains("after 3 attempts").all()
    assert result.exit_code == 3 and result.summary.failed == 8


@pytest.mark.parametrize(("fault", "reason"), [("malformed", "unparseable"),
                                               ("out_of_range", "out of range")])
def test_bad_answers_are_retried_then_failed_with_the_reason(fault: str, reason: str) -> None:
    with FakeLLMServer(faults=FaultPlan(**{fault: 1.0})) as srv:
        result = label_pairs(make_pairs(4), judge_for(srv, structured="json_schema"),
                             retry=RetryPolicy(1, 0.001, 0.01))
        assert srv.calls == 8
    rec = result.records
    assert (rec["status"] == "failed").all()
    assert rec["error"].str.contains(reason).all()


def test_hung_requests_time_out_and_are_retried() -> None:
    plan = FaultPlan(timeout=0.5, hang_s=5.0)
    with FakeLLMServer(faults=plan) as srv:
        # the structured form given: no request waits for the first to find it out
        judge = judge_for(srv, timeout=0.6, structured="json_schema")
        result = label_pairs(make_pairs(10), judge, retry=FAST, concurrency=10)
        expected = server_grades(srv)
    rec = result.records
    ok = rec["status"] == "ok"
    assert ok.sum() >= 8
    assert [int(g) for g in rec.loc[ok, "grade"]] == [expected[c] for c in rec.loc[ok, "chunk_id"]]
    assert rec.loc[~ok, "error"].str.contains("timed out").all()
    assert (rec["attempts"] > 1).any()
