"""Keep API keys and passwords out of every message, log line and file, whatever their source.

Masked: the keys in the environment (``OPENAI_API_KEY``, ``AZURE_OPENAI_API_KEY``, and any
key handed in), anything shaped like a key (``sk-…``, ``api_key=…``), the value of a
``Bearer`` or ``Basic`` authorization, and the user and password of a URL
(``http://user:password@host/v1`` → ``http://[redacted]@host/v1``). A server may echo
credentials back ("Incorrect API key provided: Basic dXNlcjpwYXNz"); everything labeler
prints or stores from an endpoint, and every URL it records, goes through :func:`redact`.

Usage::

    from labeler.redact import redact, RedactingFilter
    redact("invalid key Bearer sk-abc123def456")      # 'invalid key Bearer [redacted]'
    redact("http://u:pw@gw:4000/v1")                   # 'http://[redacted]@gw:4000/v1'
    logging.getLogger("labeler").addFilter(RedactingFilter())
"""

from __future__ import annotations

import base64
import logging
import os
import re
from typing import Any

KEY_VARIABLES = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
MASK = "[redacted]"
_PATTERN = re.compile(
    r"(?i)(?<=bearer )\s*[^\s\"',;]{6,}"            # an Authorization header value
    r"|\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{8,}"           # OpenAI-style secret keys
    r"|(?<=api[-_]key[=:] )[^\s\"',;]{6,}|(?<=api[-_]key=)[^\s\"',;]{6,}")


def _secrets(extra: tuple[str | None, ...]) -> list[str]:
    values = {os.environ.get(name, "") for name in KEY_VARIABLES} | {v or "" for v in extra}
    return sorted((v for v in values if len(v) >= 4), key=len, reverse=True)


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/@\"'<>]+@(?=[^\s/@]*(?:[/\s\"'<>]|$))")
"""The ``user:password@`` of a URL (masked whole: a user name may be a key too)."""


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with ``secrets``, the keys in the environment, anything shaped like a key,
    authorization values and URL credentials masked."""
    if not text:
        return text
    for secret in _secrets(secrets):
        text = text.replace(secret, MASK)
    if "@" in text:
        text = _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    if "asic" in text or "ASIC" in text:
        text = _BASIC.sub(_basic, text)
    return _PATTERN.sub(MASK, text)


_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{4,}={0,2})")


def _basic(match: re.Match[str]) -> str:
    """Mask ``Basic <base64>`` when the base64 decodes to ``user:password`` (so the words
    "basic information" in a message are left alone)."""
    try:
        coded = match.group(2).rstrip("=")
        plain = base64.b64decode(coded + "=" * (-len(coded) % 4), validate=True)
    except ValueError:
        return match.group(0)
    return match.group(1) + MASK if b":" in plain else match.group(0)


def redact_data(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with every string passed through
    :func:`redact` — for manifests and state files written to disk."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that masks keys in each record's final message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
