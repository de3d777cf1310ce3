"""The vectorised NDCG@k kernel behind :func:`labeler.scoring.results.evaluate` (trec_eval
``ndcg_cut``).

Arrays in, arrays out. Steps: find the (system, query) groups of the run (cheaply when the
rows come grouped, as in every run file); order each group by score descending then chunk
id descending by byte order (trec_eval) — nothing to do when the rows are already in that
order, else only the rows that can reach the top k are sorted; look the grades of those rows
up in the qrels through (query, id-hash) keys, every match confirmed on the strings; sum
gains in rank order with :func:`numpy.bincount`. IDCG comes from the number of judged chunks
at each grade per query.

Usage::

    out = kernel(RunArrays(...), QrelsArrays(...), ks=[10], gain="linear", ideal="qrels")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from labeler import _arrow
from labeler._arrow import changes, clean_ids, encode, group_codes, take
from labeler.scoring.lookup import UNJUDGED, QrelsIndex, judged_rows, lookup_grades

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
class _Groups:
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


# --------------------------------------------------------------------------- kernel

def kernel(run: RunArrays, qrels: QrelsArrays, ks: list[int], gain: str, ideal: str,
           check_run: bool = False, check_qrels: bool = False, depth: int | None = 0
           ) -> KernelOut:
    """NDCG@k ingredients for every (system, query) group of ``run``.

    With ``check_run``/``check_qrels`` the input has not been through ``io``: its ids are
    checked for blanks and its keys for repeats, and :class:`NeedsIO` is raised on doubt.
    ``depth``: ranks to keep in :attr:`KernelOut.ranked` (0: ``max(ks)``; None: all).
    """
    kmax = max(ks) if depth == 0 else (None if depth is None else max(depth, *ks))
    grp = _groups(run, check_run)
    every_rank = ideal == "qrels" and (kmax is None or kmax >= int(grp.counts.max(initial=0)))
    # whole rankings of one system, grouped: the run is checked as its ids are looked up
    check_later = check_run and every_rank and grp.heads is not None and len(
        grp.system_names) == 1
    if check_run and not check_later:
        _check_run(run, grp)
    qr_q, n_codes = _qrels_codes(qrels.query, grp.q_dict, check_qrels)
    q_index = None
    if check_qrels:
        if not clean_ids(qrels.chunk):
            raise NeedsIO("qrels")
        q_index = QrelsIndex.of(qrels.chunk, qr_q, with_order=every_rank)
        if q_index.may_repeat:   # a (query, chunk) judged twice, or a hash collision
            raise NeedsIO("qrels")

    if every_rank:   # whole rankings: only the judged rows are ever placed in rank order
        row_g, pos, grades = _judged_ranked(grp, run, qr_q, qrels, q_index, check_later)
    else:
        rows, pos, row_g = _top_rows(grp, run, kmax if ideal == "qrels" else None)
        if ideal == "run":   # every row's grade is needed for the ideal; top rows pick theirs
            all_grades = lookup_grades(grp.group_q[grp.rows_group()], run.chunk, qr_q, qrels)
            grades = all_grades[rows]
        else:
            grades = lookup_grades(grp.group_q[row_g], take(run.chunk, rows), qr_q,
                                   qrels, q_index)
        judged_row = grades != UNJUDGED   # the measures need the judged rows only
        row_g, pos, grades = row_g[judged_row], pos[judged_row], grades[judged_row]

    # DCG and judged share per k: bincount adds in rank order, as trec_eval sums
    ng = len(grp.counts)
    contrib = gain_of(np.maximum(grades, 0), gain) / discounts(int(pos.max(initial=0)) + 1)[pos]
    dcg = np.empty((ng, len(ks)))
    judged = np.empty((ng, len(ks)))
    for j, k in enumerate(ks):
        m = pos < k
        dcg[:, j] = np.bincount(row_g[m], weights=contrib[m], minlength=ng)
        judged[:, j] = np.bincount(row_g[m], minlength=ng) / np.minimum(grp.counts, k)

    in_qrels = np.bincount(qr_q, minlength=n_codes)[grp.group_q] > 0
    if ideal == "run":
        idcg = _ideal_dcg(grp.rows_group(), all_grades, ng, ks, gain)
    else:
        idcg = _ideal_dcg(qr_q, qrels.grade, n_codes, ks, gain)[grp.group_q]
    ranked = Ranked(row_g=row_g, pos=pos, grades=grades, counts=grp.counts,
                    group_q=grp.group_q, qr_q=qr_q, qr_grade=qrels.grade,
                    qr_query=qrels.query, n_codes=n_codes,
                    depth=kmax if ideal == "qrels" else None)
    return KernelOut(system_names=grp.system_names, system=grp.system,
                     queries=grp.q_dict.take(pa.array(grp.group_q)), dcg=dcg, idcg=idcg,
                     judged=judged, in_qrels=in_qrels, ranked=ranked)


# --------------------------------------------------------------------------- groups

def _groups(run: RunArrays, check_ids: bool) -> _Groups:
    """(system, query) groups, numbered in order of first appearance."""
    n = len(run.score)
    one_system = isinstance(run.system, str) or _all_equal(run.system)
    # rows usually come grouped: then one string comparison per row finds the groups
    probe = min(n, 4096)
    if probe > 64 and int(changes(run.query.slice(0, probe)).sum()) > probe // 4:
        return _groups_of_rows(run, one_system, check_ids)   # shuffled rows, by the look
    change = changes(run.query)
    if not one_system:
        change |= changes(run.system)
    heads = np.flatnonzero(np.concatenate([[n > 0], change]))
    if len(heads) > n // 4 + 1:   # not grouped (shuffled rows): encode every row
        return _groups_of_rows(run, one_system, check_ids)
    q_code, q_dict = encode(take(run.query, heads))
    if one_system:
        name = run.system if isinstance(run.system, str) else (
            run.system[0].as_py() if len(run.system) else "run")
        s_names, s_code = [str(name)], np.zeros(len(heads), np.int64)
    else:
        system = run.system
        if isinstance(system, str):  # pragma: no cover - one_system covers a single name
            raise TypeError("one run name given for several systems")
        codes, uniques = pd.factorize(take(system, heads).to_numpy(
            zero_copy_only=False), sort=False)
        s_names, s_code = [str(x) for x in uniques], codes.astype(np.int64)
    pair = s_code * max(len(q_dict), 1) + q_code
    if check_ids and not (clean_ids(q_dict) if len(q_dict) else n == 0):
        raise NeedsIO("run")
    if len(np.unique(pair)) == len(heads):   # every group is one block of rows
        return _Groups(counts=np.diff(np.append(heads, n)), group_q=q_code, q_dict=q_dict,
                       system_names=s_names, system=s_code, heads=heads)
    return _groups_of_rows(run, one_system, check_ids)


def _groups_of_rows(run: RunArrays, one_system: bool, check_ids: bool) -> _Groups:
    """Groups of rows that do not come grouped: one dictionary encoding of every row."""
    row_q, q_dict = encode(run.query)
    if check_ids and not clean_ids(q_dict):
        raise NeedsIO("run")
    if one_system:
        name = run.system if isinstance(run.system, str) else run.system[0].as_py()
        return _Groups(counts=np.bincount(row_q, minlength=len(q_dict)),
                       group_q=np.arange(len(q_dict)), q_dict=q_dict, system_names=[str(name)],
                       system=np.zeros(len(q_dict), np.int64), g=row_q,
                       by_group=_stable_group_order(row_q, len(q_dict)))
    if isinstance(run.system, str):  # pragma: no cover - one_system covers a single name
        raise TypeError("one run name given for several systems")
    codes, uniques = pd.factorize(run.system.to_numpy(zero_copy_only=False), sort=False)
    g, pairs = pd.factorize(codes.astype(np.int64) * len(q_dict) + row_q, sort=False)
    pairs = np.asarray(pairs, dtype=np.int64)
    g = g.astype(np.int64)
    return _Groups(counts=np.bincount(g, minlength=len(pairs)),
                   group_q=pairs % len(q_dict), q_dict=q_dict,
                   system_names=[str(x) for x in uniques], system=pairs // len(q_dict), g=g,
                   by_group=_stable_group_order(g, len(pairs)))


def _all_equal(arr: Strings) -> bool:
    return len(arr) == 0 or bool(pc.all(pc.equal(arr, arr[0])).as_py())


def _qrels_codes(query: Strings, q_dict: Strings, check_ids: bool) -> tuple[np.ndarray, int]:
    """Query code of each qrels row in the run's code space; queries not in the run get codes
    from ``len(q_dict)`` on. Returns the codes and the number of codes."""
    if len(query) == 0:
        return np.zeros(0, np.int64), len(q_dict)
    codes, dictionary = group_codes(query)
    if check_ids and not clean_ids(dictionary):
        raise NeedsIO("qrels")
    known = pd.Index(q_dict.to_numpy(zero_copy_only=False)).get_indexer(
        dictionary.to_numpy(zero_copy_only=False))
    new = known < 0
    known[new] = len(q_dict) + np.arange(int(new.sum()))
    return known.astype(np.int64)[codes], len(q_dict) + int(new.sum())


# --------------------------------------------------------------------------- ranking

def _top_rows(grp: _Groups, run: RunArrays, kmax: int | None
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


def _ranked_already(grp: _Groups, run: RunArrays) -> np.ndarray | None:
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
    """:func:`_top_rows` for rows already grouped and ranked by score: only runs of tied
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


