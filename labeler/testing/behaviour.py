"""What the fake server answers: fault plans, answer styles, error bodies, behaviour settings.

Usage::

    from labeler.testing import FaultPlan
    FaultPlan(rate_limit=0.1, retry_after=0.05).decide("prompt text", attempt=1, seed=0)
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from labeler.errors import ConfigError

ANSWER_STYLES = ("json", "plain", "grade_colon", "final_score", "fenced", "verbose")
STRUCTURED_MODES = ("json_schema", "reject_json_schema_400", "reject_json_schema_500",
                    "json_object_only", "ignore", "llamacpp", "vllm", "ollama")
"""How the server treats ``response_format``. The last three act like those local servers:
``json_schema`` refused (llama.cpp: HTTP 500; older vLLM and Ollama: 400), and a
``json_object`` answer is valid only when the request carries the server's own schema field
(:data:`SCHEMA_FIELDS`) — else the model echoes the schema it was shown, as small models do."""
SCHEMA_FIELDS = {"llamacpp": "response_format.schema", "vllm": "guided_json", "ollama": "format"}
OWNED_BY = {"llamacpp": "llamacpp", "vllm": "vllm", "ollama": "library"}
"""``owned_by`` of the ``/v1/models`` listing in each server-like mode (else ``labeler``)."""
FAULTS = ("rate_limit", "server_error", "unavailable", "timeout", "disconnect", "malformed",
          "out_of_range", "drip", "bad_body", "server_error_text")
"""Random faults of a FaultPlan, in the order their rates are stacked on [0, 1)."""
BAD_BODIES = ("choices_object", "choices_int", "no_choices", "usage_text", "negative_usage",
              "logprob_text", "message_list", "not_json", "huge_usage", "float_usage",
              "no_usage", "lone_surrogate")
"""Kinds of malformed 200 answers (``FaultPlan(bad_body=rate, bad_body_kind=...)``)."""
REFUSALS = {
    "content_filter": (("The response was filtered due to the prompt triggering Azure "
                        "OpenAI's content management policy."), "content_filter"),
    "context_length": (("This model's maximum context length is 8192 tokens. However, your "
                        "messages resulted in 9100 tokens."), "context_length_exceeded"),
    "too_large": ("<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n"
                  "<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n"
                  "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", "too_large"),
}
"""Per-pair refusals (``FaultPlan(refuse_marker=TEXT, refuse_kind=...)``): a 400 with an
OpenAI-shaped body, or for ``too_large`` a proxy's 413 HTML page."""
MALFORMED_ANSWER = "I think it's quite relevant"
RATIONALE = "graded by the fake server"
DEFAULT_MODEL = "fake-judge"

_ERRORS: dict[int, tuple[str, str, str | None]] = {  # status -> (message, type, code)
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to use this model.", "invalid_request_error", "forbidden"),
    404: ("The model does not exist or you do not have access to it.",
          "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests. Please try again later.", "requests",
          "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error",
          "service_unavailable"),
}


def messages_text(messages_or_text: str | list[dict[str, Any]]) -> str:
    """The text a grade is derived from: the messages' contents joined by newlines."""
    if isinstance(messages_or_text, str):
        return messages_or_text
    parts: list[str] = []
    for message in messages_or_text:
        content = message.get("content") or ""
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(str(content))
    return "\n".join(parts)


def question_text(messages: list[dict[str, Any]]) -> str:
    """The text the grade is decided on: the messages before the first assistant turn, so a
    question asked again with a correction gets the same judgement."""
    first = next((i for i, m in enumerate(messages)
                  if isinstance(m, dict) and m.get("role") == "assistant"), len(messages))
    return messages_text(messages[:first])


