"""Keep API keys and passwords out of every message, log line and file, whatever their source.

Masked: the keys in the environment (``OPENAI_API_KEY``, ``AZURE_OPENAI_API_KEY``, and any
key handed in), anything shaped like a key (``sk-…``, ``api_key=…``), the value of a
``Bearer`` or ``Basic`` authorization, and the credentials of a URL, found by parsing it:
the user and password as a whole (``http://user:password@host/v1`` →
``http://[redacted]@host/v1``, whatever the password holds) and every query parameter
named like a secret (``key``, ``api-key``, ``token``, ``access_token``, ``code``, ``sig``,
``password``…) or whose value looks like a key. A server may echo
credentials back ("Incorrect API key provided: Basic dXNlcjpwYXNz"); everything labeler
prints or stores from an endpoint, and every URL it records, goes through :func:`redact`.

Usage::

    from labeler.redact import redact, RedactingFilter
    redact("invalid key Bearer sk-abc123def456")      # 'invalid key Bearer [redacted]'
    redact("http://u:pw@gw:4000/v1")                   # 'http://[redacted]@gw:4000/v1'
    redact("https://gw/v1?key=abc&x=1")                # 'https://gw/v1?key=[redacted]&x=1'
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


_AUTHORITY = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/]*@)")
"""A URL's scheme and everything up to the LAST ``@`` before its path: the user and password
(masked whole: a user name may be a key too; a password may hold ``'``, ``?``, ``#`` or a
raw ``@``)."""

_PARAM = re.compile(r"([?&;#])([A-Za-z0-9_.\-\[\]%]{1,64})=([^&#\s\"'<>]*)")
"""A query-string (or fragment) parameter: ``?name=value``, ``&name=value``."""

SECRET_NAMES = frozenset({
    "key", "apikey", "api_key", "token", "access_token", "auth_token", "id_token",
    "refresh_token", "session_token", "security_token", "bearer", "code", "sig", "signature",
    "password", "passwd", "pwd", "pass", "secret", "client_secret", "auth", "authorization",
    "credential", "credentials", "session", "sessionid", "private_key", "subscription_key",
    "ocp_apim_subscription_key", "amz_signature", "amz_credential", "amz_security_token",
    "goog_signature", "goog_credential", "jwt", "assertion"})
"""Query parameter names whose value is always masked (compared lower-case, ``-`` and ``.``
read as ``_``, an ``x-`` prefix dropped); a name ending in ``_key``, ``_token``,
``_secret``, ``_password`` or ``_signature`` is one too."""

_SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "_signature", "_sig")


def secret_name(name: str) -> bool:
    """Whether a parameter called ``name`` carries a credential (``api-key``, ``X-Amz-Sig``)."""
    norm = re.sub(r"[-.\[\]]", "_", name.lower()).removeprefix("x_").strip("_")
    return norm in SECRET_NAMES or norm.endswith(_SECRET_SUFFIXES)


def looks_like_key(value: str) -> bool:
    """Whether ``value`` is shaped like a key or token: 16+ characters of one word with letters
    and digits, in both cases (or 32+ characters)."""
    if len(value) < 16 or not re.fullmatch(r"[A-Za-z0-9_\-+/=.~%]+", value):
        return False
    if not (re.search(r"[0-9]", value) and re.search(r"[A-Za-z]", value)):
        return False
    return len(value) >= 32 or (re.search(r"[a-z]", value) is not None
                                and re.search(r"[A-Z]", value) is not None)


def _param(match: re.Match[str]) -> str:
    mark, name, value = match.groups()
    if value and (secret_name(name) or looks_like_key(value)):
        return f"{mark}{name}={MASK}"
    return match.group(0)


def mask_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it masked, found by parsing whatever the
    environment holds: the user and password (``http://[redacted]@host``) and every query
    parameter whose name is a secret's (``?key=``, ``&sig=``) or whose value looks like a key.
    Deterministic, so it also names an endpoint in a cache key."""
    if "://" in text and "@" in text:
        text = _AUTHORITY.sub(lambda m: m.group(1) + MASK + "@", text)
    if "=" in text:
        text = _PARAM.sub(_param, text)
    return text


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with ``secrets``, the keys in the environment, anything shaped like a key,
    authorization values and URL credentials masked: the one function every message, record
    and file labeler writes goes through."""
    if not text:
        return text
    text = mask_credentials(text)
    for secret in _secrets(secrets):
        text = text.replace(secret, MASK)
    if "asic" in text or "ASIC" in text:
        text = _BASIC.sub(_basic, text)
    if "=" in text or ":" in text:
        text = _NAMED.sub(lambda m: m.group(1) + MASK, text)
    return _PATTERN.sub(MASK, text)


_NAMED = re.compile(r"(?i)((?<![\w-])(?:api[-_]?key|access[-_]token|auth[-_]token|token|password"
                    r"|passwd|secret|client[-_]secret)\s?[=:]\s?)(?![\[\s])[^\s\"',;&]{6,}")
"""``password=hunter22``, ``token: abc123`` in free text (not a count: ``max_tokens=200`` and
``input_tokens: 12`` are left alone)."""


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


def endpoint_name(url: str) -> str:
    """``url`` as labeler records an endpoint (cache keys, batch states): its credentials
    masked by their shape and place alone, never by what the environment holds, so that a
    key found in the URL or rotated in the environment does not change the name."""
    return _PATTERN.sub(MASK, mask_credentials(url))


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
