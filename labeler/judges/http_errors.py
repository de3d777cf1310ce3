"""HTTP failures of an OpenAI-compatible endpoint as what the labelling stage acts on.

Retry (429, 5xx, timeouts, connection errors: :class:`~labeler.judges.base.RetryableError`,
:class:`NoAnswer` when nothing came back at all), fail this pair only (a content-filter or
context-length 400, a 413 "request entity too large"; a ``Retry-After`` longer than
``max_wait``), or stop the job (a rejected key, an unknown model:
:class:`~labeler.errors.EndpointError`). Every message is key-free.

Usage::

    err = convert_error(exc, where=url, model="m", timeout=60, max_wait=600, key=None)
"""

from __future__ import annotations

import openai

from labeler.errors import EndpointError, JudgeError
from labeler.fmt import clean_text
from labeler.redact import redact
from labeler.judges.base import RetryableError
from labeler.judges.structured import retry_after_seconds

PAIR_SPECIFIC = ("context_length", "maximum context length", "content_filter",
                 "content management policy", "too many tokens", "prompt is too long")
"""Words of a 400 that concerns one pair only (its text), not the job's configuration."""


class NoAnswer(RetryableError):
    """No HTTP answer at all (connection failure or timeout): counted toward a dead endpoint."""

    no_answer = True


def pair_specific(exc: openai.APIStatusError) -> bool:
    """Whether a 400/413/422 refuses this pair's text rather than the request's settings (a
    413 always does: it is about this request's size, whatever page a proxy sends)."""
    return exc.status_code == 413 or (exc.status_code in (400, 422) and any(
        s in str(exc).lower() for s in PAIR_SPECIFIC))


def convert_error(exc: BaseException, *, where: str, model: str, timeout: float,
                  max_wait: float, key: str | None, key_env: str | None = None) -> Exception:
    """``exc`` (from the openai client) as a retry, a failed pair or a stopped job."""
    if isinstance(exc, openai.APITimeoutError):
        return NoAnswer(f"timed out after {timeout:g}s")
    if isinstance(exc, openai.APIConnectionError):
        return NoAnswer(f"connection error ({cause_of(exc, key)})")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        wait = retry_after_seconds(getattr(exc.response, "headers", None))
        if status == 429 or status >= 500 or status in (408, 409):
            what = "rate limited" if status == 429 else "server error"
            if wait is not None and wait > max_wait:
                return JudgeError(f"{what} (HTTP {status}) and the server asks to wait "
                                  f"{wait:.0f}s, longer than `max_wait` {max_wait:g}s: "
                                  f"{message_of(exc, key)}")
            return RetryableError(f"{what} (HTTP {status}): {message_of(exc, key)}",
                                  retry_after=wait)
        if pair_specific(exc):
            return JudgeError(f"the endpoint refused this pair (HTTP {status}): "
                              f"{message_of(exc, key)}")
        return fatal_error(exc, where=where, model=model, key=key, key_env=key_env)
    if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
        return RetryableError(f"malformed response from the endpoint ({redact(str(exc), key)})")
    return JudgeError(redact(f"{type(exc).__name__}: {exc}", key), retryable=True)


def fatal_error(exc: openai.APIStatusError, *, where: str, model: str,
                key: str | None, key_env: str | None = None) -> EndpointError:
    """The error that stops the job for a 401, 403, 404 or another refused request.
    ``key_env`` names the variable the key came from (blamed for a 401)."""
    status, msg = exc.status_code, message_of(exc, key)
    if status == 401:
        fix = (f"set {key_env} (the variable the key was read from) to a valid key"
               if key_env and key_env not in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
               else "set OPENAI_API_KEY (AZURE_OPENAI_API_KEY for Azure) to a valid key")
        return EndpointError(f"the endpoint {where} rejected the API key (HTTP 401: {msg}); "
                             + fix)
    if status == 403:
        return EndpointError(f"access denied by {where} (HTTP 403: {msg}); check that the key "
                             f"may use model {model!r}")
    if status == 404:
        return EndpointError(f"not found at {where} (HTTP 404: {msg}); check `model` "
                             f"{model!r} and `base_url` (it usually ends in /v1)")
    return EndpointError(f"the endpoint {where} refused the request (HTTP {status}: {msg}); "
                         "check `model` and the sampling options")


def message_of(exc: openai.APIStatusError, key: str | None) -> str:
    """The server's error message, key-free and short."""
    body = exc.body
    text = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            text = str(inner["message"])
        elif isinstance(inner, str):
            text = inner
    text = text or str(getattr(exc, "message", "")) or type(exc).__name__
    return clean_text(redact(text, key))[:300]


def cause_of(exc: BaseException, key: str | None) -> str:
    """What lies under a connection error, key-free and short."""
    cause = exc.__cause__ or exc.__context__
    return clean_text(redact(f"{type(cause).__name__}: {cause}" if cause else str(exc), key))[:200]
