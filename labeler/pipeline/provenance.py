"""Who made the labels: the judge, prompt, counts and cost behind a set of LLM label records.

A report must say which judge it is about. This reads it from the label records themselves
(``model``, ``prompt_id``, ``status``, token columns), so it is right whatever
produced the file; a plain qrels file says nothing about its judge, and the summary says so.

Usage::

    from labeler.pipeline.provenance import judge_summary
    judge_summary(io.read_labels("labels.jsonl"), source="labels.jsonl")
    # {"models": ["gpt-4o"], "prompt_ids": ["default-3f2a..."], "n_pairs": 190, ...}
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from labeler.schema import STATUS, STATUS_FAILED, STATUS_OK


def _distinct(df: pd.DataFrame, col: str) -> list[str]:
    if col not in df.columns:
        return []
    values = df[col].dropna().astype(str)
    return sorted(v for v in values.unique() if v.strip())


def _total(df: pd.DataFrame, col: str) -> int | None:
    if col not in df.columns:
        return None
    return int(pd.to_numeric(df[col], errors="coerce").fillna(0).sum())


def judge_summary(records: pd.DataFrame, *, source: str | os.PathLike[str] | None = None,
                  prices: Mapping[str, tuple[float, float]] | None = None) -> dict[str, Any]:
    """The judge behind ``records`` (label records, or qrels): ``models``, ``prompt_ids``,
    ``n_pairs``, ``n_judged``, ``n_failed``, ``input_tokens``, ``output_tokens``,
    ``cost_usd`` (None when a model has no known price), ``source`` and its ``modified``
    time (UTC, ISO 8601), ``labeler_version`` and ``date`` (of this summary), and
    ``known`` (False for plain qrels, which do not say who made them).

    Usage: ``judge_summary(io.read_labels(path), source=path)``
    """
    from labeler import __version__
    from labeler.labelling.limits import cost_usd

    status = (records[STATUS].astype(str) if STATUS in records.columns
              else pd.Series(STATUS_OK, index=records.index))
    models = _distinct(records, "model")
    tokens_in, tokens_out = _total(records, "input_tokens"), _total(records, "output_tokens")
    cost: float | None = None
    if models and tokens_in is not None and tokens_out is not None:
        cost = 0.0
        for model, group in records.groupby(records["model"].astype(str)):
            t_in, t_out = _total(group, "input_tokens") or 0, _total(group, "output_tokens") or 0
            if t_in == 0 and t_out == 0:
                continue  # no tokens (an offline judge, or every answer cached): no cost
            c = cost_usd(str(model), t_in, t_out, prices)
            if c is None:
                cost = None
                break
            cost += c
    modified = None
    if source is not None and Path(source).is_file():
        mtime = Path(source).stat().st_mtime
        modified = datetime.fromtimestamp(mtime, tz=timezone.utc).isoformat(timespec="seconds")
    return {
        "known": bool(models),
        "models": models,
        "prompt_ids": _distinct(records, "prompt_id"),
        "n_pairs": len(records),
        "n_judged": int((status == STATUS_OK).sum()),
        "n_failed": int((status == STATUS_FAILED).sum()),
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost,
        "source": None if source is None else str(source),
        "modified": modified,
        "labeler_version": __version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
