"""The labelling job: one slot per (pair, vote), filled by async workers under limits.

Usage (internal; see :func:`labeler.label.alabel_pairs`)::

    job = Job(pairs_df, judge, cache, RetryPolicy(5), rpm=None, tpm=None, progress=False)
    await job.run(concurrency=8)
    records = job.records()
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd

from labeler.labelling.cache import CacheError, LabelCache
from labeler.fmt import clean_text
from labeler.errors import EndpointError, Interrupted, JudgeError
from labeler.judges import Judge, Verdict
from labeler.judges.parse import tokens_of, usage_known_of
from labeler.labelling.limits import RateLimiter, RetryPolicy
from labeler.schema import LABEL_COLUMNS, STATUS, STATUS_FAILED, STATUS_OK

DEAD_AFTER = 10
"""Requests in a row with no answer (at least twice the concurrency) that stop the job."""
LOOKUP_CHUNK = 500
"""Slots whose cache keys are computed and looked up together, as the workers reach them."""


class Job:
    """The state of one labelling job: one slot per (pair, vote), filled by async workers.

    The job stops early — every pair still gets a record — when the endpoint refuses the key
    or the model (exit 2), or when :data:`DEAD_AFTER` requests in a row (at least twice the
    concurrency) get no answer at all (exit 3), or on SIGINT / SIGTERM in the main thread
    (exit 130 / 143; the pairs not judged are recorded ``failed``, interrupted). A cache that
    cannot be read is warned about once and dropped; one that cannot be written (full disk)
    is warned about once and only read from then on; the job goes on.
    """

    def __init__(self, df: pd.DataFrame, judge: Judge, cache: LabelCache | None,
                 policy: RetryPolicy, rpm: float | None, tpm: float | None,
                 progress: bool | None) -> None:
        self.df, self.judge, self.cache, self.policy = df, judge, cache, policy
        self.queries: list[str] = df["query"].tolist()
        self.chunks: list[str] = df["chunk"].tolist()
        self.samples = max(1, int(judge.samples))
        n = len(df) * self.samples
        self.verdicts: list[Verdict | None] = [None] * n
        self.errors: dict[int, str] = {}
        self.attempts = [0] * n
        self.latency = [0.0] * n
        self.cached = bytearray(n)
        self.tokens_in = [0] * n  # billed in this job, failed attempts included
        self.tokens_out = [0] * n
        self.usage_unknown = [False] * n  # an attempt's answer had an unreadable `usage`
        self.keys: dict[int, str] = {}
        self._cache_seen = cache  # kept for its warnings after a fault drops it
        self._writes = True
        self._looked_up: int | None = None  # the cache's version at the bulk lookup
        self._stored: set[str] = set()  # keys this job stored (a pair may repeat another)
        self.input_tokens = self.output_tokens = 0
        self.rpm = RateLimiter(rpm) if rpm else None
        self.tpm = RateLimiter(tpm) if tpm else None
        self.bar = _Progress(n, progress)
        self.stopped: EndpointError | None = None
        self.stop_exit = 0
        self.notes: list[str] = []
        self.silent_in_a_row = 0
        self.answered = 0  # votes the endpoint judged in this job
        self.no_usage = 0  # of those, answers whose `usage` could not be read
        self.dead_after = DEAD_AFTER
        self._stop_event: asyncio.Event | None = None
        self.interrupted = 0  # the signal that stopped the job (SIGINT 2, SIGTERM 15), or 0

    async def run(self, concurrency: int) -> None:
        workers: list[asyncio.Future[None]] = []
        self._stop_event = asyncio.Event()
        self.dead_after = max(DEAD_AFTER, 2 * concurrency)
        waiter: asyncio.Future[Any] | None = None
        everything: asyncio.Future[Any] | None = None
        todo = self._todo()
        restore = self._catch_signals()
        try:
            first = next(todo, None)
            if first is None:
                return  # everything cached: not even the preflight
            waiter = asyncio.ensure_future(self._stop_event.wait())
            preflight = asyncio.ensure_future(self.judge.preflight())
            await asyncio.wait([preflight, waiter], return_when=asyncio.FIRST_COMPLETED)
            if not preflight.done():  # interrupted while checking the endpoint
                preflight.cancel()
                await asyncio.gather(preflight, return_exceptions=True)
                return
            preflight.result()
            slots = itertools.chain([first], todo)
            workers = [asyncio.ensure_future(self._worker(slots))
                       for _ in range(min(concurrency, len(self.verdicts) - first))]
            everything = asyncio.gather(*workers)
            await asyncio.wait([everything, waiter], return_when=asyncio.FIRST_COMPLETED)
            if everything.done():
                everything.result()  # an unexpected error in a worker is raised here
            if self.stopped is not None and self.stop_exit == 2 and not self.answered:
                raise self.stopped  # refused from the first call: a configuration error
        finally:
            for task in [*workers, *([waiter] if waiter else [])]:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            if everything is not None:  # its cancellation is read here, never reported
                await asyncio.gather(everything, return_exceptions=True)
            for _ in todo:  # a job stopped early still fills every cached vote
                pass
            self.bar.close()
            self.cache_notes()
            restore()

    def _catch_signals(self) -> Callable[[], None]:
        """On SIGINT or SIGTERM (main thread only): stop asking, keep what was judged, and
        record the rest ``failed`` as interrupted (exit 130 / 143). A second signal stops at
        once. Returns the function that puts the previous handlers back."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        loop = asyncio.get_running_loop()

        def handler(signum: int, frame: Any) -> None:
            if self.interrupted:
                raise Interrupted(signum)
            self.interrupted = signum
            loop.call_soon_threadsafe(self.interrupt, signum)

        return on_stop_signals(handler)

    def interrupt(self, signum: int) -> None:
        """Stop the job as SIGINT/SIGTERM asks: every pair not judged yet is recorded
        ``failed`` with the reason ``interrupted``."""
        self.interrupted = signum
        name = signal.Signals(signum).name
        self._stop(EndpointError(f"interrupted by {name}"), 128 + signum)

    def _stop(self, exc: EndpointError, exit_code: int) -> None:
        if self.stopped is None:
            self.stopped, self.stop_exit = exc, exit_code
            if self._stop_event is not None:
                self._stop_event.set()

    def _lookup_cache(self) -> list[int]:
        """Fill cached votes; return the slots still to judge."""
        return self._lookup(range(len(self.verdicts)))

    def _todo(self) -> Iterator[int]:
        """The slots still to judge, in order, the cache looked up :data:`LOOKUP_CHUNK` slots
        at a time as the workers take them: the first requests leave after one chunk's keys,
        not all of them (a fully cached job still looks everything up before any request)."""
        n, chunk = len(self.verdicts), LOOKUP_CHUNK
        for start in range(0, n, chunk):
            yield from self._lookup(range(start, min(n, start + chunk)))

    def _lookup(self, slots: range) -> list[int]:
        """Fill the cached votes among ``slots``; return those still to judge."""
        if self.cache is None:
            return list(slots)
        key, material, samples = self.cache.key, self.judge.cache_material, self.samples
        keys = [key(material(self.queries[slot // samples], self.chunks[slot // samples],
                             slot % samples)) for slot in slots]
        try:
            if slots.start == 0:  # before the first lookup: a write in between shows as a
                self._looked_up = self.cache.version()  # change, never as a miss
            found = self.cache.get_many(keys)
        except CacheError as exc:
            self._drop_cache(exc)
            self.keys.update(zip(slots, keys))  # a batch job names its requests by them
            return list(slots)
        todo: list[int] = []
        for slot, k, verdict in zip(slots, keys, found):
            if verdict is None:
                self.keys[slot] = k
                todo.append(slot)
            else:
                self.verdicts[slot] = verdict
                self.cached[slot] = 1
        self.bar.advance(len(slots) - len(todo), cached=True)
        return todo

    def _cached(self, slot: int) -> Verdict | None:
        """The slot's verdict if it was stored since the bulk lookup — by another job sharing
        the cache, or by this one for an identical request. While no other job has written
        to the cache since the lookup (its version is unchanged), only this job's own keys
        need a look; after the first change, every key is looked up."""
        if self.cache is None:
            return None
        key = self.keys[slot]
        if self._looked_up is not None and key not in self._stored:
            if self.cache.version() == self._looked_up:
                return None
            self._looked_up = None  # another job wrote: look every key up from now on
        try:
            return self.cache.get(key)
        except CacheError as exc:
            self._drop_cache(exc)
            return None

    def _remember(self, slot: int, verdict: Verdict) -> None:
        if self.cache is None or not self._writes:
            return
        try:
            self.cache.set(self.keys[slot], verdict)
        except CacheError as exc:  # a full disk: its answers are still read
            self._writes = False
            self.notes.append(f"warning: cannot use the cache in {self.cache.directory} "
                              f"for writing ({exc}); going on without storing — this job's "
                              "new labels are in the output but not cached")
        else:
            self._stored.add(self.keys[slot])

    def _drop_cache(self, exc: CacheError) -> None:
        """Warn once and go on without the cache (the labels are still written)."""
        if self.cache is None:
            return
        note = (f"warning: cannot use the cache in {self.cache.directory} ({exc}); going on "
                "without it — this job's labels are in the output but not cached")
        self.cache = None
        self.notes.append(note)  # shown once, in the summary (and run.log's "labels:" line)

    def cache_notes(self) -> None:
        """Add the cache's own warnings (old or invalid entries skipped, read-only) to
        :attr:`notes`, each once."""
        for note in getattr(self._cache_seen, "warnings", ()):
            if note not in self.notes:
                self.notes.append(note)

    async def _worker(self, slots: Any) -> None:
        for slot in slots:
            if self.stopped is not None:
                return
            await self._judge_slot(slot)

    def _bill(self, slot: int, input_tokens: int, output_tokens: int) -> None:
        self.tokens_in[slot] += input_tokens
        self.tokens_out[slot] += output_tokens
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def _heard(self, exc: JudgeError | None) -> None:
        """Count requests in a row that got no answer at all; stop when the endpoint is gone."""
        if exc is None or not getattr(exc, "no_answer", False):
            self.silent_in_a_row = 0
            return
        self.silent_in_a_row += 1
        if self.silent_in_a_row >= self.dead_after:
            self._stop(EndpointError(
                f"the endpoint stopped answering ({self.silent_in_a_row} requests in a row got "
                f"no answer; last: {exc.message}); the pairs not judged are recorded failed — "
                "re-run the same command when it is back"), 3)

    async def _judge_slot(self, slot: int) -> None:
        i, s = divmod(slot, self.samples)
        query, chunk = self.queries[i], self.chunks[i]
        known = self._cached(slot)  # another job sharing the cache may have judged it
        if known is not None:
            self.verdicts[slot], self.cached[slot] = known, 1
            self.bar.advance(cached=True)
            return
        estimate = self.judge.estimate_tokens(query, chunk) if self.tpm else 0
        began = time.monotonic()
        try:
            verdict = await self._ask(slot, query, chunk, s, estimate)
        except EndpointError as exc:
            self._stop(exc, 2)
            if not self.interrupted:  # an interrupted pair gets the interrupted reason
                self.errors[slot] = f"not judged: {exc.message}"
            self.bar.advance(failed=True)
        except JudgeError as exc:
            self.errors[slot] = _reason(exc, self.attempts[slot])
            self.bar.advance(failed=True)
        else:
            self.verdicts[slot] = verdict
            self.answered += 1
            self.no_usage += not verdict.usage_known
            self._bill(slot, verdict.input_tokens, verdict.output_tokens)
            if self.tpm:
                self.tpm.adjust(verdict.input_tokens + verdict.output_tokens - estimate)
            self._remember(slot, verdict)
            self.bar.advance(tokens=verdict.input_tokens + verdict.output_tokens)
        finally:
            self.latency[slot] = time.monotonic() - began

    async def _ask(self, slot: int, query: str, chunk: str, sample: int,
                   estimate: int) -> Verdict:
        """One vote under the retry policy. The first attempt is made directly (most succeed,
        and a tenacity controller costs ~30 µs of CPU per vote); after a retryable failure
        the policy takes over and sees that failure as its own first attempt, so its stop,
        wait and retry rules count every attempt exactly as if it had run them all."""
        try:
            return await self._attempt(slot, query, chunk, sample, estimate)
        except JudgeError as exc:
            if not exc.retryable:
                raise
            first: JudgeError | None = exc
        async for attempt in self.policy.retrying():
            with attempt:
                if first is not None:
                    failed, first = first, None
                    raise failed
                return await self._attempt(slot, query, chunk, sample, estimate)
        raise JudgeError("the retry policy stopped with neither an answer nor an error")

    async def _attempt(self, slot: int, query: str, chunk: str, sample: int,
                       estimate: int) -> Verdict:
        """One request for one vote (after the job's rate limits), billed and counted."""
        if self.stopped is not None:
            raise self.stopped
        self.attempts[slot] += 1
        if self.rpm:
            await self.rpm.acquire()
        if self.tpm:
            await self.tpm.acquire(estimate)
        try:
            verdict = await self.judge.judge(query, chunk, sample)
        except JudgeError as exc:
            self._bill(slot, *tokens_of(exc))
            if not usage_known_of(exc):   # an answer came, its tokens unknown: never a 0
                self.usage_unknown[slot] = True
                self.no_usage += 1
            self._heard(exc)
            raise
        self._heard(None)
        return verdict

    def records(self) -> pd.DataFrame:
        """One record per pair, in input order (the documented columns, then extras)."""
        S, n = self.samples, len(self.df)
        cols: dict[str, list[Any]] = {c: [] for c in LABEL_COLUMNS}
        want_eg = bool(getattr(self.judge, "logprobs", False))
        eg_col: list[float | None] = []
        votes_col: list[list[int]] = []
        spread_col: list[int | None] = []
        for i in range(n):
            lo, hi = i * S, (i + 1) * S
            votes = self.verdicts[lo:hi]
            got = [v for v in votes if v is not None]
            failed = len(got) < S
            ordered = sorted(got, key=lambda v: v.grade)
            median = ordered[(len(ordered) - 1) // 2] if ordered and not failed else None
            cols["grade"].append(median.grade if median else None)
            cols[STATUS].append(STATUS_FAILED if failed else STATUS_OK)
            cols["rationale"].append(median.rationale if median else "")
            cols["attempts"].append(sum(self.attempts[lo:hi]))
            cols["cached"].append(not failed and all(self.cached[lo:hi]))
            tin = tout = 0
            unknown = False
            for slot in range(lo, hi):
                # every billed attempt of this job; a cached vote (or one filled by a batch
                # job, which bills its votes itself): what its verdict cost
                v = self.verdicts[slot]
                vin, vout = (v.input_tokens, v.output_tokens) if v is not None else (0, 0)
                unknown = (unknown or (v is not None and not v.usage_known)
                           or (self.usage_unknown[slot] and not self.cached[slot]))
                if self.cached[slot]:
                    tin, tout = tin + vin, tout + vout
                else:
                    tin += max(self.tokens_in[slot], vin)
                    tout += max(self.tokens_out[slot], vout)
            # an answer without a readable usage: the pair's tokens are unknown, never 0
            cols["input_tokens"].append(None if unknown else tin)
            cols["output_tokens"].append(None if unknown else tout)
            cols["latency_s"].append(round(sum(self.latency[lo:hi]), 4))
            cols["error"].append(clean_text(self._error(lo, hi)) if failed else "")
            if want_eg:
                egs = [v.expected_grade for v in got if v.expected_grade is not None]
                eg_col.append(sum(egs) / len(egs) if egs and not failed else None)
            if S > 1:
                grades = [v.grade for v in votes if v is not None]
                votes_col.append(grades)
                spread_col.append(max(grades) - min(grades) if grades else None)
        cols["query_id"] = self.df["query_id"].tolist()
        cols["chunk_id"] = self.df["chunk_id"].tolist()
        cols["model"] = [self.judge.model] * n
        cols["prompt_id"] = [self.judge.prompt_id] * n
        out = typed_records(pd.DataFrame(cols, columns=list(LABEL_COLUMNS)))
        if want_eg:
            out["expected_grade"] = pd.array(eg_col, dtype="Float64")
        if S > 1:
            out["votes"] = votes_col
            out["vote_spread"] = pd.array(spread_col, dtype="Int64")
        return out

    def _error(self, lo: int, hi: int) -> str:
        S = hi - lo
        for slot in range(lo, hi):
            if slot in self.errors:
                prefix = f"vote {slot - lo + 1} of {S}: " if S > 1 else ""
                return prefix + self.errors[slot]
        if self.interrupted:
            return (f"interrupted ({signal.Signals(self.interrupted).name}) before this pair "
                    "was judged; run the same command again to resume")
        if self.stopped is not None:
            return f"not judged: the job stopped early ({self.stopped.message})"
        return "not judged (the job stopped first)"


def _reason(exc: JudgeError, attempts: int) -> str:
    tries = f" (gave up after {attempts} attempts)" if exc.retryable else ""
    return f"{exc.message}{tries}"


def typed_records(out: pd.DataFrame) -> pd.DataFrame:
    return out.astype({"grade": "Int64", "attempts": "int64", "cached": "bool",
                       "input_tokens": "Int64", "output_tokens": "Int64",
                       "latency_s": "float64"})


class _Progress:
    """The job's progress (a bar, a notebook line or plain lines in a log; nothing with
    ``enabled=False``), with its counts of cached and failed pairs and tokens."""

    def __init__(self, total: int, enabled: bool | None) -> None:
        from labeler.report.progress import Progress

        self.total = total
        self.done = self.n_cached = self.n_failed = self.tokens = 0
        self._shown = Progress("labelling", total, enabled=enabled)

    def _info(self) -> str:
        return f"cached {self.n_cached} · failed {self.n_failed} · tokens {self.tokens}"

    def advance(self, n: int = 1, *, cached: bool = False, failed: bool = False,
                tokens: int = 0) -> None:
        self.done += n
        self.n_cached += n if cached else 0
        self.n_failed += failed
        self.tokens += tokens
        self._shown.advance(n, self._info)

    def close(self) -> None:
        self._shown.close(self._info())


def on_stop_signals(handler: Callable[[int, Any], None]) -> Callable[[], None]:
    """``handler`` for SIGINT and SIGTERM until the returned function puts the previous
    handlers back (call from the main thread).

    Usage: ``restore = on_stop_signals(handler); ...; restore()``
    """
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in old:
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, previous in old.items():
            signal.signal(sig, previous)
    return restore
