"""Answers whose ``usage`` cannot be read leave the tokens unknown — ``null`` in the record and
counted in the summary — in a failed pair too, never a made-up 0."""

from __future__ import annotations

from labeler.labelling.limits import RetryPolicy
from labeler.labelling.stage import label_pairs
from labeler.testing import FakeLLMServer, FaultPlan

from labelkit import judge_for, make_pairs


def test_a_failed_pair_whose_answers_had_no_usage_has_unknown_tokens() -> None:
    # every answer is out of range (asked again with a correction, then failed) and has no
    # `usage`: what the pair cost is unknown
    no_usage = FaultPlan(bad_body=1.0, bad_body_kind="no_usage")
    with FakeLLMServer(grade_fn=lambda text: 7, faults=no_usage) as srv:
        result = label_pairs(make_pairs(3), judge_for(srv, structured="json_schema"),
                             retry=RetryPolicy(1, 0.001, 0.01))
        calls = srv.calls
    rec = result.records
    assert (rec["status"] == "failed").all() and rec["error"].str.contains("range").all()
    assert rec["input_tokens"].isna().all() and rec["output_tokens"].isna().all()
    attempts = int(rec["attempts"].sum())   # each: an answer, then its correction
    assert calls == 2 * attempts and result.summary.no_usage == attempts > 0
    assert f"{attempts} answers had no usable token usage" in result.summary.render()


def test_readable_usage_of_failed_answers_is_still_counted() -> None:
    with FakeLLMServer(grade_fn=lambda text: 7) as srv:
        result = label_pairs(make_pairs(2), judge_for(srv, structured="json_schema"),
                             retry=RetryPolicy(1, 0.001, 0.01))
    rec = result.records
    assert (rec["status"] == "failed").all()
    assert (rec["input_tokens"] > 0).all() and result.summary.no_usage == 0
