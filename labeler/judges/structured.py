"""Structured output per server: the JSON schema of a judgement and how each server wants it.

Modes, tried in this order until the endpoint accepts one (then kept for the job):

``json_schema``  ``response_format: {"type": "json_schema", "json_schema": {...strict}}``
``json_object``  ``response_format: {"type": "json_object", "schema": {...}}`` (llama.cpp
                 constrains the answer to that schema); vLLM gets the schema as
                 ``guided_json``, Ollama as ``format`` — their own fields
``text``         no ``response_format``: the tolerant parser reads the answer

In ``json_object`` and ``text`` modes the prompt also shows the schema. The server kind is
found from ``owned_by`` in ``GET /v1/models`` (``vllm``, ``llamacpp``, Ollama's ``library``)
or Ollama's port 11434, unless given (``server=``).

Usage::

    structured_fields("json_object", "vllm")   # {"response_format": ..., "guided_json": ...}
"""

from __future__ import annotations

import datetime
import email.utils
import functools
import json
import math
import time
from typing import Any, Literal
from urllib.parse import urlparse

from labeler.schema import GRADES, Judgement

Mode = Literal["json_schema", "json_object", "text"]
MODES: tuple[Mode, ...] = ("json_schema", "json_object", "text")
SERVERS = ("openai", "vllm", "llamacpp", "ollama")
"""Server kinds with their own structured-output form (``openai``: any other server)."""


@functools.cache
def _schema() -> dict[str, Any]:
    return judgement_schema()


def judgement_schema() -> dict[str, Any]:
    """:class:`~labeler.schema.Judgement` as a strict JSON schema (grade as an enum 0–3)."""
    schema = Judgement.model_json_schema()
    props = {name: {k: v for k, v in spec.items() if k not in ("default", "title", "minimum",
                                                                "maximum")}
             for name, spec in schema["properties"].items()}
    props["grade"]["enum"] = list(GRADES)
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


SCHEMA_HINT = ("\n\nAnswer with only a JSON object matching this JSON schema: "
               + json.dumps(judgement_schema(), separators=(",", ":")))


@functools.cache
def structured_fields(mode: Mode, server: str | None) -> dict[str, Any]:
    """The request fields that ask ``server`` for structured output in ``mode`` (one shared
    dict per mode and server: copy before changing it)."""
    schema = _schema()
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": "judgement", "strict": True, "schema": schema}}}
    if mode == "json_object":
        if server == "vllm":
            return {"response_format": {"type": "json_object"}, "guided_json": schema}
        if server == "ollama":
            return {"response_format": {"type": "json_object"}, "format": schema}
        return {"response_format": {"type": "json_object", "schema": schema}}
    return {}


def server_kind(owned_by: str | None, base_url: str | None) -> str:
    """The server kind from a model listing's ``owned_by`` and the base URL."""
    owner = (owned_by or "").lower()
    if "vllm" in owner:
        return "vllm"
    if owner.replace(".", "").replace("-", "").replace("_", "") in ("llamacpp", "llamacpppython"):
        return "llamacpp"
    if owner in ("library", "ollama"):
        return "ollama"
    try:
        if base_url and urlparse(base_url).port == 11434:
            return "ollama"
    except ValueError:
        pass
    return "openai"


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date);
    None when absent, unreadable, negative or not finite (the backoff applies then)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if not raw:
            continue
        try:
            value = float(raw) / scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            return _http_date_wait(raw)
        return value if math.isfinite(value) and value >= 0 else None
    return None


def _http_date_wait(raw: str) -> float | None:
    try:  # an HTTP date (always GMT, even when the zone is left out)
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, parsed.timestamp() - time.time())
