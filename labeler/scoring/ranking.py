"""Ranking for the scoring kernel: each (system, query) group's rows in trec_eval's order
(score descending, then chunk id descending by byte order), cheaply when the rows come
grouped and ranked, as in run files; and the check that no chunk is ranked twice.

Usage::

    rows, pos, row_g = top_rows(groups, run, kmax=10)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeler import _arrow
from labeler._arrow import clean_ids, take
from labeler.scoring.arrays import Groups, NeedsIO, QrelsArrays, RunArrays, Strings
from labeler.scoring.lookup import UNJUDGED, QrelsIndex, judged_rows, lookup_grades

# --------------------------------------------------------------------------- ranking

def top_rows(grp: Groups, run: RunArrays, kmax: int | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows in rank order (group, score desc, chunk id desc), their 0-based rank and group,
    keeping only ranks < ``kmax`` (every row when ``kmax`` is None)."""
    score, counts = run.score, grp.counts
    n = len(score)
    tied = _ranked_already(grp, run)
    if tied is not None and grp.heads is not None:
        return _ranked_rows(grp.heads, counts, run, tied, kmax)
    g = grp.rows_group()
    cand = np.arange(n)
    if kmax is not None and kmax < counts.max(initial=0):
        cand = _candidates(grp, score, kmax)
    every = _rank_all(grp, run) if len(cand) == n else None
    rows = every if every is not None else cand[_rank_sort(g[cand], score[cand],
                                                           take(run.chunk, cand))]
    row_g = g[rows]
    pos = np.arange(len(rows), dtype=np.int64) - _starts(np.bincount(row_g, minlength=len(
        counts)))[row_g]
    keep = np.arange(len(rows)) if kmax is None else np.flatnonzero(pos < kmax)
    return rows[keep], pos[keep], row_g[keep]


def _ranked_already(grp: Groups, run: RunArrays) -> np.ndarray | None:
    """When the rows come grouped and ranked by score (ties aside), as in run files: the
    rows i whose score ties row i + 1's in the same group; else None."""
    n = len(run.score)
    if grp.heads is None or n < 2:
        return None
    score, bounds = run.score, grp.heads[1:] - 1   # row i is a group's last when i in bounds
    if not _only_at(np.flatnonzero(score[1:] > score[:-1]), bounds):
        return None
    tied = np.flatnonzero(score[1:] == score[:-1])
    return tied[~_at(tied, bounds)]


def _at(rows: np.ndarray, sorted_rows: np.ndarray) -> np.ndarray:
    """Which of ``rows`` are in ``sorted_rows``."""
    if not len(sorted_rows):
        return np.zeros(len(rows), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_rows, rows), len(sorted_rows) - 1)
    return sorted_rows[at] == rows


def _only_at(rows: np.ndarray, sorted_rows: np.ndarray) -> bool:
    return bool(_at(rows, sorted_rows).all())


