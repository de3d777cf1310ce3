"""One label set from several judges: per pair, the mean, the median or the vote of their grades.

- ``mean``: the mean grade rounded half up (1.5 → 2);
- ``median``: the lower median (of 1, 2, 2, 3 it is 2; of 1, 2 it is 1: conservative);
- ``vote``: the most frequent grade, ties to the lower grade.

A pair a set did not grade (missing, or ``failed`` there) is decided by the other sets; a pair
that no set graded stays ``failed``. ``source`` names the sets that decided each pair, and
``votes`` holds their grades (in the order the sets were given).

Usage::

    from labeler.reconciliation.blend import blend
    records = blend({"gpt4o": "a.jsonl", "llama": "b.qrels", "qwen": "c.qrels"}, method="mean")
    io.write_labels(records, "blend.jsonl")
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from labeler import io
from labeler.errors import ConfigError
from labeler.reconciliation.leaderboard import JudgesLike, named_sets
from labeler.reconciliation.agreement import KEYS, read_llm
from labeler.schema import GRADES, LABEL_COLUMNS, STATUS, STATUS_FAILED, STATUS_OK

Method = Literal["mean", "median", "vote"]
METHODS: tuple[str, ...] = ("mean", "median", "vote")


def combine(grades: np.ndarray, method: str) -> np.ndarray:
    """Blend each row of a (pairs × sets) float array of grades, NaN where a set is silent.

    Rows with no grade at all give -1. Usage: ``combine(np.array([[1, 2, np.nan]]), "mean")``
    """
    if method not in METHODS:
        raise ConfigError(f"unknown blend method {method!r}: use {', '.join(METHODS)}")
    have = ~np.isnan(grades)
    count = have.sum(axis=1)
    out = np.full(len(grades), -1, dtype="int64")
    some = count > 0
    if method == "mean":
        total = np.where(have, grades, 0).sum(axis=1).astype("int64")
        # floor(total / count + 1/2) in integers: exact, halves go up
        out[some] = (2 * total[some] + count[some]) // (2 * count[some])
    elif method == "median":
        ordered = np.sort(np.where(have, grades, np.inf), axis=1)
        lower = np.maximum(count - 1, 0) // 2
        out[some] = ordered[np.arange(len(grades)), lower][some].astype("int64")
    else:
        tally = np.stack([(grades == g).sum(axis=1) for g in GRADES], axis=1)
        out[some] = np.asarray(GRADES)[tally.argmax(axis=1)][some]  # first max: the lower
    return out


def blend(llm: JudgesLike, *, method: Method = "mean", grade_map: io.GradeMap = None
          ) -> pd.DataFrame:
    """Label records for every pair of any set, blended by ``method`` (see module docstring).

    ``llm``: ``{name: labels}`` or a list of paths (``NAME=PATH`` names one; else the stem).

    Usage: ``blend(["a.qrels", "b.qrels", "c.qrels"], method="vote")``
    """
    if method not in METHODS:
        raise ConfigError(f"unknown blend method {method!r}: use {', '.join(METHODS)}")
    named = named_sets(llm)
    names = list(named)
    frames = [read_llm(obj, grade_map=grade_map) for obj in named.values()]
    pairs = pd.concat([f[KEYS] for f in frames], ignore_index=True).drop_duplicates()
    pairs = pairs.reset_index(drop=True)
    matrix = np.full((len(pairs), len(names)), np.nan)
    for i, df in enumerate(frames):
        ok = df.loc[df[STATUS] == STATUS_OK, [*KEYS, "grade"]]
        col = pairs.merge(ok, on=KEYS, how="left")["grade"]
        matrix[:, i] = col.to_numpy(dtype="float64", na_value=np.nan)
    blended = combine(matrix, method)
    have = ~np.isnan(matrix)
    out = pairs.copy()
    out["grade"] = pd.array(np.where(blended >= 0, blended, 0), dtype="Int64")
    out.loc[blended < 0, "grade"] = pd.NA
    out[STATUS] = np.where(blended >= 0, STATUS_OK, STATUS_FAILED)
    votes = [[int(g) for g in row[mask]] for row, mask in zip(matrix, have)]
    out["rationale"] = [f"{method} of {len(v)} judges: {', '.join(map(str, v))}" if v else ""
                        for v in votes]
    out["model"] = f"blend-{method}"
    out["prompt_id"] = "+".join(names)
    out["attempts"] = 0
    out["cached"] = False
    out["input_tokens"] = 0
    out["output_tokens"] = 0
    out["latency_s"] = 0.0
    out["error"] = np.where(blended >= 0, "", "no label set graded this pair")
    out["source"] = ["+".join(n for n, h in zip(names, mask) if h) for mask in have]
    out["votes"] = votes
    out["vote_spread"] = pd.array([max(v) - min(v) if v else None for v in votes],
                                  dtype="Int64")
    return out[[*LABEL_COLUMNS, "source", "votes", "vote_spread"]]
