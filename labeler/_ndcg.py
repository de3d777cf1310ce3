"""The vectorised NDCG@k kernel behind :func:`labeler.score.evaluate` (trec_eval ``ndcg_cut``).

Arrays in, arrays out. Steps: find the (system, query) groups of the run (cheaply when the
rows come grouped, as in every run file); order each group by score descending then chunk
id descending by byte order (trec_eval) — nothing to do when the rows are already in that
order, else only the rows that can reach the top k are sorted; look the grades of those rows
up in the qrels through 64-bit hashes confirmed on the strings; sum gains in rank order with
:func:`numpy.bincount`. IDCG comes from the number of judged chunks at each grade per query.

Usage::

    out = kernel(RunArrays(...), QrelsArrays(...), ks=[10], gain="linear", ideal="qrels")
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow
from ._arrow import clean_ids, encode, has_equal_neighbours

Strings = pa.Array | pa.ChunkedArray


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

    systems: np.ndarray      # (groups,) system name of each group
    queries: np.ndarray      # (groups,) query id of each group
    dcg: np.ndarray
    idcg: np.ndarray
    judged: np.ndarray       # share of the top k that is judged
    in_qrels: np.ndarray     # (groups,) the query has at least one judgement


@dataclass(frozen=True)
class _Groups:
    g: np.ndarray            # group of each row (int64)
    counts: np.ndarray       # rows per group
    group_q: np.ndarray      # query code of each group (into q_dict)
    q_dict: Strings         # the run's distinct query ids
    systems: np.ndarray      # system name of each group
    in_order: bool           # rows grouped and groups numbered in row order
    by_group: np.ndarray | None = None   # rows ordered by group (stable) when not in_order


def gain_of(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gain of each grade: ``rel`` (linear) or ``2**rel - 1`` (exponential), as float64."""
    g = np.asarray(grades, dtype=np.float64)
    return np.exp2(g) - 1.0 if gain == "exponential" else g


def discounts(n: int) -> np.ndarray:
    """``log2(i + 1)`` for positions i = 1..n."""
    return np.log2(np.arange(2, n + 2, dtype=np.float64))


# --------------------------------------------------------------------------- kernel

def kernel(run: RunArrays, qrels: QrelsArrays, ks: list[int], gain: str, ideal: str,
           check_run: bool = False, check_qrels: bool = False) -> KernelOut:
    """NDCG@k ingredients for every (system, query) group of ``run``.

    With ``check_run``/``check_qrels`` the input has not been through ``io``: its ids are
    checked for blanks and its keys for repeats, and :class:`NeedsIO` is raised on doubt.
    """
    kmax = max(ks)
    grp = _groups(run, check_run)
    if check_run and (not clean_ids(run.chunk) or _arrow.may_repeat(
            run.chunk, grp.g, grp.counts, grp.by_group)):
        raise NeedsIO("run")
    qr_q, n_codes = _qrels_codes(qrels.query, grp.q_dict, check_qrels)

    rows, pos = _top_rows(grp, run, kmax if ideal == "qrels" else None)
    row_g = grp.g[rows]
    if ideal == "run":   # every row's grade is needed for the ideal; top rows pick theirs
        all_grades = _lookup_grades(grp.group_q[grp.g], run.chunk, qr_q, qrels, check_qrels)
        grades = all_grades[rows]
    else:
        grades = _lookup_grades(grp.group_q[row_g], run.chunk.take(pa.array(rows)), qr_q,
                                qrels, check_qrels)

    # DCG and judged share per k: bincount adds in rank order, as trec_eval sums
    ng = len(grp.counts)
    contrib = gain_of(np.maximum(grades, 0), gain) / discounts(int(pos.max(initial=0)) + 1)[pos]
    judged_flag = (grades >= 0).astype(np.float64)
    dcg = np.empty((ng, len(ks)))
    judged = np.empty((ng, len(ks)))
    for j, k in enumerate(ks):
        m = pos < k
        dcg[:, j] = np.bincount(row_g[m], weights=contrib[m], minlength=ng)
        judged[:, j] = (np.bincount(row_g[m], weights=judged_flag[m], minlength=ng)
                        / np.minimum(grp.counts, k))

    in_qrels = np.bincount(qr_q, minlength=n_codes)[grp.group_q] > 0
    if ideal == "run":
        idcg = _ideal_dcg(grp.g, all_grades, ng, ks, gain)
    else:
        idcg = _ideal_dcg(qr_q, qrels.grade, n_codes, ks, gain)[grp.group_q]
    queries = grp.q_dict.take(pa.array(grp.group_q)).to_numpy(zero_copy_only=False)
    return KernelOut(systems=grp.systems, queries=queries, dcg=dcg, idcg=idcg,
                     judged=judged, in_qrels=in_qrels)