def _ties(heads: np.ndarray, run: RunArrays, tied: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Rows of ranked groups whose score ties a neighbour's (``tied``: row i ties row i + 1):
    (those rows, their group, the same rows in trec_eval's order: chunk id descending within
    a tie); None without ties."""
    if not len(tied):
        return None
    members = np.union1d(tied, tied + 1)
    m_group = np.searchsorted(heads, members, side="right") - 1
    reordered = members[_rank_sort(m_group, run.score[members], take(run.chunk, members))]
    return members, m_group, reordered


def _ranked_rows(heads: np.ndarray, counts: np.ndarray, run: RunArrays, tied: np.ndarray,
                 kmax: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`top_rows` for rows already grouped and ranked by score: only runs of tied
    scores need ordering (by chunk id, descending)."""
    top = counts if kmax is None else np.minimum(counts, kmax)
    row_g = np.repeat(np.arange(len(top), dtype=np.int64), top)
    pos = np.arange(len(row_g), dtype=np.int64) - np.repeat(_starts(top), top)
    rows = heads[row_g] + pos
    ties = _ties(heads, run, tied)
    if ties is not None:   # put each run of equal scores in trec_eval's order
        members, m_group, reordered = ties
        rank = members - heads[m_group]           # where each member sits in its group
        kept = rank < top[m_group]
        rows[(_starts(top)[m_group] + rank)[kept]] = reordered[kept]
    return rows, pos, row_g


def judged_ranked(grp: Groups, run: RunArrays, qr_q: np.ndarray, qrels: QrelsArrays,
                   q_index: QrelsIndex | None, check_run: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, rank, grade) of every judged row of the run, in (group, rank) order: the
    grades are looked up in the run's own row order, block by block, and only the judged
    rows are then ranked. ``check_run``: check the run's ids on the way (rows grouped, one
    system)."""
    found = judged_rows(_row_codes(grp), run.chunk, qr_q, qrels, q_index,
                        check_block if check_run else None)
    if found is None:   # two qrels keys share a hash: the exact lookup decides
        if check_run:   # the blocks were not seen
            check_ranked_once(run, grp)
        every = lookup_grades(grp.group_q[grp.rows_group()], run.chunk, qr_q, qrels)
        rows = np.flatnonzero(every != UNJUDGED)
        grades = every[rows]
    else:
        rows, grades, edges = found
        if check_run:
            check_edges(edges)
    tied = _ranked_already(grp, run)
    if tied is not None and grp.heads is not None:
        g = np.searchsorted(grp.heads, rows, side="right") - 1
        pos = rows - grp.heads[g]
        ties = _ties(grp.heads, run, tied)
        if ties is not None:   # a tied row takes the place its chunk id gives it
            members, m_group, reordered = ties   # members sorted; reordered the same rows
            at = np.minimum(np.searchsorted(members, rows), len(members) - 1)
            hit = members[at] == rows
            # the k-th member goes where reordered holds it
            slot_of = (members - grp.heads[m_group])[np.argsort(reordered)]
            pos[hit] = slot_of[at[hit]]
    else:   # rows in no useful order: rank every row, then pick the judged ones
        ranked, rank, _ = top_rows(grp, run, None)
        rank_of_row = np.empty(len(run.score), dtype=np.int64)
        rank_of_row[ranked] = rank
        g, pos = grp.rows_group()[rows], rank_of_row[rows]
    key = g * (int(grp.counts.max(initial=0)) + 1) + pos
    if len(key) > 1 and not bool(np.all(key[1:] > key[:-1])):
        order = np.argsort(key, kind="stable")   # nearly sorted: a few runs of ties moved
        g, pos, grades = g[order], pos[order], grades[order]
    return g, pos, grades


def _row_codes(grp: Groups) -> Callable[[int, int], np.ndarray]:
    """``codes(lo, hi)``: the query code of rows ``lo..hi`` (made per block when the rows
    come grouped)."""
    if grp.heads is None:
        g = grp.rows_group()
        return lambda lo, hi: grp.group_q[g[lo:hi]]
    heads, ends = grp.heads, grp.heads + grp.counts

    def codes(lo: int, hi: int) -> np.ndarray:
        g0 = int(np.searchsorted(heads, lo, side="right")) - 1
        g1 = int(np.searchsorted(heads, hi, side="left"))
        lens = np.minimum(ends[g0:g1], hi) - np.maximum(heads[g0:g1], lo)
        return np.repeat(grp.group_q[g0:g1], lens)

    return codes


def _rank_sort(g: np.ndarray, score: np.ndarray, chunk: Strings) -> np.ndarray:
    """Order by group, score descending, chunk id descending (bytes): trec_eval's ranking."""
    table = pa.table({"g": g, "s": score, "c": chunk})
    return pc.sort_indices(table, sort_keys=[("g", "ascending"), ("s", "descending"),
                                             ("c", "descending")]).to_numpy()


def _starts(counts: np.ndarray) -> np.ndarray:
    return np.cumsum(counts) - counts


def _alike(grp: Groups) -> bool:
    """Groups alike enough in size for a (groups × longest group) table."""
    return len(grp.counts) * int(grp.counts.max(initial=0)) <= 2 * len(grp.rows_group()) + 4096


def _slots(grp: Groups) -> np.ndarray:
    """Each row's place in its group's row of a (groups × longest group) table."""
    g, counts = grp.rows_group(), grp.counts
    if grp.by_group is None:
        return np.arange(len(g), dtype=np.int64) - _starts(counts)[g]
    slot = np.empty(len(g), dtype=np.int64)
    slot[grp.by_group] = np.arange(len(g)) - _starts(counts)[g[grp.by_group]]
    return slot


