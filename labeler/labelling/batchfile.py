"""The OpenAI batch JSONL interchange: input lines, split files, output lines, job state.

One input line per vote: ``{"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions",
"body": {...}}`` where KEY is the vote's cache key (so an answer lands in the cache wherever it
comes from, and a resumed job recognises its own requests). Output lines (OpenAI, Azure and
``vllm run-batch``) are ``{"custom_id", "response": {"status_code", "body"}, "error"}``.

Usage::

    for path, ids in split_lines(lines, directory, max_requests=50_000, max_bytes=190 * 2**20):
        ...                                            # one upload per file
    outcome = read_output_line(judge, json.loads(text))  # custom_id, verdict or reason
    store = BatchStore(cache_dir / "batches"); store.save(state); store.live()
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from labeler import fmt
from labeler.errors import ConfigError, JudgeError, LabelerError
from labeler.judges.base import Verdict
from labeler.labelling.limits import price_of

MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 1000 * 1000
RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
CORRECTION = ("Your answer could not be read. Answer again with only a JSON object "
              '{"grade": <0, 1, 2 or 3>, "rationale": "<one short sentence>"}.')
_FORMAT_WORDS = ("response_format", "json_schema", "structured output", "json_object")


# --------------------------------------------------------------------------- options

@dataclass(frozen=True)
class BatchOptions:
    """How a batch job runs. ``wait``: seconds to wait for running batches before
    :class:`BatchNotReady` (None: until they end). ``file_in``: read a ``vllm run-batch``
    output file instead of calling the endpoint. Poll intervals and split limits are
    settable for tests; ``log`` receives the progress lines (default: stderr)."""

    wait: float | None = None
    file_in: str | Path | None = None
    poll_first: float = 2.0
    poll_max: float = 60.0
    poll_factor: float = 1.5
    max_requests: int = MAX_REQUESTS
    max_bytes: int = MAX_BYTES
    batch_prices: Mapping[str, tuple[float, float]] | None = None
    log: Callable[[str], None] | None = None


_log = logging.getLogger("labeler.labelling.batch")
POLL_ENV = "LABELER_BATCH_POLL"
"""Seconds before the first poll (default 2; the interval then grows to at most a minute)."""


def progress_line(line: str) -> None:
    """A progress line: to the ``labeler`` loggers when something listens (``labeler run``:
    stderr and run.log), else to stderr."""
    logger: logging.Logger | None = _log
    while logger is not None and logger.name != "root":  # a labeler handler, not the root's
        if logger.handlers:
            _log.info(line)
            return
        logger = logger.parent if logger.propagate else None
    print(f"labeler: {line}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- outcomes

class BatchFileWritten(LabelerError):
    """``--batch-file-out``: the input file is written and the command stops (exit 0)."""

    exit_code = 0

    def __init__(self, path: str | Path, n: int, model: str = "MODEL") -> None:
        self.n = n
        if n:
            message = (f"wrote {n} requests to {path}; nothing was sent. Run them, e.g. "
                       f"`vllm run-batch -i {path} -o results.jsonl --model {model}`, then "
                       "the same command with `batch_file_in` results.jsonl (and `out`) "
                       "instead of `batch_file_out`")
        else:
            message = (f"every vote is cached: {path} holds no request; the same command "
                       "without `batch_file_out` (and with `out`) writes the labels")
        super().__init__(message)


class BatchNotReady(LabelerError):
    """Batches were still running when ``--batch-wait`` ran out (exit 5: nothing written;
    the same command started again collects them)."""

    exit_code = 5

    def __init__(self, batches: list[tuple[str, str, int, int]]) -> None:
        self.batches = batches  # (batch id, status, requests done, requests in total)
        listed = "; ".join(f"{bid} {status} ({fmt.count(done)}/{fmt.count(total)} done)"
                           for bid, status, done, total in batches)
        super().__init__(f"{len(batches)} batch(es) not finished yet: {listed}. Nothing was "
                         "written; run the same command again to collect the results")


# --------------------------------------------------------------------------- state

class BatchState(BaseModel):
    """One submitted (or about to be submitted) batch of a job, as kept on disk.

    ``ids`` are the lines' custom ids (cache keys) and ``attempts`` each line's attempt
    number. ``file_id`` is set once uploaded, ``batch_id`` once created.
    """

    local: str = Field(default_factory=lambda: uuid.uuid4().hex)
    where: str
    model: str
    mode: str
    ids: list[str]
    attempts: list[int]
    file_id: str | None = None
    batch_id: str | None = None
    status: str = "preparing"
    created: float = 0.0


class BatchStore:
    """The live batch states of every job under one cache directory (one JSON file each).

    A state is written before each step that creates something on the server (upload,
    create) and deleted once its answers are collected and its follow-ups are recorded, so
    a job killed at any point resumes without a second submission of the same requests.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the batch state directory ({exc})",
                              path=self.directory) from None

    def save(self, state: BatchState) -> None:
        """Write ``state`` atomically (temporary file, then rename)."""
        target = self.directory / f"{state.local}.json"
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".state-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(state.model_dump_json())
        os.replace(tmp, target)

    def drop(self, state: BatchState) -> None:
        """Forget a collected batch."""
        (self.directory / f"{state.local}.json").unlink(missing_ok=True)

    def live(self, where: str, model: str) -> list[BatchState]:
        """Every state of this endpoint and model, oldest first (unreadable files skipped)."""
        out = []
        for path in self.directory.glob("*.json"):
            try:
                state = BatchState.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValidationError):
                continue
            if state.where == where and state.model == model:
                out.append(state)
        return sorted(out, key=lambda s: (s.created, s.local))


