"""The labelling stage: a pairs DataFrame in, one label record per pair out.

Cached votes are looked up first; the rest go to the judge through ``concurrency`` async
workers under client-side ``rpm``/``tpm`` limits, each vote retried by one tenacity policy.
Every success is cached as soon as it arrives. A pair whose retries run out is recorded
``failed`` with the reason — never a made-up grade. An :class:`~labeler.errors.EndpointError`
(bad key, unknown model, unreachable endpoint) stops the job.

With ``samples > 1`` the grade is the *lower* median of the votes (for an even count the
smaller of the two middle votes: conservative), and ``votes`` / ``vote_spread`` are kept.

Usage::

    from labeler.labelling.stage import label
    result = label(pairs_df, model="gpt-4o-mini")            # or model="lexical" offline
    result.records        # DataFrame: query_id, chunk_id, grade, status, rationale, …
    print(result.summary.render()); raise SystemExit(result.exit_code)
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import pandas as pd
from tenacity import AsyncRetrying, retry_if_exception

from labeler import io
from labeler.labelling.flags import with_flags
from labeler.labelling.job import Job, typed_records
from labeler.labelling.cache import LabelCache
from labeler.errors import ConfigError
from labeler.judges import Judge, make_judge
from labeler.labelling.result import (LabelResult, check_pairs, with_extras, run_sync,
                                      summarize)
from labeler.labelling.limits import RetryPolicy, is_retryable, cost_usd
from labeler.settings import JudgeConfig, judge_config
from labeler.judges.prompts import Topics
from labeler.schema import PAIR_COLUMNS, STATUS, STATUS_OK

__all__ = ["alabel_pairs", "label", "label_pairs"]


# --------------------------------------------------------------------------- public API

def label(pairs: io.PairsLike, *, model: str | None = None, judge: JudgeConfig | None = None,
          api_key: str | None = None,
          max_retries: int | RetryPolicy | AsyncRetrying | None = None,
          cache_dir: str | os.PathLike[str] | None = None, no_cache: bool = False,
          prices: Mapping[str, tuple[float, float]] | None = None,
          batch_prices: Mapping[str, tuple[float, float]] | None = None,
          progress: bool | None = None, **settings: Any) -> LabelResult:
    """Label pairs with an LLM judge (``model="lexical"``: the offline baseline).

    The judge is ``judge`` (a :class:`~labeler.settings.JudgeConfig`) updated with ``model``
    and any other of its settings given as keywords (``samples=3``, ``base_url=...``). There
    is no default model. The key is ``api_key``, else the variable named by ``api_key_env``
    (``OPENAI_API_KEY``); it goes to the client only. ``max_retries`` may also be a
    :class:`~labeler.labelling.limits.RetryPolicy` or a tenacity ``AsyncRetrying``. Works in
    notebooks
    (with a progress bar there). ``batch=True`` goes through the Batch API instead
    (:mod:`labeler.labelling.batch`; ``batch_prices`` override its half-price estimate).
    ``engine="ray"`` sends the requests through Ray Data actors
    (:mod:`labeler.labelling.ray_engine`; cache, records and exit status as locally).

    Usage::

        result = labeler.label("pairs.jsonl", model="gpt-4o-mini", concurrency=16)
        result = labeler.label(pairs_df, model="llama3.1", base_url="http://localhost:11434/v1")
        result.records, result.summary
    """
    if model is None and judge is None:
        raise ConfigError("label() needs a model: e.g. model='gpt-4o-mini', a local model with "
                          "base_url=..., or model='lexical' for the offline baseline",
                          setting="model")
    if isinstance(max_retries, int) and not isinstance(max_retries, bool):
        settings["max_retries"] = max_retries
    cfg = judge_config(judge, model=model, **settings)
    df = io.as_pairs(pairs)
    the_judge = make_judge(cfg, api_key=api_key, topics=Topics.from_frame(df))
    cache = LabelCache(cache_dir) if the_judge.cacheable and not no_cache else None
    policy = _retry_policy(max_retries, cfg)
    try:
        if cfg.batch or cfg.batch_file_in or cfg.batch_file_out:
            from labeler.labelling.batch import batch_job

            return batch_job(df, the_judge, cfg, cache=cache, retry=policy, prices=prices,
                             batch_prices=batch_prices)
        if cfg.engine == "ray" and not the_judge.offline:
            from labeler.labelling.ray_engine import ray_label

            return ray_label(df, the_judge, cfg, cache=cache, retry=policy, prices=prices,
                             progress=progress)
        return label_pairs(df, the_judge, cache=cache, concurrency=cfg.concurrency,
                           rpm=cfg.rpm, tpm=cfg.tpm, retry=policy, prices=prices,
                           progress=progress)
    finally:
        if cache is not None:
            cache.close()


class _TenacityPolicy:
    """A user's tenacity ``AsyncRetrying`` as a policy: a fresh copy per pair that re-raises
    the last error and never retries what must stop the job (a rejected key, a 400)."""

    def __init__(self, base: AsyncRetrying) -> None:
        self.base = base

    def retrying(self) -> AsyncRetrying:
        return self.base.copy(retry=self.base.retry & retry_if_exception(is_retryable),
                              reraise=True)


def _retry_policy(max_retries: int | RetryPolicy | AsyncRetrying | None, cfg: JudgeConfig
                  ) -> Any:
    if isinstance(max_retries, RetryPolicy):
        return max_retries
    if isinstance(max_retries, AsyncRetrying):
        return _TenacityPolicy(max_retries)
    if max_retries is None or isinstance(max_retries, int):
        return RetryPolicy(cfg.max_retries, cfg.backoff_base, cfg.backoff_max)
    raise ConfigError("max_retries must be an int, a RetryPolicy or a tenacity "
                      f"AsyncRetrying, not {type(max_retries).__name__}", setting="max_retries")


def label_pairs(pairs: pd.DataFrame, judge: Judge, **options: Any) -> LabelResult:
    """Synchronous :func:`alabel_pairs` (runs in a worker thread if a loop is running)."""
    return run_sync(lambda: alabel_pairs(pairs, judge, **options))


async def alabel_pairs(pairs: pd.DataFrame, judge: Judge, *, cache: LabelCache | None = None,
                       concurrency: int = 8, rpm: float | None = None,
                       tpm: float | None = None, max_retries: int = 5,
                       retry: RetryPolicy | None = None,
                       prices: Mapping[str, tuple[float, float]] | None = None,
                       progress: bool | None = None) -> LabelResult:
    """Judge every pair (see module docstring); ``retry`` overrides ``max_retries``.

    Usage::

        result = await alabel_pairs(pairs_df, OpenAIJudge("gpt-4o-mini"), cache=LabelCache())
    """
    start = time.monotonic()
    if concurrency < 1:
        raise ConfigError(f"`concurrency` must be at least 1, got {concurrency}",
                          setting="concurrency")
    df = check_pairs(pairs)
    calls_before = judge.calls
    if judge.offline and hasattr(judge, "judge_frame"):
        records = _offline_records(df, judge)
        job = None
    else:
        job = Job(df, judge, cache if judge.cacheable else None,
                   retry or RetryPolicy(max_retries), rpm, tpm, progress)
        try:
            await job.run(concurrency)
        finally:
            await judge.aclose()
        records = job.records()
    records = with_flags(records, df)
    in_tok = job.input_tokens if job else 0
    out_tok = job.output_tokens if job else 0
    summary = summarize(records, judge, job, cost_usd(judge.model, in_tok, out_tok, prices),
                        start, calls_before)
    return LabelResult(records=with_extras(records, df), summary=summary)


# --------------------------------------------------------------------------- helpers


def _offline_records(df: pd.DataFrame, judge: Any, batch: int = 100_000) -> pd.DataFrame:
    # In batches: the judge's per-pair Python objects stay small for millions of pairs.
    graded = pd.concat([judge.judge_frame(df.iloc[i:i + batch][list(PAIR_COLUMNS)])
                        for i in range(0, len(df), batch)], ignore_index=True)
    n = len(df)
    out = pd.DataFrame({
        "query_id": df["query_id"].to_numpy(), "chunk_id": df["chunk_id"].to_numpy(),
        "grade": graded["grade"].to_numpy(), STATUS: STATUS_OK,
        "rationale": graded["rationale"].astype(str).to_numpy(), "model": judge.model,
        "prompt_id": judge.prompt_id, "attempts": 1, "cached": False, "input_tokens": 0,
        "output_tokens": 0, "latency_s": 0.0, "error": "",
    }, index=pd.RangeIndex(n))
    return typed_records(out)


