"""Batch mode: label through the OpenAI / Azure OpenAI Batch API, or a ``vllm run-batch`` file.

Every vote the cache cannot answer becomes one line of a batch input file (the body exactly
the online request, ``custom_id`` its cache key); files are split at 50,000 requests / 190 MB,
uploaded (purpose ``batch``) and submitted (completion window 24h), then polled — every few
seconds at first, backing off to at most a minute. Output and error lines are read by the
judge's own parser into the same cache and the same records as online answers. Failed,
expired and unreadable lines go into follow-up batches while attempts remain, then are
recorded ``failed`` with the reason; a batch refused whole for its structured-output format
steps the format down and is resubmitted. Batch ids live in ``CACHE_DIR/batches``, so the
same command started again (after a kill, or :class:`BatchNotReady` from ``wait``) polls
them instead of submitting again.

Usage::

    result = await abatch_label(pairs_df, judge, cache=LabelCache(), options=BatchOptions())
    n = write_batch_file(pairs_df, judge, "requests.jsonl")        # for vllm run-batch
    result = await abatch_label(pairs_df, judge, options=BatchOptions(file_in="out.jsonl"))
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from labeler.labelling.batch_engine import BatchEngine
from labeler.labelling.batchfile import (POLL_ENV, BatchFileWritten, BatchNotReady, BatchOptions,
                                         batch_cost_usd, input_line, read_output_line)
from labeler.labelling.cache import LabelCache
from labeler.errors import ConfigError, EndpointError, InputError, JudgeError
from labeler.judges.openai_judge import JsonObject
from labeler.labelling.job import Job as _Job
from labeler.labelling.flags import with_flags
from labeler.labelling.result import LabelResult, check_pairs, with_extras, summarize
from labeler.labelling.limits import RetryPolicy
from labeler.redact import redact

if TYPE_CHECKING:
    from labeler.settings import JudgeConfig

__all__ = ["BatchFileWritten", "BatchNotReady", "BatchOptions", "abatch_label", "batch_job",
           "write_batch_file"]


def _read_results(engine: BatchEngine, path: Path) -> None:
    """Finish the job from a ``vllm run-batch`` output file (no endpoint call)."""
    matched = lines = 0
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the batch output file ({exc})", path=path) from None
    with handle:
        for n, text in enumerate(handle, 1):
            if not text.strip():
                continue
            lines += 1
            try:
                obj = json.loads(text, object_hook=JsonObject)
            except ValueError:
                raise InputError("not a JSON line of a batch output file", path=path,
                                 line=n) from None
            outcome = read_output_line(engine.judge, obj)
            if outcome.custom_id is None:
                raise InputError("a batch output line without custom_id", path=path, line=n)
            if outcome.custom_id in engine.decided:  # the same custom id again
                engine.apply(outcome, 1, {})  # the first answer stands (a warning if not alike)
                continue
            if outcome.custom_id not in engine.slots:
                if outcome.verdict is not None:
                    engine.answers.append((outcome.custom_id, outcome.verdict))
                continue
            matched += 1
            if outcome.format_refused:
                outcome.reason += " (write the file again with --structured json_object)"
            engine.apply(outcome, 1, {})
            if outcome.custom_id in engine.slots:
                engine.decided[outcome.custom_id] = None
            for slot in engine.slots.pop(outcome.custom_id, []):  # no follow-up offline
                engine.job.errors[slot] = redact(outcome.reason, engine.secret)
                engine.job.attempts[slot] = 1
            if len(engine.answers) >= 10_000:
                engine.flush()
    engine.flush()
    if lines and not matched and engine.slots:
        raise InputError(f"none of its {lines} answers belongs to this job's requests; "
                         "give the same --model, --prompt, --samples and sampling options "
                         "as when the batch input file was written", path=path)
    for slots in engine.slots.values():
        for slot in slots:
            engine.job.errors[slot] = (f"no answer in {path.name}; write the requests still "
                                     "missing with --batch-file-out and run them again")
    engine.slots.clear()


def _make_job(pairs: pd.DataFrame, judge: Any, cache: LabelCache | None,
              policy: RetryPolicy) -> _Job:
    if judge.offline or not hasattr(judge, "request_body"):
        raise ConfigError(f"batch mode needs an LLM judge; {judge.model!r} judges offline")
    return _Job(check_pairs(pairs), judge, cache if judge.cacheable else None, policy,
                None, None, False)


async def abatch_label(pairs: pd.DataFrame, judge: Any, *, cache: LabelCache | None = None,
                       options: BatchOptions | None = None, max_retries: int = 5,
                       retry: RetryPolicy | None = None,
                       prices: Mapping[str, tuple[float, float]] | None = None
                       ) -> LabelResult:
    """Label ``pairs`` through the Batch API (or ``options.file_in``); see module docstring.
    Raises :class:`BatchNotReady` when ``options.wait`` runs out first.

    Usage::

        result = await abatch_label(df, OpenAIJudge("gpt-4o-mini"), cache=LabelCache())
    """
    opts = options or BatchOptions()
    start = time.monotonic()
    job = _make_job(pairs, judge, cache, retry or RetryPolicy(max_retries))
    calls_before = judge.calls
    engine = BatchEngine(job, opts, prices)
    engine.pending()
    try:
        if opts.file_in is not None:
            _read_results(engine, Path(opts.file_in))
        else:
            await engine.run()
    except JudgeError as exc:
        raise EndpointError(f"the Batch API of {judge.where} kept failing ({exc.message}); "
                            "the submitted batches are kept: run the same command again to "
                            "collect them") from None
    finally:
        await judge.aclose()
    records = with_flags(job.records(), job.df)
    cost = batch_cost_usd(judge.model, job.input_tokens, job.output_tokens, prices,
                          opts.batch_prices)
    summary = summarize(records, judge, job, cost, start, calls_before)
    return LabelResult(records=with_extras(records, job.df), summary=summary)


def write_batch_file(pairs: pd.DataFrame, judge: Any, path: str | Path, *,
                     cache: LabelCache | None = None) -> int:
    """Write the batch input file of every vote the cache cannot answer (for
    ``vllm run-batch -i FILE -o OUT``) without calling the endpoint; returns the request count.

    Usage::

        n = write_batch_file(pairs_df, OpenAIJudge("Qwen/Qwen2.5-7B-Instruct",
                             base_url="http://gpu:8000/v1"), "requests.jsonl")
    """
    from labeler.io.writers import atomic_path

    job = _make_job(pairs, judge, cache, RetryPolicy(0))
    engine = BatchEngine(job, BatchOptions())
    engine.pending()
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        for key in engine.slots:
            fh.write(input_line(key, engine.body(key), "/v1/chat/completions"))
    return len(engine.slots)


def batch_job(pairs: pd.DataFrame, judge: Any, cfg: JudgeConfig, *,
              cache: LabelCache | None = None, retry: Any = None,
              prices: Mapping[str, tuple[float, float]] | None = None,
              batch_prices: Mapping[str, tuple[float, float]] | None = None) -> LabelResult:
    """The batch modes of ``label()``: ``cfg.batch`` (the Batch API, waiting at most
    ``cfg.batch_wait``), ``cfg.batch_file_in`` (a results file), or ``cfg.batch_file_out``
    (raises :class:`BatchFileWritten` once the input file is written).

    Usage::

        batch_job(df, judge, JudgeConfig(model="gpt-4o-mini", batch=True), cache=cache)
    """
    from labeler.labelling.result import run_sync

    if cfg.batch_file_out:
        n = write_batch_file(pairs, judge, cfg.batch_file_out, cache=cache)
        raise BatchFileWritten(cfg.batch_file_out, n, judge.model)
    first = float(os.environ.get(POLL_ENV) or 2.0)  # tests poll faster
    options = BatchOptions(wait=cfg.batch_wait, file_in=cfg.batch_file_in,
                           batch_prices=batch_prices, poll_first=first,
                           poll_max=max(first, min(60.0, first * 30)))
    return run_sync(lambda: abatch_label(pairs, judge, cache=cache, options=options,
                                         retry=retry or RetryPolicy(cfg.max_retries),
                                         prices=prices))
