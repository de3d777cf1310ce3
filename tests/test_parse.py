"""The tolerant answer parser: every common answer shape, and no guessing on the rest."""

from __future__ import annotations

import math

import pytest

from labeler.errors import JudgeError
from labeler.judges.parse import expected_grade, parse_answer
from labeler.testing import ANSWER_STYLES, MALFORMED_ANSWER, render_answer


@pytest.mark.parametrize(("answer", "grade"), [
    ("2", 2),
    ("0", 0),
    (" 3\n", 3),
    ("Grade: 2", 2),
    ("grade = 1", 1),
    ("GRADE: 3", 3),
    ("##final score: 2", 2),
    ("## Final Score: 0", 0),
    ("Relevance: 3/3", 3),
    ("Score: 2 out of 3", 2),
    ("**2**", 2),
    ("**Grade:** 1", 1),
    ("`3`", 3),
    ("0-3 scale: 2", 2),
    ("On a scale of 0 to 3, I give it 1.", 1),
    ("Grade - 2", 2),
    ("I would rate this 2.", 2),
    ("The chunk is on the topic but misses the point.\n\n1", 1),
    ("2\nThe chunk answers the question directly.", 2),
    ("Grade: 2 (highly relevant). Score: 2", 2),
    ("M: 2\nT: 1\n##final score: 1", 1),  # a final label wins over step scores
    ("Grade: 3 would need an exact answer. Final grade: 2", 2),
    ('{"grade": 2, "rationale": "partly answers"}', 2),
    ('{"grade": "3"}', 3),
    ('{"Score": 1}', 1),
    ('{"relevance": 0, "reason": "off topic"}', 0),
    ('{"grade": 2.0}', 2),
    ('{"judgement": {"grade": 1, "rationale": "related"}}', 1),
    ('```json\n{"grade": 3, "rationale": "exact"}\n```', 3),
    ('```\n{"score": 2}\n```\nThat is my judgement.', 2),
    ('Here is my answer: {"grade": 1, "rationale": "related"} Hope it helps.', 1),
    ("<think>could be 3, or maybe 0</think>\nGrade: 1", 1),
])
def test_parses_the_grade(answer: str, grade: int) -> None:
    assert parse_answer(answer).grade == grade


@pytest.mark.parametrize(("answer", "rationale"), [
    ('{"grade": 2, "rationale": "partly answers"}', "partly answers"),
    ('```json\n{"grade": 3, "explanation": "exact"}\n```', "exact"),
    ("Grade: 2\nThe chunk answers it.", "The chunk answers it."),
    ("The chunk is on the topic.\n\n1", "The chunk is on the topic."),
    ("2", ""),
])
def test_extracts_the_rationale(answer: str, rationale: str) -> None:
    assert parse_answer(answer).rationale == rationale


@pytest.mark.parametrize(("answer", "reason"), [
    (MALFORMED_ANSWER, "unparseable answer: \"I think it's quite relevant\""),
    ("Highly relevant.", "unparseable"),
    ("", "empty answer"),
    ("   \n", "empty answer"),
    ("grades 1 or 2", "ambiguous"),
    ("Grade: 1 or 2", "ambiguous answer: more than one grade (1, 2)"),
    ("Grade: 2-3", "ambiguous"),
    ("Grade: 1. Score: 3", "ambiguous"),
    ("It is either 1 or 2 depending on intent.", "ambiguous"),
    ("2\n\nOn reflection:\n\n3", "ambiguous"),
    ('{"grade": 1} {"grade": 2}', "ambiguous"),
    ("10", "grade 10 out of range 0-3"),
    ("7", "grade 7 out of range 0-3"),
    ("Grade: -1", "grade -1 out of range 0-3"),
    ('{"grade": 7, "rationale": "very"}', "grade 7 out of range 0-3"),
    ('{"grade": -1}', "grade -1 out of range"),
    ("Grade: 2.5", "grade 2.5 is not a whole number"),
    ('{"grade": null}', "unparseable"),
    ('{"grade": true}', "no usable grade"),
    ('{"grade": "high"}', "unparseable"),
])
def test_refuses_to_guess(answer: str, reason: str) -> None:
    with pytest.raises(JudgeError) as err:
        parse_answer(answer)
    assert err.value.retryable
    assert reason in str(err.value)
    assert err.value.last_answer == answer


def test_long_unparseable_answers_are_truncated_in_the_reason() -> None:
    with pytest.raises(JudgeError, match=r"\(truncated\)") as err:
        parse_answer("relevant " * 100)
    assert len(str(err.value)) < 140


@pytest.mark.parametrize("style", ANSWER_STYLES)
@pytest.mark.parametrize("grade", [0, 1, 2, 3])
def test_reads_every_style_of_the_fake_server(style: str, grade: int) -> None:
    assert parse_answer(render_answer(grade, style)).grade == grade


def test_expected_grade_over_top_logprobs() -> None:
    tops = [{"token": "2", "logprob": math.log(0.6)}, {"token": "3", "logprob": math.log(0.2)},
            {"token": "1", "logprob": math.log(0.1)}, {"token": "The", "logprob": math.log(0.1)}]
    assert expected_grade(tops) == pytest.approx((2 * 0.6 + 3 * 0.2 + 1 * 0.1) / 0.9)
    # tokens with spaces count for their grade; duplicates add up
    spaced = [{"token": " 3", "logprob": math.log(0.25)}, {"token": "3", "logprob": math.log(0.25)},
              {"token": "0", "logprob": math.log(0.5)}]
    assert expected_grade(spaced) == pytest.approx(1.5)
    assert expected_grade([{"token": "yes", "logprob": -0.1}]) is None
    assert expected_grade([]) is None and expected_grade(None) is None


def test_expected_grade_from_a_whole_content_list_uses_the_grade_token() -> None:
    content = [
        {"token": "{\"", "logprob": -0.01, "top_logprobs": [{"token": "{\"", "logprob": -0.01},
                                                           {"token": "1", "logprob": -9.0}]},
        {"token": "1", "logprob": -0.2, "top_logprobs": [{"token": "1", "logprob": math.log(0.5)},
                                                        {"token": "0", "logprob": math.log(0.5)}]},
    ]
    assert expected_grade(content) == pytest.approx(0.5)


def test_expected_grade_reads_openai_objects_from_the_fake_server(fake_llm) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=fake_llm.base_url, api_key="test", max_retries=0)
    messages = [{"role": "user", "content": "a query and a chunk"}]
    resp = client.chat.completions.create(model="m", messages=messages, logprobs=True,
                                          top_logprobs=4)
    client.close()
    grade = fake_llm.grade_for(messages)
    value = expected_grade(resp.choices[0].logprobs.content[0].top_logprobs)
    assert value is not None and abs(value - grade) < 0.7
    assert expected_grade(resp.choices[0].logprobs.content) == pytest.approx(value)