def seeded_rng(*key: object) -> random.Random:
    """A RNG seeded by a stable hash of ``key`` (independent of PYTHONHASHSEED)."""
    digest = hashlib.sha256("\x00".join(map(str, key)).encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    """An OpenAI-shaped error body: ``{"error": {"message", "type", "param", "code"}}``."""
    default, kind, code = _ERRORS.get(status, ("Error.", "api_error", None))
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


def default_grade(messages_or_text: str | list[dict[str, Any]]) -> int:
    """The default grade: sha256 of the messages' text (see ``messages_text``) mod 4."""
    text = messages_text(messages_or_text)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") % 4


def shifted_grade(grade: int, text: str, share: float, seed: int) -> int:
    """``grade``, or for a ``share`` of prompt texts (drawn by ``seed``) another grade."""
    if share <= 0.0:
        return grade
    rng = seeded_rng(seed, "shift", text)
    if rng.random() >= share:
        return grade
    return (grade + rng.randint(1, 3)) % 4


def render_answer(grade: int, style: str) -> str:
    """The answer text of a judge that decided ``grade``, in one of ``ANSWER_STYLES``."""
    as_json = json.dumps({"grade": grade, "rationale": RATIONALE})
    return {
        "json": as_json,
        "plain": str(grade),
        "grade_colon": f"Grade: {grade}",
        "final_score": f"##final score: {grade}",
        "fenced": f"```json\n{as_json}\n```",
        "verbose": ("I read the chunk against the query. It is about the same subject and I "
                    "weighed how directly it answers what was asked before deciding.\n\n"
                    f"Final grade: {grade}"),
    }[style]


def logprobs_for(grade: int) -> dict[str, Any]:
    """Top logprobs over "0".."3": 0.7 on ``grade``, the rest shared by closeness."""
    weights = [0.0 if g == grade else 1.0 / (1 + abs(g - grade)) for g in range(4)]
    rest = sum(weights)
    probs = [0.7 if g == grade else 0.3 * w / rest for g, w in enumerate(weights)]
    top = sorted(({"token": str(g), "logprob": math.log(p),
                   "bytes": [48 + g]} for g, p in enumerate(probs)),
                 key=lambda t: -float(t["logprob"]))  # type: ignore[arg-type]
    return {"content": [dict(top[0], top_logprobs=top)], "refusal": None}


@dataclass(frozen=True)
class FaultPlan:
    """Which faults the server injects. Rates are probabilities per request (summing to ≤ 1).

    ``fail_first`` makes the first N attempts of each distinct prompt answer 503; ``always``
    answers every request with that status (e.g. 401, 404) and an OpenAI-shaped error body.
    ``retry_after`` is the 429's Retry-After (seconds); ``retry_after_header`` sends that
    exact text instead (``"nan"``, ``"-5"``, an HTTP date). ``timeout`` hangs ``hang_s``
    seconds; ``drip`` sends the headers at once, then the body 16 bytes every ``drip_s``
    seconds. ``server_error_text`` answers 500 with a plain-text body (a proxy's error
    page), not JSON. ``bad_body`` answers 200 with a malformed body of kind ``bad_body_kind``
    (:data:`BAD_BODIES`). A request whose text holds ``refuse_marker`` gets a 400 of kind
    ``refuse_kind`` (:data:`REFUSALS`): a refusal that concerns that pair only.
    """

    rate_limit: float = 0.0
    server_error: float = 0.0
    unavailable: float = 0.0
    timeout: float = 0.0
    disconnect: float = 0.0
    malformed: float = 0.0
    out_of_range: float = 0.0
    drip: float = 0.0
    bad_body: float = 0.0
    server_error_text: float = 0.0
    retry_after: float = 0.1
    retry_after_header: str | None = None
    hang_s: float = 30.0
    drip_s: float = 0.5
    bad_body_kind: str = "choices_object"
    refuse_marker: str | None = None
    refuse_kind: str = "content_filter"
    fail_first: int = 0
    always: int | None = None

    def __post_init__(self) -> None:
        rates = [getattr(self, name) for name in FAULTS]
        if any(not 0.0 <= r <= 1.0 for r in rates) or sum(rates) > 1.0 + 1e-9:
            raise ConfigError(f"fault rates must be in [0, 1] and sum to at most 1, got "
                              f"{dict(zip(FAULTS, rates))}")
        if self.always is not None and not 400 <= self.always <= 599:
            raise ConfigError(f"FaultPlan.always must be an HTTP error status, got {self.always}")
        if self.bad_body_kind not in BAD_BODIES:
            raise ConfigError(f"bad_body_kind must be one of {BAD_BODIES}")
        if self.refuse_kind not in REFUSALS:
            raise ConfigError(f"refuse_kind must be one of {tuple(REFUSALS)}")

    def decide(self, text: str, attempt: int, seed: int = 0) -> str | None:
        """The fault for this prompt's ``attempt`` (1-based), or None to answer normally."""
        if attempt <= self.fail_first:
            return "fail_first"
        u = seeded_rng(seed, "fault", attempt, text).random()
        edge = 0.0
        for name in FAULTS:
            edge += getattr(self, name)
            if u < edge:
                return name
        return None

    @classmethod
    def from_json(cls, text: str) -> FaultPlan:
        """Parse ``{"rate_limit": 0.1, ...}`` (the ``serve --faults`` argument)."""
        data = json.loads(text or "{}")
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"unknown FaultPlan fields: {sorted(unknown)}")
        return cls(**data)