def _candidates(grp: Groups, score: np.ndarray, k: int) -> np.ndarray:
    """Rows scoring at least their group's k-th best score (ties at that score included):
    a superset of every group's top k, found without a sort when groups are alike in size."""
    g, counts = grp.rows_group(), grp.counts
    if not _alike(grp):     # very uneven groups: sort everything
        return np.arange(len(g))
    table = np.full((len(counts), int(counts.max(initial=0))), -np.inf)
    table[g, _slots(grp)] = score
    kth = -np.partition(-table, k - 1, axis=1)[:, k - 1]
    return np.flatnonzero(score >= kth[g])


def _rank_all(grp: Groups, run: RunArrays) -> np.ndarray | None:
    """Every row in rank order (group, score desc, chunk id desc) when groups are alike in
    size: each group's scores sorted in one (groups × longest group) table, then only the
    runs of tied scores ordered by chunk id; None for very uneven groups."""
    if not _alike(grp):
        return None
    g, counts = grp.rows_group(), grp.counts
    shape = (len(counts), int(counts.max(initial=0)))
    slot = _slots(grp)
    neg = np.full(shape, np.inf)   # empty cells sort last
    neg[g, slot] = -run.score
    row_of = np.full(shape, -1, dtype=np.int64)
    row_of[g, slot] = np.arange(len(g))
    rows = np.take_along_axis(row_of, np.argsort(neg, axis=1), axis=1).ravel()
    rows = rows[rows >= 0]
    row_g, score = g[rows], run.score[rows]
    tied = np.flatnonzero((row_g[1:] == row_g[:-1]) & (score[1:] == score[:-1]))
    if len(tied):   # each run of equal scores in trec_eval's order
        at = np.union1d(tied, tied + 1)
        members = rows[at]
        rows[at] = members[_rank_sort(g[members], run.score[members], take(run.chunk, members))]
    return rows


def stable_group_order(g: np.ndarray, n_groups: int) -> np.ndarray:
    """Rows ordered by group, stable (numpy's radix sort on 16-bit keys)."""
    if n_groups <= 1 << 16:
        return np.argsort(g.astype(np.uint16), kind="stable")
    order = np.argsort((g & 0xFFFF).astype(np.uint16), kind="stable")
    return order[np.argsort((g[order] >> 16).astype(np.uint16), kind="stable")]


# --------------------------------------------------------------------------- grades

def check_ranked_once(run: RunArrays, grp: Groups) -> None:
    """Raise :class:`NeedsIO` unless every chunk id is clean and ranked once per group."""
    if not clean_ids(run.chunk) or _run_may_repeat(run.chunk, grp):
        raise NeedsIO("run")


@dataclass(frozen=True)
class _Edges:
    """The keys of the first and the last query of a block (they may go on next door)."""

    first: int
    first_keys: np.ndarray
    last: int
    last_keys: np.ndarray


def check_block(part: pa.Array, key: np.ndarray, codes: np.ndarray) -> _Edges | None:
    """:func:`check_run` on one block of a run grouped by query (one system), on the keys
    of the grade lookup (equal (query, id) give equal keys); the queries at its edges are
    checked with their neighbours' by :func:`check_edges`."""
    if not len(part):
        return None
    if not _arrow.clean_chunk(part) or _arrow.has_equal_neighbours(np.sort(key)):
        raise NeedsIO("run")
    first, last = int(codes[0]), int(codes[-1])
    return _Edges(first, key[codes == first], last, key[codes == last])


def check_edges(edges: list[_Edges | None]) -> None:
    """The repeat test for queries cut by a block edge (:func:`check_block`)."""
    carry, code = np.zeros(0, np.uint64), -1
    for e in edges:
        if e is None:
            continue
        if e.first == code and _arrow.has_equal_neighbours(
                np.sort(np.concatenate([carry, e.first_keys]))):
            raise NeedsIO("run")
        if e.first == e.last:   # one query all through the block: it may go on further
            carry = np.concatenate([carry, e.first_keys]) if e.first == code else e.first_keys
        else:
            carry = e.last_keys
        code = e.last


def _run_may_repeat(chunk: Strings, grp: Groups) -> bool:
    """A chunk may be ranked twice for one (system, query): see :func:`_arrow.may_repeat`."""
    counts = grp.counts
    if len(counts) and bool((counts == counts[0]).all()):
        return _arrow.may_repeat(chunk, block=int(counts[0]), order=grp.by_group)
    return _arrow.may_repeat(chunk, grp.rows_group())


