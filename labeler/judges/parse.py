"""The tolerant answer parser: one grade 0–3 out of whatever a judge wrote, or a JudgeError.

Reads, in order: a JSON object (bare, in a ```json fence, or inside prose) with a ``grade`` /
``score`` / ``relevance`` / ``rating`` key; a labelled grade ("Grade: 2", "##final score: 2",
"Relevance: 3/3"; a "final" label wins over others); a line holding only a number ("**2**");
and last, the one number in the text. Scale mentions ("0-3", "out of 3", "/3") are not grades.
Two different grades, no grade, or a grade outside 0–3 raise ``JudgeError(retryable=True)``:
the parser never guesses and never defaults to 0.

:func:`read_completion` reads a chat.completion body (a dict, as sent over HTTP or found in a
batch output line) defensively: any malformed part is a ``RetryableError`` carrying the
tokens the body reports, never a crash.

Usage::

    from labeler.judges.parse import parse_answer, expected_grade, read_completion
    read_completion({"choices": [{"message": {"content": "2"}}]}).text   # '2'
    parse_answer('```json\\n{"grade": 2, "rationale": "partly"}\\n```').grade   # 2
    expected_grade([{"token": "2", "logprob": -0.1}, {"token": "3", "logprob": -2.4}])
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from labeler.errors import JudgeError
from labeler.schema import GRADES, Judgement
from labeler.judges.base import RetryableError

GRADE_KEYS = ("grade", "score", "relevance", "relevance_score", "relevance_grade", "rating",
              "final_score", "label")
RATIONALE_KEYS = ("rationale", "reason", "reasoning", "explanation", "justification")
MAX_RATIONALE = 500

_NUM = r"-?\d+(?:\.\d+)?"
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.S)
_SCALE = re.compile(r"\(?\b(?:between\s+)?0\s*(?:-|–|—|to|and|\.\.)\s*3\b\)?(?:\s*scale)?"
                    r"|(?<=\d)\s*(?:/|out\s+of)\s*3(?:\.0)?\b", re.I)
_LABEL = re.compile(
    r"\b(?P<label>final\s+(?:relevance\s+)?(?:score|grade|answer|rating|judgement|judgment)"
    r"|relevance\s+(?:score|grade|label|rating)|grade|score|relevance|rating|label)"
    r"(?:\s*(?:is|=|:|of|[-–](?=\s)))?\s*:?\s*\(?\s*(?P<num>" + _NUM + r")(?![\d.]*\d)"
    r"(?P<alt>\s*(?:or|to|-|–|/|,|and)\s*" + _NUM + r")?",
    re.I)
_LONE = re.compile(r"^[\s*_`#>:.()\[\]]*(" + _NUM + r")[\s*_`#:.()\[\]]*$")
_ANY_NUM = re.compile(r"(?<![\w.])" + _NUM + r"(?![\w]|\.\d)")


def _short(text: str, limit: int = 80) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "(truncated)"


def _fail(reason: str, text: str) -> JudgeError:
    return JudgeError(reason, retryable=True, last_answer=text)


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text`` (whole, fenced or embedded in prose)."""
    try:
        whole = json.loads(text)
        return [whole] if isinstance(whole, dict) else []
    except ValueError:
        pass
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    for source in [m.group(1) for m in _FENCE.finditer(text)] or [text]:
        pos = source.find("{")
        while pos != -1:
            try:
                obj, end = decoder.raw_decode(source, pos)
            except ValueError:
                pos = source.find("{", pos + 1)
                continue
            if isinstance(obj, dict):
                found.append(obj)
            pos = source.find("{", end)
    return found