def _judged_ranked(grp: _Groups, run: RunArrays, qr_q: np.ndarray, qrels: QrelsArrays,
                   q_index: QrelsIndex | None, check_run: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, rank, grade) of every judged row of the run, in (group, rank) order: the
    grades are looked up in the run's own row order, block by block, and only the judged
    rows are then ranked. ``check_run``: check the run's ids on the way (rows grouped, one
    system)."""
    found = judged_rows(_row_codes(grp), run.chunk, qr_q, qrels, q_index,
                        _check_block if check_run else None)
    if found is None:   # two qrels keys share a hash: the exact lookup decides
        if check_run:   # the blocks were not seen
            _check_run(run, grp)
        every = lookup_grades(grp.group_q[grp.rows_group()], run.chunk, qr_q, qrels)
        rows = np.flatnonzero(every != UNJUDGED)
        grades = every[rows]
    else:
        rows, grades, edges = found
        if check_run:
            _check_edges(edges)
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
        ranked, rank, _ = _top_rows(grp, run, None)
        rank_of_row = np.empty(len(run.score), dtype=np.int64)
        rank_of_row[ranked] = rank
        g, pos = grp.rows_group()[rows], rank_of_row[rows]
    key = g * (int(grp.counts.max(initial=0)) + 1) + pos
    if len(key) > 1 and not bool(np.all(key[1:] > key[:-1])):
        order = np.argsort(key, kind="stable")   # nearly sorted: a few runs of ties moved
        g, pos, grades = g[order], pos[order], grades[order]
    return g, pos, grades


def _row_codes(grp: _Groups) -> Callable[[int, int], np.ndarray]:
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


def _alike(grp: _Groups) -> bool:
    """Groups alike enough in size for a (groups × longest group) table."""
    return len(grp.counts) * int(grp.counts.max(initial=0)) <= 2 * len(grp.rows_group()) + 4096


def _slots(grp: _Groups) -> np.ndarray:
    """Each row's place in its group's row of a (groups × longest group) table."""
    g, counts = grp.rows_group(), grp.counts
    if grp.by_group is None:
        return np.arange(len(g), dtype=np.int64) - _starts(counts)[g]
    slot = np.empty(len(g), dtype=np.int64)
    slot[grp.by_group] = np.arange(len(g)) - _starts(counts)[g[grp.by_group]]
    return slot


def _candidates(grp: _Groups, score: np.ndarray, k: int) -> np.ndarray:
    """Rows scoring at least their group's k-th best score (ties at that score included):
    a superset of every group's top k, found without a sort when groups are alike in size."""
    g, counts = grp.rows_group(), grp.counts
    if not _alike(grp):     # very uneven groups: sort everything
        return np.arange(len(g))
    table = np.full((len(counts), int(counts.max(initial=0))), -np.inf)
    table[g, _slots(grp)] = score
    kth = -np.partition(-table, k - 1, axis=1)[:, k - 1]
    return np.flatnonzero(score >= kth[g])