# --------------------------------------------------------------------------- groups

def _groups(run: RunArrays, check_ids: bool) -> _Groups:
    """(system, query) groups, numbered in order of first appearance."""
    n = len(run.score)
    one_system = isinstance(run.system, str) or _all_equal(run.system)
    # rows usually come grouped: then one string comparison per row finds the groups
    change = _changes(run.query)
    if not one_system:
        change |= _changes(run.system)
    heads = np.flatnonzero(np.concatenate([[n > 0], change]))
    if len(heads) > n // 4 + 1:   # not grouped (shuffled rows): encode every row
        return _groups_of_rows(run, one_system, check_ids)
    q_code, q_dict = encode(run.query.take(pa.array(heads)))
    if one_system:
        name = run.system if isinstance(run.system, str) else (
            run.system[0].as_py() if len(run.system) else "run")
        s_names, s_code = np.array([name], dtype=object), np.zeros(len(heads), np.int64)
    else:
        codes, uniques = pd.factorize(run.system.take(pa.array(heads)).to_numpy(
            zero_copy_only=False), sort=False)
        s_names, s_code = np.asarray(uniques, dtype=object), codes.astype(np.int64)
    pair = s_code * max(len(q_dict), 1) + q_code
    if check_ids and not (clean_ids(q_dict) if len(q_dict) else n == 0):
        raise NeedsIO("run")
    if len(np.unique(pair)) == len(heads):   # every group is one block of rows
        counts = np.diff(np.append(heads, n))
        g = np.repeat(np.arange(len(heads), dtype=np.int64), counts)
        return _Groups(g=g, counts=counts, group_q=q_code, q_dict=q_dict,
                       systems=s_names[s_code], in_order=True)
    return _groups_of_rows(run, one_system, check_ids)


def _groups_of_rows(run: RunArrays, one_system: bool, check_ids: bool) -> _Groups:
    """Groups of rows that do not come grouped: one dictionary encoding of every row."""
    row_q, q_dict = encode(run.query)
    if check_ids and not clean_ids(q_dict):
        raise NeedsIO("run")
    if one_system:
        name = run.system if isinstance(run.system, str) else run.system[0].as_py()
        return _Groups(g=row_q, counts=np.bincount(row_q, minlength=len(q_dict)),
                       group_q=np.arange(len(q_dict)), q_dict=q_dict,
                       systems=np.array([name] * len(q_dict), dtype=object), in_order=False,
                       by_group=_stable_group_order(row_q, len(q_dict)))
    codes, uniques = pd.factorize(run.system.to_numpy(zero_copy_only=False), sort=False)
    g, pairs = pd.factorize(codes.astype(np.int64) * len(q_dict) + row_q, sort=False)
    pairs = np.asarray(pairs, dtype=np.int64)
    g = g.astype(np.int64)
    return _Groups(g=g, counts=np.bincount(g, minlength=len(pairs)),
                   group_q=pairs % len(q_dict), q_dict=q_dict,
                   systems=np.asarray(uniques, dtype=object)[pairs // len(q_dict)],
                   in_order=False, by_group=_stable_group_order(g, len(pairs)))


def _changes(arr: Strings) -> np.ndarray:
    """Row i+1 differs from row i (length n - 1)."""
    if len(arr) < 2:
        return np.zeros(0, dtype=bool)
    return pc.not_equal(arr.slice(1), arr.slice(0, len(arr) - 1)).to_numpy(zero_copy_only=False)


def _chunks(arr: Strings) -> list[pa.Array]:
    return arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]


