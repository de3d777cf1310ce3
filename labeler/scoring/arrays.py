"""The arrays the scoring kernel passes around: a run, qrels, the kernel's output and the
judged ranked rows every measure is computed from; gains, discounts and the ideal DCG.

Usage::

    from labeler.scoring.arrays import RunArrays, QrelsArrays, discounts
    discounts(3)   # log2(2), log2(3), log2(4)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pyarrow as pa

Strings: TypeAlias = pa.Array | pa.ChunkedArray

class NeedsIO(Exception):
    """This input must go through ``io`` (a key may repeat, or an id needs cleaning)."""

    def __init__(self, which: str) -> None:
        self.which = which
        super().__init__(which)


@dataclass(frozen=True)
class RunArrays:
    """A run as flat arrays: ids as Arrow ``large_string`` arrays, ``system`` an array or
    one name for every row."""

    system: Strings | str
    query: Strings
    chunk: Strings
    score: np.ndarray


@dataclass(frozen=True)
class QrelsArrays:
    """Qrels as flat arrays: ids as Arrow ``large_string`` arrays, ``grade`` int64."""

    query: Strings
    chunk: Strings
    grade: np.ndarray


@dataclass(frozen=True)
class KernelOut:
    """Per group (one (system, query) of the run) and per k: arrays of shape (groups, len(ks))."""

    system_names: list[str]  # the run's systems, in order of first appearance
    system: np.ndarray       # (groups,) index into system_names of each group
    queries: pa.Array        # (groups,) query id of each group
    dcg: np.ndarray
    idcg: np.ndarray
    judged: np.ndarray       # share of the top k that is judged
    in_qrels: np.ndarray     # (groups,) the query has at least one judgement
    ranked: Ranked | None = None   # the ranked rows behind these figures (other measures)


@dataclass(frozen=True)
class Ranked:
    """The judged rows of the top of every group's ranking, in (group, rank) order, and the
    qrels in the run's query code space: what every measure is computed from (an unjudged
    row adds nothing to any measure)."""

    row_g: np.ndarray        # group of each judged ranked row
    pos: np.ndarray          # its 0-based rank
    grades: np.ndarray       # its grade in the qrels
    counts: np.ndarray       # (groups,) rows of each group in the run
    group_q: np.ndarray      # (groups,) query code of each group
    qr_q: np.ndarray         # query code of each qrels row
    qr_grade: np.ndarray     # grade of each qrels row
    qr_query: Strings        # query id of each qrels row
    n_codes: int             # number of query codes (run queries first)
    depth: int | None        # ranks kept per group (None: every rank)


@dataclass
class Groups:
    counts: np.ndarray       # rows per group
    group_q: np.ndarray      # query code of each group (into q_dict)
    q_dict: Strings          # the run's distinct query ids
    system_names: list[str]  # the run's systems, in order of first appearance
    system: np.ndarray       # index into system_names of each group
    heads: np.ndarray | None = None      # first row of each group when rows come grouped
    g: np.ndarray | None = None          # group of each row (made on demand when grouped)
    by_group: np.ndarray | None = None   # rows ordered by group (stable) when not grouped

    def rows_group(self) -> np.ndarray:
        """The group of every row."""
        if self.g is None:
            self.g = np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)
        return self.g


def gain_of(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gain of each grade: ``rel`` (linear) or ``2**rel - 1`` (exponential), as float64."""
    g = np.asarray(grades, dtype=np.float64)
    return np.exp2(g) - 1.0 if gain == "exponential" else g


def discounts(n: int) -> np.ndarray:
    """``log2(i + 1)`` for positions i = 1..n."""
    return np.log2(np.arange(2, n + 2, dtype=np.float64))


def ideal_dcg(owner: np.ndarray, grade: np.ndarray, n_owner: int, ks: list[int],
               gain: str) -> np.ndarray:
    """IDCG@k per owner from its grades: the ideal list is its grades sorted descending.

    Only as many discounts as the longest ideal list are made, whatever k is."""
    positive = grade > 0
    owners, grades = owner[positive], grade[positive]
    levels = np.unique(grades)[::-1]   # best first
    if not len(levels) or not ks:
        return np.zeros((n_owner, len(ks)))
    # how many chunks of each grade each owner has: one count over (owner, level) cells
    cell = owners * len(levels) + (len(levels) - 1 - np.searchsorted(levels[::-1], grades))
    per_level = np.bincount(cell, minlength=n_owner * len(levels)).reshape(n_owner, -1)
    longest = int(per_level.sum(axis=1).max(initial=0))
    cum = np.concatenate([[0.0], np.cumsum(1.0 / discounts(min(max(ks), longest)))])
    out = np.zeros((n_owner, len(ks)))
    start = np.zeros(n_owner, dtype=np.int64)
    for j_level, level in enumerate(levels):
        end = start + per_level[:, j_level]
        g_val = float(gain_of(np.array([level]), gain)[0])
        for j, k in enumerate(ks):
            out[:, j] += g_val * (cum[np.minimum(end, k)] - cum[np.minimum(start, k)])
        start = end
    return out