def _rank_all(grp: _Groups, run: RunArrays) -> np.ndarray | None:
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


def _stable_group_order(g: np.ndarray, n_groups: int) -> np.ndarray:
    """Rows ordered by group, stable (numpy's radix sort on 16-bit keys)."""
    if n_groups <= 1 << 16:
        return np.argsort(g.astype(np.uint16), kind="stable")
    order = np.argsort((g & 0xFFFF).astype(np.uint16), kind="stable")
    return order[np.argsort((g[order] >> 16).astype(np.uint16), kind="stable")]


# --------------------------------------------------------------------------- grades

def _check_run(run: RunArrays, grp: _Groups) -> None:
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


def _check_block(part: pa.Array, key: np.ndarray, codes: np.ndarray) -> _Edges | None:
    """:func:`_check_run` on one block of a run grouped by query (one system), on the keys
    of the grade lookup (equal (query, id) give equal keys); the queries at its edges are
    checked with their neighbours' by :func:`_check_edges`."""
    if not len(part):
        return None
    if not _arrow.clean_chunk(part) or _arrow.has_equal_neighbours(np.sort(key)):
        raise NeedsIO("run")
    first, last = int(codes[0]), int(codes[-1])
    return _Edges(first, key[codes == first], last, key[codes == last])


def _check_edges(edges: list[_Edges | None]) -> None:
    """The repeat test for queries cut by a block edge (:func:`_check_block`)."""
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


def _run_may_repeat(chunk: Strings, grp: _Groups) -> bool:
    """A chunk may be ranked twice for one (system, query): see :func:`_arrow.may_repeat`."""
    counts = grp.counts
    if len(counts) and bool((counts == counts[0]).all()):
        return _arrow.may_repeat(chunk, block=int(counts[0]), order=grp.by_group)
    return _arrow.may_repeat(chunk, grp.rows_group())


def _ideal_dcg(owner: np.ndarray, grade: np.ndarray, n_owner: int, ks: list[int],
               gain: str) -> np.ndarray:
    """IDCG@k per owner from its grades: the ideal list is its grades sorted descending.

    Only as many discounts as the longest ideal list are made, whatever k is."""
    positive = grade > 0
    owners, grades = owner[positive], grade[positive]
    levels = np.unique(grades)[::-1]   # best first
    if not len(levels):
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
