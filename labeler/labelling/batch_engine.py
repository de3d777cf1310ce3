"""The Batch API engine behind :mod:`labeler.labelling.batch`: one job's batches, from the votes
the cache
cannot answer to their answers in the job's slots.

Usage (internal; see :func:`labeler.labelling.batch.abatch_label`)::

    engine = BatchEngine(job, BatchOptions(), prices)
    engine.pending(); await engine.run()
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import openai

from labeler import fmt
from labeler.labelling.batchfile import (RUNNING, BatchOptions, BatchNotReady, BatchState,
                                         BatchStore, LineOutcome, batch_cost_usd, corrected,
                                         input_line, is_format_refusal, read_output_line,
                                         split_lines, progress_line)
from labeler.labelling.cache import CacheError, cache_key
from labeler.errors import ConfigError, EndpointError, JudgeError
from labeler.judges.openai_judge import JsonObject
from labeler.redact import redact

if TYPE_CHECKING:
    from labeler.judges.base import Verdict
    from labeler.judges.openai_judge import Mode, OpenAIJudge
    from labeler.labelling.job import Job as _Job

T = TypeVar("T")


class _Gone(Exception):
    """A batch or file the endpoint no longer knows (HTTP 404)."""


class BatchEngine:
    """One batch job over a :class:`~labeler.labelling.job.Job` (fills its vote slots)."""

    def __init__(self, job: _Job, options: BatchOptions,
                 prices: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.job, self.opts, self.prices = job, options, prices
        self.judge = cast("OpenAIJudge", job.judge)
        self.log = options.log or progress_line
        self.slots: dict[str, list[int]] = {}  # cache key → vote slots still to fill
        self.bad: dict[str, str] = {}  # cache key → last unreadable answer
        self.max_attempts = int(getattr(job.policy, "max_retries", 5)) + 1
        self.running: list[BatchState] = []
        self.seen: dict[str, tuple[str, int, int]] = {}
        self.first: dict[str, tuple[float, int]] = {}  # batch id → (when, done) first seen
        self.eta: float | None = None  # seconds until the soonest batch should be done
        self.deferred: dict[str, int] = {}  # requests of a batch refused for a full queue
        # --structured auto (the judge has not fixed its mode): a refused format steps down
        self.auto_format = not getattr(self.judge, "_mode_known", True)
        self._store: BatchStore | None = None
        self.answers: list[tuple[str, Verdict]] = []  # to cache, in one transaction
        self.decided: dict[str, int | None] = {}  # custom id -> its grade (None: failed)
        self._warned_duplicate = False
        where = str(getattr(self.judge, "base_url", "") or "")
        azure = bool(getattr(self.judge, "azure", False)) or ".azure.com" in where \
            or "/openai/" in where  # Azure's batches name the endpoint without /v1
        self.url = "/chat/completions" if azure else "/v1/chat/completions"

    @property
    def secret(self) -> str | None:
        """The API key, only to blank it out of messages that echo it."""
        return getattr(self.judge, "_api_key", None)

    @property
    def store(self) -> BatchStore:
        """Where the job's batch states live (``CACHE_DIR/batches``)."""
        if self._store is None:
            raise ConfigError("batch mode keeps its batch ids and answers in the cache: "
                              "drop `no_cache`", setting="no_cache")
        return self._store

    # ------------------------------------------------------------------ set-up

    def pending(self) -> None:
        """Fill cached votes; group the rest by cache key (identical votes asked once)."""
        job = self.job
        if job.cache is not None:
            todo = job._lookup_cache()
        else:
            todo = list(range(len(job.verdicts)))
            for slot in todo:
                i, s = divmod(slot, job.samples)
                job.keys[slot] = cache_key(self.judge.cache_material(job.queries[i],
                                                                     job.chunks[i], s))
        for slot in todo:
            self.slots.setdefault(job.keys[slot], []).append(slot)

    def body(self, key: str) -> dict[str, Any]:
        i, s = divmod(self.slots[key][0], self.job.samples)
        body = self.judge.request_body(self.job.queries[i], self.job.chunks[i], s)
        return corrected(body, self.bad[key]) if key in self.bad else body

    def estimate(self, keys: list[str]) -> str:
        """The estimated cost of asking ``keys`` (at most: every answer at max_tokens)."""
        job, judge = self.job, self.judge
        max_out = int(getattr(judge, "max_tokens", 0))
        tokens_in = 0
        for key in keys:
            i = self.slots[key][0] // job.samples
            tokens_in += max(0, judge.estimate_tokens(job.queries[i], job.chunks[i]) - max_out)
        cost = batch_cost_usd(judge.model, tokens_in, max_out * len(keys),
                              self.prices, self.opts.batch_prices)
        money = ("unknown (no price for this model)" if cost is None
                 else f"at most {fmt.usd(cost)}")
        return (f"submitting {fmt.count(len(keys))} requests (~{fmt.count(tokens_in)} input "
                f"tokens, at most {fmt.count(max_out * len(keys))} output tokens): estimated "
                f"cost {money} at batch prices")

    # ------------------------------------------------------------------ the online job

    async def run(self) -> None:
        if not self.slots:
            return
        if self.job.cache is None:
            raise ConfigError("batch mode keeps its batch ids and answers in the cache: "
                              "drop `no_cache`", setting="no_cache")
        self._store = BatchStore(self.job.cache.directory / "batches")
        await self.judge.preflight()
        fresh = await self.adopt()
        if fresh:
            self.log(self.estimate(list(fresh)))
            await self.submit(fresh)
        await self.poll()

    async def adopt(self) -> dict[str, int]:
        """Take over the live batches that hold requests of this job; return the requests
        (with their attempt numbers) that no live batch holds."""
        fresh = {key: 1 for key in self.slots}
        modes = []
        for state in self.store.live(self.judge.where, self.judge.model):
            if state.file_id is None:  # killed before its upload: nothing exists remotely
                for key, n in zip(state.ids, state.attempts):
                    if key in fresh:
                        fresh[key] = max(fresh[key], n)
                self.store.drop(state)
                continue
            mine = [k for k in state.ids if k in fresh]
            if not mine:
                continue
            for key in mine:
                del fresh[key]
            modes.append(state.mode)
            self.running.append(state)
            self.log(f"resuming batch {state.batch_id or state.file_id} ({len(state.ids)} "
                     "requests) submitted earlier")
        if modes:
            from labeler.judges.openai_judge import MODES
            lowest = max([*modes, self.judge.mode],
                         key=lambda m: MODES.index(m) if m in MODES else 0)
            self.judge.use_mode(cast("Mode", lowest))
        return fresh

    async def submit(self, todo: Mapping[str, int]) -> None:
        """Write, split, upload and create batches for ``todo`` (cache key → attempt)."""
        lines = ((key, input_line(key, self.body(key), self.url)) for key in todo)
        for path, ids in split_lines(lines, self.store.directory,
                                     max_requests=self.opts.max_requests,
                                     max_bytes=self.opts.max_bytes):
            try:  # one file at a time: an upload is held in memory while it goes
                state = BatchState(where=self.judge.where, model=self.judge.model,
                                   mode=self.judge.mode, ids=ids,
                                   attempts=[todo[k] for k in ids], created=time.time())
                self.store.save(state)
                await self.send(path, state)
            finally:
                path.unlink(missing_ok=True)

    async def send(self, path: Path, state: BatchState) -> None:
        """Upload one input file and create its batch."""
        uploaded = await self.api(self._upload(path))
        state.file_id, state.status = uploaded.id, "uploaded"
        self.store.save(state)
        self.running.append(state)
        await self.create(state)

    def _upload(self, path: Path) -> Callable[[], Awaitable[Any]]:
        return lambda: self.client(600.0).files.create(file=path, purpose="batch")

    async def create(self, state: BatchState) -> None:
        """Create the batch of an uploaded file (a queue that is full is tried again later)."""
        try:
            batch = await self.api(lambda: self.client().batches.create(
                input_file_id=str(state.file_id), endpoint=self.url,
                completion_window="24h"), retry_429=False)
        except openai.RateLimitError:
            if state.status != "queued":
                self.log(f"the endpoint's batch queue is full; {state.file_id} waits for a "
                         "running batch to end")
            state.status = "queued"
            return
        state.batch_id, state.status = batch.id, batch.status
        self.store.save(state)
        self.log(f"batch {batch.id}: submitted {len(state.ids)} requests ({self.judge.mode})")

    async def find(self, state: BatchState) -> None:
        """A state uploaded but not known to be created (killed in between): adopt the batch
        made from its file if the endpoint lists one, else create it now."""
        page = await self.api(lambda: self.client().batches.list(limit=100))
        for batch in page.data:
            if batch.input_file_id == state.file_id:
                state.batch_id, state.status = batch.id, batch.status
                self.store.save(state)
                return
        await self.create(state)

    async def poll(self) -> None:
        start, delay = time.monotonic(), self.opts.poll_first
        deadline = None if self.opts.wait is None else start + self.opts.wait
        while self.running:
            self.eta = None
            for state in list(self.running):
                if state.batch_id is None:
                    await (self.create(state) if state.status == "queued" else self.find(state))
                    continue
                try:
                    batch = await self.api(lambda s=state: self.client().batches.retrieve(
                        s.batch_id), gone=True)  # type: ignore[misc]
                except _Gone:  # deleted, or long expired: ask its requests again
                    self.running.remove(state)
                    self.store.drop(state)
                    again = {k: n for k, n in zip(state.ids, state.attempts) if k in self.slots}
                    self.log(f"batch {state.batch_id} is unknown to the endpoint; its "
                             f"{fmt.count(len(again))} requests of this job go out again")
                    if again:
                        await self.submit(again)
                        delay = self.opts.poll_first
                    continue
                self.progress(batch)
                if batch.status not in RUNNING:
                    self.running.remove(state)
                    submitted = await self.collect(state, batch)
                    delay = self.opts.poll_first if submitted else delay
            if not self.running:
                return
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise BatchNotReady([(s.batch_id or s.file_id or "?", *self.seen.get(
                    s.batch_id or "", (s.status, 0, len(s.ids)))) for s in self.running])
            wait = delay if self.eta is None else min(delay, max(self.opts.poll_first, self.eta))
            await asyncio.sleep(wait if deadline is None else min(wait, deadline - now))
            delay = min(delay * self.opts.poll_factor, self.opts.poll_max)

    def progress(self, batch: Any) -> None:
        counts = batch.request_counts
        done = int(getattr(counts, "completed", 0) or 0) + int(getattr(counts, "failed", 0) or 0)
        total = int(getattr(counts, "total", 0) or 0)
        now = (str(batch.status), done, total)
        when, done0 = self.first.setdefault(batch.id, (time.monotonic(), done))
        elapsed = time.monotonic() - when
        if done > done0 and elapsed > 0:  # poll again near the expected end, not long after
            eta = (total - done) / ((done - done0) / elapsed)
            self.eta = eta if self.eta is None else min(self.eta, eta)
        if self.seen.get(batch.id) != now:
            self.seen[batch.id] = now
            failed = int(getattr(counts, "failed", 0) or 0)
            self.log(f"batch {batch.id}: {batch.status}, {fmt.count(done)}/{fmt.count(total)} "
                     f"requests done, {fmt.count(failed)} failed")

    # ------------------------------------------------------------------ results

    async def collect(self, state: BatchState, batch: Any) -> bool:
        """Read a finished batch's files into the job; submit its follow-up. True when a
        follow-up was submitted."""
        attempts = dict(zip(state.ids, state.attempts))
        outcomes: dict[str, LineOutcome] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                for outcome in await self.read(file_id):
                    if outcome.custom_id in attempts:
                        outcomes.setdefault(outcome.custom_id, outcome)
        refused = any(o.format_refused for o in outcomes.values())
        if batch.status == "failed" and not outcomes:
            data = getattr(batch.errors, "data", None) or []
            errors = [str(getattr(e, "message", "") or getattr(e, "code", "")) for e in data]
            why = redact("; ".join(e for e in errors if e)[:300], self.secret) or "no reason given"
            self.log(f"batch {batch.id} failed: {why}")
            refused = refused or is_format_refusal(errors)
            reason = f"the batch failed: {why}"
            full = any("limit" in str(getattr(e, "code", "") or "") for e in data)
            if full and not refused and any(s.batch_id for s in self.running):
                # the endpoint's queue (enqueued tokens) is full: wait for a running batch
                self.deferred.update({k: attempts[k] for k in state.ids if k in self.slots})
                self.log(f"its {len(state.ids)} requests wait for a running batch to end")
                self.store.drop(state)
                return False
        else:
            reason = f"no answer from batch {batch.id} ({batch.status})"
        stepped = self.judge.mode != state.mode  # another batch already stepped down
        if refused and not stepped and self.auto_format and self.judge.step_down():
            stepped = True
            self.log(f"the endpoint refused the {state.mode} output format; "
                     f"resubmitting with {self.judge.mode}")
        retry: dict[str, int] = {}
        for key in state.ids:
            outcome = outcomes.get(key) or LineOutcome(key, reason=reason,
                                                       format_refused=refused)
            self.apply(outcome, attempts[key], retry, free=stepped)
        self.flush()
        retry = {k: n for k, n in {**self.deferred, **retry}.items() if k in self.slots}
        self.deferred.clear()
        if retry:
            await self.submit(retry)
        self.store.drop(state)
        return bool(retry)

    def apply(self, outcome: LineOutcome, attempt: int, retry: dict[str, int], *,
              free: bool = False) -> None:
        """One answered line: a verdict fills the job's slots and the cache; a failure is
        retried (``retry``) while attempts remain, else recorded with its reason. ``free``:
        a format refusal was answered by stepping the format down (not the pair's fault)."""
        job, key = self.job, str(outcome.custom_id)
        verdict = outcome.verdict
        if verdict is not None:
            slots = self.slots.pop(key, [])
            if not slots:  # a custom id seen again: the first answer stands
                self._duplicate(key, verdict.grade)
                return
            self.answers.append((key, verdict))
            self.decided[key] = verdict.grade
            for slot in slots:
                job.verdicts[slot], job.attempts[slot] = verdict, attempt
                job.errors.pop(slot, None)
            if slots:
                job.input_tokens += verdict.input_tokens
                job.output_tokens += verdict.output_tokens
                job.no_usage += not verdict.usage_known
            return
        if key not in self.slots:
            self._duplicate(key, None)
            return
        job.input_tokens += outcome.input_tokens  # billed, even when unreadable
        job.output_tokens += outcome.output_tokens
        if outcome.bad_answer:
            self.bad[key] = outcome.bad_answer
        if outcome.format_refused and free:
            retry[key] = attempt
        elif attempt < self.max_attempts and not (outcome.final or outcome.format_refused):
            retry[key] = attempt + 1
        else:  # out of attempts, or refused as asked (a 4xx): asking again changes nothing
            tries = f" (gave up after {attempt} attempts)" if attempt > 1 else ""
            self.decided[key] = None
            for slot in self.slots.pop(key):
                job.errors[slot] = redact(outcome.reason, self.secret) + tries
                job.attempts[slot] = attempt

    def _duplicate(self, key: str, grade: int | None) -> None:
        """A result line for a custom id already decided: warn once if it disagrees."""
        if key not in self.decided or self.decided[key] == grade or self._warned_duplicate:
            return
        self._warned_duplicate = True
        first = self.decided[key]
        self.job.notes.append(
            f"warning: the batch results hold the custom id {key} more than once, with "
            f"different answers (grade {first if first is not None else 'failed'} first, "
            f"then {grade if grade is not None else 'failed'}); the first answer of each "
            "id is kept")

    def flush(self) -> None:
        """Write the answers collected so far to the cache (one transaction)."""
        if self.answers and self.job.cache is not None:
            try:
                self.job.cache.set_many(self.answers)
            except CacheError as exc:  # the labels still go out; warn once, as online
                self.job._drop_cache(exc)
        self.answers = []

    async def read(self, file_id: str) -> list[LineOutcome]:
        """Every line of a result file, read by the judge's parser (streamed)."""
        async def fetch() -> list[LineOutcome]:
            out: list[LineOutcome] = []
            async with self.client(600.0).files.with_streaming_response.content(
                    file_id) as resp:
                async for text in resp.iter_lines():
                    if text.strip():
                        out.append(read_output_line(self.judge, _loads(text)))
            return out
        try:
            return await self.api(fetch, gone=True)
        except _Gone:  # expired or deleted: its requests count as unanswered
            self.log(f"the result file {file_id} is gone from the endpoint")
            return []

    # ------------------------------------------------------------------ plumbing

    def client(self, timeout: float | None = None) -> Any:
        client = self.judge._get_client()
        return client.with_options(timeout=max(timeout, self.judge.timeout)) if timeout \
            else client

    async def api(self, call: Callable[[], Awaitable[T]], retry_429: bool = True,
                  gone: bool = False) -> T:
        """One Batch/Files API call under the job's retry policy (the 429 of a full batch
        queue is the caller's to handle when ``retry_429`` is False; with ``gone``, a 404
        raises :class:`_Gone` for the caller)."""
        async for attempt in self.job.policy.retrying():
            with attempt:
                self.judge.calls += 1
                try:
                    return await call()
                except openai.RateLimitError:
                    if not retry_429:
                        raise
                    raise JudgeError("rate limited (HTTP 429)", retryable=True) from None
                except openai.NotFoundError as exc:
                    if gone:
                        raise _Gone(str(exc)) from None
                    raise EndpointError(
                        f"not found at {self.judge.where} (HTTP 404: {exc}); this endpoint "
                        "may have no Batch API (a vLLM server: use --batch-file-out and "
                        "vllm run-batch instead)") from None
                except openai.OpenAIError as exc:
                    raise self.judge._convert(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover


def _loads(text: str) -> Any:
    try:
        return json.loads(text, object_hook=JsonObject)  # bodies read without a copy
    except ValueError:
        return None