@dataclass(frozen=True)
class Behaviour:
    """Everything that decides the server's answers; replaced whole by ``FakeLLMServer.set``.

    ``echo_key``: a 401 repeats the Authorization header it got (as careless servers do).
    ``revoke_after``: after that many 200 answers, the key is refused (401) from then on.
    ``die_after``: after that many 200 answers, every connection is dropped unanswered.
    ``fingerprint`` / ``reported_model``: the ``system_fingerprint`` and ``model`` its answers
    report (``reported_model`` None: the model asked for; ``fingerprint`` None: none given).
    ``shift``: the share of pairs (by prompt text, drawn with ``shift_seed``) whose grade is
    changed to another one — a silent change of the judge behind the endpoint.
    """

    latency: float
    faults: FaultPlan
    answer_style: str
    structured: str
    seed: int
    grade_fn: Callable[[str], int] | None
    api_key: str | None
    models: tuple[str, ...] | None
    sample_noise: float
    record: bool
    echo_key: bool = False
    revoke_after: int | None = None
    die_after: int | None = None
    fingerprint: str | None = "fake"
    reported_model: str | None = None
    shift: float = 0.0
    shift_seed: int = 1

    def __post_init__(self) -> None:
        if not 0.0 <= self.shift <= 1.0:
            raise ConfigError(f"shift is a share of pairs in [0, 1], got {self.shift}")
        if self.answer_style not in ANSWER_STYLES:
            raise ConfigError(f"answer_style must be one of {ANSWER_STYLES}, "
                              f"got {self.answer_style!r}")
        if self.structured not in STRUCTURED_MODES:
            raise ConfigError(f"structured must be one of {STRUCTURED_MODES}, "
                              f"got {self.structured!r}")



# --------------------------------------------------------------------------- a gullible judge

_BLOCK = r"<{tag}>\n(.*?)\n</{tag}>"
_INSTRUCTED = re.compile(r"\b(?:grade|score|rate|label)\b[^.\n]{0,40}?\b3\b|perfectly relevant",
                         re.IGNORECASE)
_FAKE_ANSWER = re.compile(r"\"(?:grade|score)\"\s*:\s*3\b")


def _last_block(text: str, tag: str) -> str | None:
    found = re.findall(_BLOCK.format(tag=tag), text, re.DOTALL)
    return found[-1] if found else None


def gullible_grade(text: str) -> int:
    """The grade of a judge that can be fooled (a ``grade_fn`` for ``FakeLLMServer``).

    Its honest grade depends only on the query and the first line of the chunk (the last
    ``<query>``/``<chunk>`` blocks of the prompt). It gives 3 to a chunk that asks for a high
    grade ("grade it 3", "perfectly relevant") or holds a JSON answer with grade 3, and one
    grade more to a chunk stuffed with the query's words (one of them 3 times or more).

    Usage: ``FakeLLMServer(grade_fn=gullible_grade)``
    """
    query = _last_block(text, "query") or ""
    chunk = _last_block(text, "chunk") or text
    honest = honest_grade(text)
    if _INSTRUCTED.search(chunk) or _FAKE_ANSWER.search(chunk):
        return 3
    words = re.findall(r"\w+", chunk.casefold())
    terms = {w for w in re.findall(r"\w+", query.casefold()) if len(w) > 3}
    if any(words.count(t) >= 3 for t in terms):
        return min(3, honest + 1)
    return honest


def honest_grade(text: str) -> int:
    """The same judge, never fooled: the grade of the query and the chunk's first line only.

    Usage: ``FakeLLMServer(grade_fn=honest_grade)``
    """
    query = _last_block(text, "query") or ""
    chunk = _last_block(text, "chunk") or text
    first = chunk.split("\n", 1)[0]
    return int.from_bytes(hashlib.sha256(f"{query}\x00{first}".encode()).digest()[:8],
                          "big") % 4
