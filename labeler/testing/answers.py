"""What the fake server answers to one chat request: a decided :class:`Outcome` (no I/O).

Usage (internal; see ``FakeLLMServer``)::

    out = decide(state, body, headers, rec)    # status, payload, headers, hang, drip, drop
"""

from __future__ import annotations

import json
import time
from typing import Any

from labeler.testing.behaviour import (
    DEFAULT_MODEL,
    MALFORMED_ANSWER,
    REFUSALS,
    Behaviour,
    error_body,
    logprobs_for,
    messages_text,
    render_answer,
    seeded_rng,
)
from labeler.testing.state import ServerState

ECHOED_SCHEMA = json.dumps({"type": "object", "properties": {
    "grade": {"type": "integer", "enum": [0, 1, 2, 3]}, "rationale": {"type": "string"}},
    "required": ["grade", "rationale"]})
"""What a small model answers in JSON mode when the server does not constrain it: the schema."""
SERVER_ERROR_PAGE = "500 Internal Server Error: upstream connect error or disconnect/reset"
"""The plain-text body of a ``server_error_text`` fault (a proxy's error page, not JSON)."""


class Outcome:
    """What one request gets: a status and a JSON payload (or raw ``text``), headers, a hang
    before answering, a body dripped ``drip`` seconds per 16 bytes, or a dropped connection."""

    def __init__(self, status: int = 200, payload: dict[str, Any] | None = None, *,
                 fault: str | None = None, headers: dict[str, str] | None = None,
                 hang: float = 0.0, drop: bool = False, drip: float = 0.0,
                 text: str | None = None) -> None:
        self.status, self.payload, self.fault = status, payload, fault
        self.headers, self.hang, self.drop, self.drip = headers or {}, hang, drop, drip
        self.text = text

    def body(self) -> bytes:
        """The response body as bytes."""
        return (self.text if self.text is not None else json.dumps(self.payload)).encode()


def error(status: int, message: str | None = None, fault: str | None = None,
          headers: dict[str, str] | None = None) -> Outcome:
    """An OpenAI-shaped error answer."""
    return Outcome(status, error_body(status, message), fault=fault, headers=headers)


def _auth_failure(b: Behaviour, headers: dict[str, str], fault: str) -> Outcome:
    sent = headers.get("authorization", "")
    message = (f"Incorrect API key provided: {sent}. You can find your API key at "
               "https://platform.openai.com/account/api-keys." if b.echo_key else None)
    return error(401, message, fault)


def _structured(b: Behaviour, body: dict[str, Any], kind: str | None) -> Outcome | bool | None:
    """A refusal of the structured-output request; else True for a constrained JSON answer,
    False for free text, None (server-like modes, schema field missing) for an echo of the
    schema."""
    mode = b.structured
    if kind == "json_schema":
        if mode in ("reject_json_schema_400", "json_object_only", "vllm", "ollama"):
            return error(400, "response_format json_schema is not supported", "structured")
        if mode in ("reject_json_schema_500", "llamacpp"):
            return error(500, "Unsupported response_format type: json_schema", "structured")
    if kind not in ("json_schema", "json_object") or mode == "ignore":
        return False
    if mode in ("llamacpp", "vllm", "ollama"):
        fmt = body.get("response_format") or {}
        constrained = {"llamacpp": isinstance(fmt.get("schema"), dict),
                       "vllm": isinstance(body.get("guided_json"), dict),
                       "ollama": isinstance(body.get("format"), dict)}[mode]
        return True if constrained else None
    return True