def _lookup(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    for value in obj.values():  # one level down: {"judgement": {"grade": 2}}
        if isinstance(value, dict):
            inner = _lookup(value, keys)
            if inner is not None:
                return inner
    return None


def _number(value: Any, text: str) -> float:
    if isinstance(value, bool) or value is None:
        raise _fail(f"no usable grade in answer: {_short(text)}", text)
    if isinstance(value, (int, float)):
        return float(value)
    return _from_text(str(value), text)[0]


def _from_json(text: str) -> tuple[float, str] | None:
    grades: list[tuple[float, str]] = []
    for obj in _json_objects(text):
        value = _lookup(obj, GRADE_KEYS)
        if value is None:
            continue
        rationale = _lookup(obj, RATIONALE_KEYS)
        grades.append((_number(value, text), "" if rationale is None else str(rationale)))
    if len({g for g, _ in grades}) > 1:
        raise _fail(f"ambiguous answer: grades {_list(g for g, _ in grades)} in "
                    f"{_short(text)}", text)
    return grades[0] if grades else None


def _list(values: Iterable[float]) -> str:
    return ", ".join(f"{v:g}" for v in sorted(set(values)))


def _rest(text: str, span: tuple[int, int]) -> str:
    rest = re.sub(r"\s+", " ", text[:span[0]] + " " + text[span[1]:])
    rest = re.sub(r"\s+([.,;:!?])", r"\1", rest).lstrip(" *_#`:.-").rstrip(" *_#`:-")
    return rest[:MAX_RATIONALE]


def _from_text(clean: str, original: str) -> tuple[float, str]:
    """A grade from prose (scale mentions already harmless); raises if none or ambiguous."""
    clean = _SCALE.sub(" ", clean)
    labelled = list(_LABEL.finditer(clean))
    final = [m for m in labelled if m.group("label").lower().startswith("final")]
    chosen = final or labelled
    if chosen:
        if any(m.group("alt") for m in chosen) or len({float(m.group("num"))
                                                        for m in chosen}) > 1:
            nums = [float(m.group("num")) for m in chosen] + [
                float(alt.group()) for m in chosen
                if m.group("alt") and (alt := re.search(_NUM + "$", m.group("alt")))]
            raise _fail(f"ambiguous answer: more than one grade ({_list(nums)}) in "
                        f"{_short(original)}", original)
        return float(chosen[-1].group("num")), _rest(clean, chosen[-1].span())
    lines = [line for line in clean.split("\n") if line.strip()]
    first, last = (_LONE.match(lines[0]), _LONE.match(lines[-1])) if lines else (None, None)
    if first and last and float(first.group(1)) != float(last.group(1)):
        raise _fail(f"ambiguous answer: grades {first.group(1)} and {last.group(1)} in "
                    f"{_short(original)}", original)
    lone = last or first
    if lone is not None:
        line = lines[-1] if last else lines[0]
        start = clean.rfind(line) if last else clean.find(line)
        return float(lone.group(1)), _rest(clean, (start, start + len(line)))
    numbers = list(_ANY_NUM.finditer(clean))
    values = {float(m.group()) for m in numbers}
    if len(values) > 1:
        raise _fail(f"ambiguous answer: more than one grade ({_list(values)}) in "
                    f"{_short(original)}", original)
    if not numbers:
        raise _fail(f"unparseable answer: {_short(original)}", original)
    return float(numbers[-1].group()), _rest(clean, numbers[-1].span())


def parse_answer(text: str) -> Judgement:
    """One Judgement from a judge's answer; ``JudgeError(retryable=True)`` if there is none.

    Usage::

        parse_answer("Grade: 2").grade                # 2
        parse_answer("##final score: 3").grade        # 3
    """
    if not isinstance(text, str) or not text.strip():
        raise _fail("empty answer", text if isinstance(text, str) else "")
    body = _THINK.sub(" ", text).strip()
    found = _from_json(body)
    if found is None:
        found = _from_text(body.replace("**", "").replace("`", ""), text)
    value, rationale = found
    if not value.is_integer():
        raise _fail(f"grade {value:g} is not a whole number 0-3", text)
    if int(value) not in GRADES:
        raise _fail(f"grade {int(value)} out of range 0-3", text)
    return Judgement(grade=int(value), rationale=rationale.strip()[:MAX_RATIONALE])


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _token_grade(token: Any) -> int | None:
    text = str(_get(token, "token") or "").strip()
    return int(text) if text in {"0", "1", "2", "3"} else None


def _expectation(tops: Iterable[Any]) -> float | None:
    mass = [0.0] * len(GRADES)
    for top in tops:
        grade, logprob = _token_grade(top), _get(top, "logprob")
        if grade is not None and logprob is not None:
            mass[grade] += math.exp(float(logprob))
    total = sum(mass)
    return sum(g * p for g, p in enumerate(mass)) / total if total > 0 else None


def expected_grade(logprobs: Iterable[Any] | None) -> float | None:
    """Expected grade over tokens "0".."3", renormalised; None if no grade token is there.

    Takes a ``top_logprobs`` list of ``{token, logprob}`` (dicts or the openai objects), or a
    whole ``logprobs.content`` list: then the first token that is a grade is used, with its
    ``top_logprobs``.

    Usage::

        expected_grade(choice.logprobs.content[0].top_logprobs)
    """
    entries = list(logprobs or [])
    if any(_get(e, "top_logprobs") for e in entries):
        for entry in entries:
            if _token_grade(entry) is not None:
                return _expectation(_get(entry, "top_logprobs") or [entry])
        return None
    return _expectation(entries)


# --------------------------------------------------------------------------- response bodies

@dataclass(frozen=True)
class Completion:
    """What a chat.completion body says: the answer text and what it cost."""

    text: str
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    logprobs: list[Any] | None
    usage_known: bool = True
    """False when ``usage`` is missing or unreadable: the tokens above are then 0, unknown."""


def billed(exc: JudgeError, input_tokens: int, output_tokens: int,
           usage_known: bool = True) -> JudgeError:
    """``exc`` carrying the tokens of the attempt that raised it (counted in the cost);
    ``usage_known`` False when the answer's ``usage`` was unreadable (its tokens unknown)."""
    exc.input_tokens = input_tokens  # type: ignore[attr-defined]
    exc.output_tokens = output_tokens  # type: ignore[attr-defined]
    exc.usage_known = usage_known  # type: ignore[attr-defined]
    return exc


def tokens_of(exc: BaseException) -> tuple[int, int]:
    """The (input, output) tokens billed for the attempt that raised ``exc`` (0, 0 if none)."""
    return int(getattr(exc, "input_tokens", 0)), int(getattr(exc, "output_tokens", 0))


def usage_known_of(exc: BaseException) -> bool:
    """False when the attempt that raised ``exc`` had an answer with an unreadable ``usage``."""
    return bool(getattr(exc, "usage_known", True))


MAX_TOKENS = 10**9
"""More tokens than this in one answer's ``usage`` is not a count: it is unreadable."""


def token_count(value: Any) -> int | None:
    """A token count: a whole number in [0, :data:`MAX_TOKENS`], else None (odd ``usage``
    — text, negative, 1e308, 10**30 — is never trusted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if 0 <= value <= MAX_TOKENS else None


def read_usage(body: Any) -> tuple[int, int, bool]:
    """(prompt_tokens, completion_tokens, readable) of a body's ``usage``: unreadable or
    missing counts are 0 and ``readable`` is False (the tokens are unknown)."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return 0, 0, False
    tin = token_count(usage.get("prompt_tokens"))
    tout = token_count(usage.get("completion_tokens"))
    return tin or 0, tout or 0, tin is not None and tout is not None


def read_completion(body: Any) -> Completion:
    """The first choice of a chat.completion body; ``RetryableError`` if it is malformed."""
    *counts, known = read_usage(body)
    tokens = (counts[0], counts[1])

    def bad(why: str) -> JudgeError:
        return billed(RetryableError(f"malformed response from the endpoint ({why})"), *tokens,
                      usage_known=known)

    if not isinstance(body, dict):
        raise bad(f"the body is {type(body).__name__}, not an object")
    choices = body.get("choices")
    if not isinstance(choices, list):
        raise bad("no choices" if choices is None else
                  f"'choices' is {type(choices).__name__}, not a list")
    if not choices or not isinstance(choices[0], dict):
        raise bad("no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise bad(f"'message' is {type(message).__name__}, not an object")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise bad(f"'content' is {type(content).__name__}, not text")
    finish = choice.get("finish_reason")
    logprobs = choice.get("logprobs")
    entries = logprobs.get("content") if isinstance(logprobs, dict) else None
    return Completion(text=content or "", finish_reason=finish if isinstance(finish, str) else None,
                      input_tokens=tokens[0], output_tokens=tokens[1],
                      logprobs=entries if isinstance(entries, list) else None,
                      usage_known=known)


def checked_expected_grade(entries: list[Any]) -> float | None:
    """:func:`expected_grade`, with a non-numeric logprob a ``RetryableError``."""
    for entry in entries:
        for top in [entry, *((_get(entry, "top_logprobs") or []) if entry is not None else [])]:
            value = _get(top, "logprob")
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, (int, float))):
                raise RetryableError(f"malformed response from the endpoint (logprob "
                                     f"{str(value)[:20]!r} is not a number)")
    return expected_grade(entries)