# --------------------------------------------------------------------------- input files

def input_line(custom_id: str, body: Mapping[str, Any], url: str) -> bytes:
    """One line of a batch input file (compact JSON, newline-terminated)."""
    return (json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body},
                       ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def corrected(body: dict[str, Any], bad_answer: str) -> dict[str, Any]:
    """``body`` asked once more with the unreadable answer and a correction (never the same
    request unchanged: at temperature 0 it would give the same answer)."""
    messages = [*body["messages"], {"role": "assistant", "content": bad_answer[:2000]},
                {"role": "user", "content": CORRECTION}]
    return {**body, "messages": messages}


def split_lines(lines: Iterable[tuple[str, bytes]], directory: str | os.PathLike[str], *,
                max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES
                ) -> Iterator[tuple[Path, list[str]]]:
    """Write ``(custom_id, line)`` pairs into temporary files of at most ``max_requests``
    lines and ``max_bytes`` bytes; yields each ``(path, custom ids)`` once full (the caller
    uploads and deletes it)."""
    if max_requests < 1 or max_bytes < 1:
        raise ConfigError("batch file limits must be positive")
    fh: Any = None
    path: Path | None = None
    ids: list[str] = []
    size = 0
    for custom_id, line in lines:
        if len(line) > max_bytes:
            raise ConfigError(f"one batch request is {len(line)} bytes, over the "
                              f"{max_bytes}-byte file limit")
        if fh is not None and (len(ids) >= max_requests or size + len(line) > max_bytes):
            fh.close()
            yield path, ids  # type: ignore[misc]
            fh, ids, size = None, [], 0
        if fh is None:
            fd, name = tempfile.mkstemp(dir=directory, prefix="batch-input-", suffix=".jsonl")
            fh, path = os.fdopen(fd, "wb"), Path(name)
        fh.write(line)
        ids.append(custom_id)
        size += len(line)
    if fh is not None:
        fh.close()
        yield path, ids  # type: ignore[misc]


# --------------------------------------------------------------------------- output lines