def decide(state: ServerState, body: dict[str, Any], headers: dict[str, str],
           rec: dict[str, Any]) -> Outcome:
    """The outcome of one chat completion request (``rec`` is its log entry, filled in)."""
    b = state.behaviour
    if b.api_key is not None and headers.get("authorization") != f"Bearer {b.api_key}":
        return _auth_failure(b, headers, "auth")
    if b.revoke_after is not None and state.answered >= b.revoke_after:
        return _auth_failure(b, headers, "revoked")
    if b.die_after is not None and state.answered >= b.die_after:
        return Outcome(fault="dead", drop=True)
    f = b.faults
    if f.always is not None:
        headers_ = {"retry-after": "1"} if f.always == 429 else None
        return error(f.always, fault="always", headers=headers_)
    if b.models is not None and body.get("model") not in b.models:
        return error(404, f"The model '{body.get('model')}' does not exist.", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return error(400, "'messages' must be a non-empty list")
    if body.get("stream"):
        return error(400, "the fake server does not stream")
    rf = body.get("response_format")
    kind = rf.get("type") if isinstance(rf, dict) else None
    structured = _structured(b, body, kind)
    if isinstance(structured, Outcome):
        return structured
    text = messages_text(messages)
    if f.refuse_marker is not None and f.refuse_marker in text:
        message, code = REFUSALS[f.refuse_kind]
        if f.refuse_kind == "too_large":  # a proxy in front: HTML, not JSON
            return Outcome(413, fault=f.refuse_kind, text=message,
                           headers={"content-type": "text/html"})
        out = error(400, message, f.refuse_kind)
        out.payload["error"]["code"] = code  # type: ignore[index]
        return out
    attempt = state.next_attempt(text)
    rec["attempt"] = attempt
    fault = f.decide(text, attempt, b.seed)
    if fault == "rate_limit":
        ra = f.retry_after
        after = ({"retry-after": f.retry_after_header} if f.retry_after_header is not None
                 else {"retry-after": f"{ra:g}", "retry-after-ms": str(int(ra * 1000))})
        return error(429, fault=fault, headers=after)
    if fault in ("server_error", "unavailable", "fail_first"):
        return error(500 if fault == "server_error" else 503, fault=fault)
    if fault == "server_error_text":
        return Outcome(500, fault=fault, text=SERVER_ERROR_PAGE)
    if fault == "disconnect":
        return Outcome(fault=fault, drop=True)
    state.count_answer()
    style = "json" if structured else b.answer_style
    payload = completion(b, body, text, rec["grade"], attempt, fault, style,
                         echo_schema=structured is None)
    out = Outcome(200, payload, fault=fault)
    if fault == "bad_body":
        out = _bad_body(f.bad_body_kind, payload)
    out.hang = f.hang_s if fault == "timeout" else 0.0
    out.drip = f.drip_s if fault == "drip" else 0.0
    return out


def completion(b: Behaviour, body: dict[str, Any], text: str, grade: int, attempt: int,
               fault: str | None, style: str, echo_schema: bool = False) -> dict[str, Any]:
    """A chat.completion payload answering ``grade`` in ``style`` (one choice per ``n``)."""
    rng = seeded_rng(b.seed, "answer", attempt, text)
    want_logprobs = bool(body.get("logprobs")) and bool(body.get("top_logprobs"))
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    choices: list[dict[str, Any]] = []
    for i in range(int(body.get("n") or 1)):
        g = grade
        # votes after the first may wander under temperature
        if ((i > 0 or attempt > 1) and (body.get("temperature") or 0) > 0
                and rng.random() < b.sample_noise):
            g = min(3, max(0, g + rng.choice((-1, 1))))
        logprobs = None
        if fault == "malformed":
            content = MALFORMED_ANSWER
        elif echo_schema:
            content = ECHOED_SCHEMA
        elif fault == "out_of_range":
            content = render_answer(rng.choice((7, -1)), style)
        elif want_logprobs:
            content, logprobs = str(g), logprobs_for(g)
        else:
            content = render_answer(g, style)
        finish = "stop"
        if limit and len(content) > 4 * int(limit):  # ~4 characters a token
            content, finish = content[:4 * int(limit)], "length"
        choices.append({"index": i, "message": {"role": "assistant", "content": content,
                                                "refusal": None},
                        "logprobs": logprobs, "finish_reason": finish})
    prompt_tokens = max(1, len(text) // 4)
    completion_tokens = sum(max(1, len(c["message"]["content"]) // 4) for c in choices)
    return {"id": f"chatcmpl-fake-{attempt}-{rng.getrandbits(32):08x}",
            "object": "chat.completion", "created": int(time.time()),
            "model": b.reported_model or body.get("model") or DEFAULT_MODEL,
            "system_fingerprint": b.fingerprint,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def _bad_body(kind: str, good: dict[str, Any]) -> Outcome:
    """A 200 whose body is malformed in the way ``kind`` names (see ``BAD_BODIES``)."""
    bad = json.loads(json.dumps(good))
    choice = bad["choices"][0]
    if kind == "choices_object":
        bad["choices"] = {"0": choice}
    elif kind == "choices_int":
        bad["choices"] = 3
    elif kind == "no_choices":
        del bad["choices"]
    elif kind == "usage_text":
        bad["usage"]["prompt_tokens"] = "lots"
    elif kind == "negative_usage":
        bad["usage"].update(prompt_tokens=-1000, completion_tokens=-50, total_tokens=-1050)
    elif kind == "logprob_text":
        choice["logprobs"] = {"content": [{"token": choice["message"]["content"][:1],
                                           "logprob": "high", "top_logprobs": [
                                               {"token": "2", "logprob": "high"}]}]}
    elif kind == "message_list":
        choice["message"] = []
    elif kind == "huge_usage":
        bad["usage"].update(prompt_tokens=10**30, completion_tokens=10**30)
    elif kind == "float_usage":
        bad["usage"].update(prompt_tokens=1e308, completion_tokens=1.5)
    elif kind == "no_usage":
        del bad["usage"]
    elif kind == "lone_surrogate":
        grade = json.loads(choice["message"]["content"]).get("grade", 0) \
            if choice["message"]["content"].startswith("{") else 0
        choice["message"]["content"] = json.dumps({"grade": grade,
                                                   "rationale": "odd \ud800 text"})
    elif kind == "not_json":
        return Outcome(200, fault="bad_body", text="<html><body>502 Bad Gateway</body></html>")
    return Outcome(200, bad, fault="bad_body")
