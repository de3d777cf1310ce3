"""What a labelling job returns: every pair's record and a summary, whichever engine ran it.

Usage::

    from labeler.labelling.result import LabelResult
    res.records.head(); res.summary.failed
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pandas as pd
from pydantic import BaseModel

from labeler import fmt, io
from labeler.io.convert import QrelsExport
from labeler.judges.prompts import TOPIC_COLUMNS
from labeler.labelling.job import Job
from labeler.schema import PAIR_COLUMNS, STATUS, STATUS_OK


T = TypeVar("T")
__all__ = ["LabelResult", "LabelSummary", "run_sync", "summarize"]


class LabelSummary(BaseModel):
    """What a labelling job did (printed at the end of ``labeler label``)."""

    model: str
    prompt_id: str
    n_pairs: int
    judged: int
    cached: int
    failed: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    wall_s: float
    calls: int
    stopped: str | None = None
    """Why the job stopped early (key rejected, endpoint gone), else None."""
    stop_exit: int = 0
    """The exit status the early stop calls for: 2 (key or model refused) or 3."""
    notes: list[str] = []
    """Warnings the user should see (e.g. the cache could not be written)."""
    no_usage: int = 0
    """Answers judged in this job whose ``usage`` was missing or unreadable: their tokens
    are unknown (null in the records), so the tokens and cost are a lower bound."""
    flagged: int = 0
    """Pairs whose chunk reads like an instruction to the judge (see ``flags``)."""

    def render(self) -> str:
        """One line for humans: judged, cached, failed, tokens, cost, wall time (then why the
        job stopped early and any warnings, one line each)."""
        cost = "unknown (no price for this model)" if self.cost_usd is None \
            else f"{fmt.usd(self.cost_usd)} (estimate)"
        line = (f"labelled {self.n_pairs} pairs with {self.model}: {self.judged} judged, "
                f"{self.cached} cached, {self.failed} failed; tokens {self.input_tokens} in / "
                f"{self.output_tokens} out; {self.calls} calls; cost {cost}; "
                f"{self.wall_s:.1f}s")
        if self.no_usage:
            line += (f"\n{self.no_usage} answers had no usable token usage (tokens null in "
                     "their records): the tokens and cost above are a lower bound")
        if self.flagged:
            line += (f"\n{self.flagged} chunks read like instructions to the judge (flag "
                     "'injection' in their records): check those grades")
        if self.stopped:
            line += f"\nthe job stopped early: {self.stopped}"
        return "\n".join([line, *self.notes])


@dataclass(frozen=True)
class LabelResult(QrelsExport):
    """Label records (input order, one per pair) and the job's summary; the judged labels
    convert to ``to_ir_measures()``, ``to_pytrec_eval()``, ``to_ranx()``, ``to_pyterrier()``."""

    records: pd.DataFrame
    summary: LabelSummary

    def _label_records(self) -> pd.DataFrame:
        return self.records

    @property
    def exit_code(self) -> int:
        """0 when every pair was judged, 3 when some failed, 2 when the endpoint refused the
        key or the model mid-job (every pair still has a record)."""
        return self.summary.stop_exit or (3 if self.summary.failed else 0)

    def _repr_html_(self) -> str:
        from labeler.report.notebook import label_html

        return label_html(self.records, self.summary.render())


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, inside a notebook's loop or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(make))
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="labeler") as pool:
        return pool.submit(lambda: asyncio.run(_await(make))).result()


async def _await(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


def summarize(records: pd.DataFrame, judge: Any, job: Job | None, cost: float | None,
              start: float, calls_before: int) -> LabelSummary:
    """The summary of a finished job (online or batch): counts from the records, tokens and
    the stop reason from the job, wall time since ``start`` (``time.monotonic()``)."""
    if job is not None:
        job.cache_notes()
    ok = records[STATUS] == STATUS_OK
    cached = int((ok & records["cached"]).sum())
    return LabelSummary(
        model=judge.model, prompt_id=judge.prompt_id, n_pairs=len(records),
        judged=int(ok.sum()) - cached, cached=cached, failed=int((~ok).sum()),
        input_tokens=job.input_tokens if job else 0,
        output_tokens=job.output_tokens if job else 0, cost_usd=cost,
        wall_s=round(time.monotonic() - start, 3), calls=judge.calls - calls_before,
        stopped=job.stopped.message if job and job.stopped else None,
        stop_exit=job.stop_exit if job else 0, notes=job.notes if job else [],
        no_usage=job.no_usage if job else 0,
        flagged=int(records["flags"].map(bool).sum()) if "flags" in records else 0)


def check_pairs(pairs: Any) -> pd.DataFrame:
    """The pairs to label (anything :func:`labeler.io.as_pairs` takes) with string columns.

    Usage: ``df = check_pairs("pairs.jsonl")``
    """
    df = io.as_pairs(pairs)
    return df.assign(**{c: df[c].astype(str) for c in PAIR_COLUMNS})


def with_extras(records: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Keep the pairs' extra columns (not the texts) after the label columns.

    Usage: ``records = with_extras(records, pairs)``
    """
    extra = [c for c in pairs.columns if c not in PAIR_COLUMNS and c not in records.columns
             and c not in TOPIC_COLUMNS]
    if not extra:
        return records
    return pd.concat([records, pairs[extra].reset_index(drop=True)], axis=1)