def _all_equal(arr: Strings) -> bool:
    return len(arr) == 0 or bool(pc.all(pc.equal(arr, arr[0])).as_py())


def _qrels_codes(query: Strings, q_dict: Strings, check_ids: bool) -> tuple[np.ndarray, int]:
    """Query code of each qrels row in the run's code space; queries not in the run get codes
    from ``len(q_dict)`` on. Returns the codes and the number of codes."""
    if len(query) == 0:
        return np.zeros(0, np.int64), len(q_dict)
    codes, dictionary = encode(query)
    if check_ids and not clean_ids(dictionary):
        raise NeedsIO("qrels")
    known = pd.Index(q_dict.to_numpy(zero_copy_only=False)).get_indexer(
        dictionary.to_numpy(zero_copy_only=False))
    new = known < 0
    known[new] = len(q_dict) + np.arange(int(new.sum()))
    return known.astype(np.int64)[codes], len(q_dict) + int(new.sum())


# --------------------------------------------------------------------------- ranking

def _top_rows(grp: _Groups, run: RunArrays, kmax: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Rows in rank order (group, score desc, chunk id desc) and their 0-based rank, keeping
    only ranks < ``kmax`` (all rows when ``kmax`` is None)."""
    g, score, counts = grp.g, run.score, grp.counts
    n = len(g)
    if grp.in_order:
        same = g[1:] == g[:-1]
        if not np.any(same & (score[1:] > score[:-1])):   # already ranked, but for ties
            rows = np.arange(n)
            tied = np.flatnonzero(same & (score[1:] == score[:-1]))
            if len(tied):   # order each run of equal scores by chunk id, descending
                members = np.union1d(tied, tied + 1)
                rows[members] = members[_rank_sort(g[members], score[members],
                                                   run.chunk.take(pa.array(members)))]
            pos = np.arange(n, dtype=np.int64) - _starts(counts)[g]
            keep = np.arange(n) if kmax is None else np.flatnonzero(pos < kmax)
            return rows[keep], pos[keep]
    cand = np.arange(n)
    if kmax is not None and kmax < counts.max(initial=0):
        cand = _candidates(grp, score, kmax)
    rows = cand[_rank_sort(g[cand], score[cand], run.chunk.take(pa.array(cand)))]
    row_g = g[rows]
    pos = np.arange(len(rows), dtype=np.int64) - _starts(np.bincount(row_g, minlength=len(
        counts)))[row_g]
    keep = np.arange(len(rows)) if kmax is None else np.flatnonzero(pos < kmax)
    return rows[keep], pos[keep]


def _rank_sort(g: np.ndarray, score: np.ndarray, chunk: Strings) -> np.ndarray:
    """Order by group, score descending, chunk id descending (bytes): trec_eval's ranking."""
    table = pa.table({"g": g, "s": score, "c": chunk})
    return pc.sort_indices(table, sort_keys=[("g", "ascending"), ("s", "descending"),
                                             ("c", "descending")]).to_numpy()


def _starts(counts: np.ndarray) -> np.ndarray:
    return np.cumsum(counts) - counts


def _candidates(grp: _Groups, score: np.ndarray, k: int) -> np.ndarray:
    """Rows scoring at least their group's k-th best score (ties at that score included):
    a superset of every group's top k, found without a sort when groups are alike in size."""
    g, counts = grp.g, grp.counts
    width = int(counts.max(initial=0))
    if len(counts) * width > 2 * len(g) + 4096:     # very uneven groups: sort everything
        return np.arange(len(g))
    if grp.by_group is None:
        slot = np.arange(len(g), dtype=np.int64) - _starts(counts)[g]
    else:
        slot = np.empty(len(g), dtype=np.int64)
        slot[grp.by_group] = np.arange(len(g)) - _starts(counts)[g[grp.by_group]]
    table = np.full((len(counts), width), -np.inf)
    table[g, slot] = score
    kth = -np.partition(-table, k - 1, axis=1)[:, k - 1]
    return np.flatnonzero(score >= kth[g])


def _stable_group_order(g: np.ndarray, n_groups: int) -> np.ndarray:
    """Rows ordered by group, stable (numpy's radix sort on 16-bit keys)."""
    if n_groups <= 1 << 16:
        return np.argsort(g.astype(np.uint16), kind="stable")
    order = np.argsort((g & 0xFFFF).astype(np.uint16), kind="stable")
    return order[np.argsort((g[order] >> 16).astype(np.uint16), kind="stable")]


# --------------------------------------------------------------------------- grades

def _lookup_grades(run_q: np.ndarray, run_chunk: Strings, qr_q: np.ndarray,
                   qrels: QrelsArrays, check_qrels: bool) -> np.ndarray:
    """Grade of each (query code, chunk) of the run in the qrels, ``-1`` where unjudged."""
    if len(qr_q) == 0:
        return np.full(len(run_q), -1, dtype=np.int64)
    if check_qrels and not clean_ids(qrels.chunk):
        raise NeedsIO("qrels")
    q_hash = _arrow.hash_ids(qrels.chunk, qr_q)
    order = np.argsort(q_hash)
    q_sorted = q_hash[order]
    if has_equal_neighbours(q_sorted):   # a judgement given twice, or (rarely) a collision
        return _lookup_exact(run_q, run_chunk, qr_q, qrels, check_qrels)
    r_hash = _arrow.hash_ids(run_chunk, run_q)
    r_order = np.argsort(r_hash)   # searching sorted keys is far kinder to the cache
    at = np.empty(len(r_hash), dtype=np.int64)
    at[r_order] = np.searchsorted(q_sorted, r_hash[r_order])
    np.minimum(at, len(q_sorted) - 1, out=at)
    cand = order[at]
    hit = q_sorted[at] == r_hash
    rows = np.flatnonzero(hit)
    if len(rows):   # confirm every hash match on the ids themselves
        same = pc.equal(run_chunk.take(pa.array(rows)), qrels.chunk.take(pa.array(cand[rows])))
        hit[rows] = same.to_numpy(zero_copy_only=False) & (qr_q[cand[rows]] == run_q[rows])
    return np.where(hit, qrels.grade[cand], -1).astype(np.int64)


def _lookup_exact(run_q: np.ndarray, run_chunk: Strings, qr_q: np.ndarray,
                  qrels: QrelsArrays, check_qrels: bool) -> np.ndarray:
    """Exact lookup through one dictionary encoding of the chunk ids (the slow, sure path)."""
    codes, dictionary = encode(pa.chunked_array(_chunks(run_chunk) + _chunks(qrels.chunk),
                                                type=pa.large_string()))
    nc = np.int64(len(dictionary))
    run_key = run_q * nc + codes[:len(run_q)]
    q_key = qr_q * nc + codes[len(run_q):]
    order = np.argsort(q_key, kind="stable")
    q_sorted = q_key[order]
    if check_qrels and has_equal_neighbours(q_sorted):
        raise NeedsIO("qrels")
    at = np.minimum(np.searchsorted(q_sorted, run_key), len(q_sorted) - 1)
    hit = q_sorted[at] == run_key
    return np.where(hit, qrels.grade[order[at]], -1).astype(np.int64)


def _ideal_dcg(owner: np.ndarray, grade: np.ndarray, n_owner: int, ks: list[int],
               gain: str) -> np.ndarray:
    """IDCG@k per owner from its grades: the ideal list is its grades sorted descending."""
    levels = np.unique(grade[grade > 0])[::-1]
    cum = np.concatenate([[0.0], np.cumsum(1.0 / discounts(max(ks)))])
    out = np.zeros((n_owner, len(ks)))
    start = np.zeros(n_owner, dtype=np.int64)
    for level in levels:
        end = start + np.bincount(owner[grade == level], minlength=n_owner)
        g_val = float(gain_of(np.array([level]), gain)[0])
        for j, k in enumerate(ks):
            out[:, j] += g_val * (cum[np.minimum(end, k)] - cum[np.minimum(start, k)])
        start = end
    return out
