"""The judge interface every backend implements.

A judge turns one (query, chunk) pair into a :class:`Verdict`. It raises
:class:`RetryableError` (or a retryable :class:`~labeler.errors.JudgeError`) for what is
worth asking again, a non-retryable ``JudgeError`` for a pair that cannot be judged, and
:class:`~labeler.errors.EndpointError` for what stops the whole job (bad key, bad model).
The stage (:mod:`labeler.labelling.stage`) owns retries, caching, concurrency and rate limits.

Usage::

    from labeler.judges.base import Judge, Verdict
    def grade(judge: Judge) -> Verdict: ...
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from labeler.errors import JudgeError

LEXICAL_MODEL = "lexical-baseline"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One answer of a judge for one pair (one vote when sampling)."""

    grade: int
    rationale: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    expected_grade: float | None = None
    raw: str = ""
    usage_known: bool = True
    """False when the answer's ``usage`` could not be read: its tokens are unknown (the
    counts above are then 0 and the record shows null)."""

    def to_cache(self) -> dict[str, Any]:
        """The cached form: plain values only (never headers, never a key); unknown tokens
        are null."""
        known = self.usage_known
        return {"grade": self.grade, "rationale": self.rationale,
                "input_tokens": self.input_tokens if known else None,
                "output_tokens": self.output_tokens if known else None,
                "expected_grade": self.expected_grade}

    @classmethod
    def from_cache(cls, value: dict[str, Any]) -> Verdict:
        """Rebuild a verdict stored by :meth:`to_cache`."""
        tin, tout = value.get("input_tokens", 0), value.get("output_tokens", 0)
        return cls(grade=int(value["grade"]), rationale=str(value.get("rationale", "")),
                   input_tokens=int(tin or 0), output_tokens=int(tout or 0),
                   expected_grade=value.get("expected_grade"),
                   usage_known=tin is not None and tout is not None)


class RetryableError(JudgeError):
    """A transient failure (429, 5xx, timeout, connection): ask again after ``retry_after``."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message, retryable=True)
        self.retry_after = retry_after


@runtime_checkable
class Judge(Protocol):
    """What the labelling stage needs from a judge.

    ``cacheable`` says whether verdicts are worth caching (an LLM: yes; the instant
    lexical baseline: no). ``offline`` judges need no preflight and no rate limits.
    ``calls`` counts the HTTP requests made so far (0 for offline judges).
    """

    model: str
    prompt_id: str
    samples: int
    cacheable: bool
    offline: bool
    calls: int

    def cache_material(self, query: str, chunk: str, sample: int = 0) -> dict[str, Any]:
        """Everything that changes the answer (model, prompt, messages, sampling params)."""
        ...

    def estimate_tokens(self, query: str, chunk: str) -> int:
        """A rough count of the tokens one call uses (for ``--tpm``), before the call."""
        ...

    async def judge(self, query: str, chunk: str, sample: int = 0) -> Verdict:
        """Judge one pair (one vote ``sample`` of ``samples``)."""
        ...

    async def preflight(self) -> None:
        """Raise :class:`~labeler.errors.EndpointError` fast if the endpoint is unusable."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def cache_key(material: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``material``."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