@dataclass
class LineOutcome:
    """What one output/error line says about its request."""

    custom_id: str | None
    verdict: Verdict | None = None
    reason: str = ""
    bad_answer: str | None = None  # an answer that could not be read (ask with a correction)
    format_refused: bool = False   # refused for its response_format (step the format down)
    final: bool = False            # refused as asked (4xx but 408/409/429): not worth a retry
    input_tokens: int = 0
    output_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def read_output_line(judge: Any, line: Any) -> LineOutcome:
    """Read one line of a batch output or error file with the judge's own answer parser."""
    if not isinstance(line, dict):
        return LineOutcome(None, reason="a batch output line that is not a JSON object")
    cid = line.get("custom_id")
    out = LineOutcome(str(cid) if cid is not None else None)
    response = line.get("response")
    error = line.get("error")
    body = response.get("body") if isinstance(response, dict) else None
    status = response.get("status_code") if isinstance(response, dict) else None
    usage = body.get("usage") if isinstance(body, dict) else None
    if isinstance(usage, dict):
        out.input_tokens = _int(usage.get("prompt_tokens"))
        out.output_tokens = _int(usage.get("completion_tokens"))
    if status == 200 and isinstance(body, dict) and not error:
        try:
            out.verdict = judge.verdict_from_body(body)
        except JudgeError as exc:
            out.reason = exc.message
            out.bad_answer = exc.last_answer
        return out
    message = _error_text(error) or _error_text(body) or "no answer"
    if status is not None:
        out.reason = f"HTTP {status}: {message}"
        out.final = isinstance(status, int) and 400 <= status < 500 and status not in (
            408, 409, 429)
        low = message.lower()
        out.format_refused = status in (400, 422, 500, 501) and any(w in low
                                                                    for w in _FORMAT_WORDS)
    else:
        out.reason = message
    return out


def _int(value: Any) -> int:
    """A billed token count; unreadable (text, negative, 1e308) counts 0."""
    from labeler.judges.parse import token_count

    return token_count(value) or 0


def _error_text(error: Any) -> str:
    """A short message from an error object (``{"code", "message"}``, ``{"error": {...}}``)."""
    if isinstance(error, str):
        return error[:300]
    if not isinstance(error, dict):
        return ""
    inner = error.get("error", error)
    if isinstance(inner, str):
        return inner[:300]
    if not isinstance(inner, dict):
        return ""
    code, msg = inner.get("code"), inner.get("message")
    text = f"{code}: {msg}" if code and msg else str(msg or code or "")
    return text[:300]


def is_format_refusal(messages: Iterable[str]) -> bool:
    """Whether a batch's errors say it was refused for its structured-output format."""
    return any(w in m.lower() for m in messages for w in _FORMAT_WORDS)


# --------------------------------------------------------------------------- prices

def batch_price(model: str, prices: Mapping[str, tuple[float, float]] | None = None,
                batch_prices: Mapping[str, tuple[float, float]] | None = None
                ) -> tuple[float, float] | None:
    """USD per 1M (input, output) tokens through the Batch API: ``batch_prices`` when they
    name the model, else half the online price."""
    if batch_prices:
        if model in batch_prices:
            return batch_prices[model]
        named = [m for m in batch_prices if model.startswith(m + "-")]
        if named:
            return batch_prices[max(named, key=len)]
    online = price_of(model, prices)
    return None if online is None else (online[0] / 2, online[1] / 2)


def batch_cost_usd(model: str, input_tokens: int, output_tokens: int,
                   prices: Mapping[str, tuple[float, float]] | None = None,
                   batch_prices: Mapping[str, tuple[float, float]] | None = None
                   ) -> float | None:
    """Cost in USD at the batch price (see :func:`batch_price`), or None without a price.

    Usage::

        batch_cost_usd("gpt-4o-mini", 1_000_000, 10_000)   # half the online estimate
    """
    price = batch_price(model, prices, batch_prices)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1e6


def load_batch_prices(path: str | os.PathLike[str]) -> dict[str, tuple[float, float]]:
    """The optional ``batch_input`` / ``batch_output`` entries of a ``--prices`` JSON file."""
    from labeler.labelling.limits import read_price_table

    return {m: (p.batch_input, p.batch_output) for m, p in read_price_table(path).items()
            if p.batch_input is not None and p.batch_output is not None}
