"""The vectorised NDCG@k kernel behind :func:`labeler.score.evaluate` (trec_eval ``ndcg_cut``).

Arrays in, arrays out; no validation here (the caller validates at the edge). One pass:
factorise (system, query) into groups, order each group by score descending then chunk id
descending by byte order (trec_eval), keep the top k rows, look their grades up in the
qrels, and sum gains with :func:`numpy.bincount`. IDCG comes from the number of judged
chunks at each grade per query, so it never needs a sort.

Usage::

    out = kernel(Run(...), Qrels(...), ks=[10], gain="linear", ideal="qrels")
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class RunArrays:
    """A run as flat arrays: ``system`` and ``query`` as pandas Series (any string dtype),
    ``chunk`` as an Arrow string array, ``score`` as float64."""

    system: pd.Series
    query: pd.Series
    chunk: pa.Array
    score: np.ndarray


@dataclass(frozen=True)
class QrelsArrays:
    """Qrels as flat arrays: ``query`` (pandas Series), ``chunk`` (Arrow), ``grade`` int64."""

    query: pd.Series
    chunk: pa.Array
    grade: np.ndarray


@dataclass(frozen=True)
class KernelOut:
    """Per group (one (system, query) of the run) and per k: arrays of shape (groups, len(ks))."""

    systems: np.ndarray      # (groups,) system name of each group
    queries: np.ndarray      # (groups,) query id of each group
    dcg: np.ndarray
    idcg: np.ndarray
    judged: np.ndarray       # share of the top k that is judged
    in_qrels: np.ndarray     # (groups,) bool: the query has at least one judgement


def gain_of(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gain of each grade: ``rel`` (linear) or ``2**rel - 1`` (exponential), as float64."""
    g = np.asarray(grades, dtype=np.float64)
    return np.exp2(g) - 1.0 if gain == "exponential" else g


def discounts(n: int) -> np.ndarray:
    """``log2(i + 1)`` for positions i = 1..n."""
    return np.log2(np.arange(2, n + 2, dtype=np.float64))


def as_arrow_strings(values: pd.Series | pa.Array | pa.ChunkedArray) -> pa.Array:
    """A single-chunk Arrow string array (zero-copy for Arrow-backed pandas strings)."""
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(
        values, from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.string())
    return arr


def kernel(run: RunArrays, qrels: QrelsArrays, ks: list[int], gain: str, ideal: str
           ) -> KernelOut:
    """NDCG@k ingredients for every (system, query) group of ``run``."""
    n = len(run.score)
    kmax = max(ks)
    # ---- groups: (system, query) in order of first appearance
    q_codes, q_uniques = pd.factorize(run.query, sort=False)
    s_codes, s_uniques = pd.factorize(run.system, sort=False)
    nq = len(q_uniques)
    if len(s_uniques) == 1:
        g = q_codes.astype(np.int64)
        group_q = np.arange(nq)
        group_s = np.zeros(nq, dtype=np.int64)
    else:
        pair = s_codes.astype(np.int64) * nq + q_codes
        g, pair_uniques = pd.factorize(pair, sort=False)
        g = g.astype(np.int64)
        group_q = pair_uniques % nq
        group_s = pair_uniques // nq
    ng = len(group_q)
    counts = np.bincount(g, minlength=ng)

    # ---- ranking order: score desc, then chunk id desc by byte order (trec_eval)
    order = _rank_order(g, run.score, run.chunk)
    g_sorted = g if order is None else g[order]
    starts = np.cumsum(counts) - counts
    pos = np.arange(n, dtype=np.int64) - starts[g_sorted]

    # ---- rows whose grade we need: the top k (qrels ideal) or every row (run ideal)
    if ideal == "run":
        sel_rows = np.arange(n) if order is None else order
        sel_g, sel_pos = g_sorted, pos
    else:
        keep = pos < kmax
        sel_rows = np.flatnonzero(keep) if order is None else order[keep]
        sel_g, sel_pos = g_sorted[keep], pos[keep]

    # ---- qrels restricted to the run's queries, keyed like the run
    qq = pd.Index(q_uniques).get_indexer(qrels.query)
    in_run = qq >= 0
    qq = qq[in_run]
    q_chunk = qrels.chunk.filter(pa.array(in_run)) if not in_run.all() else qrels.chunk
    q_grade = qrels.grade[in_run]
    sel_grade = _lookup_grades(q_codes[sel_rows], run.chunk.take(pa.array(sel_rows)),
                               qq, q_chunk, q_grade)

    # ---- DCG and judged share per k (bincount adds in rank order, as trec_eval sums)
    judged_flag = sel_grade >= 0
    contrib = gain_of(np.maximum(sel_grade, 0), gain) / discounts(int(sel_pos.max(initial=0)) + 1
                                                                   )[sel_pos]
    dcg = np.empty((ng, len(ks)))
    judged = np.empty((ng, len(ks)))
    for j, k in enumerate(ks):
        m = sel_pos < k
        dcg[:, j] = np.bincount(sel_g[m], weights=contrib[m], minlength=ng)
        shown = np.minimum(counts, k)
        judged[:, j] = np.bincount(sel_g[m], weights=judged_flag[m], minlength=ng) / shown

    # ---- IDCG from the number of chunks at each grade level
    in_qrels = np.bincount(qq, minlength=nq)[group_q] > 0
    if ideal == "run":
        level_owner, level_grade = sel_g, sel_grade
        n_owner, owner_of_group = ng, np.arange(ng)
    else:
        level_owner, level_grade = qq, q_grade
        n_owner, owner_of_group = nq, group_q
    idcg = _ideal_dcg(level_owner, level_grade, n_owner, ks, gain)[owner_of_group]
    return KernelOut(systems=np.asarray(s_uniques, dtype=object)[group_s],
                     queries=np.asarray(q_uniques, dtype=object)[group_q],
                     dcg=dcg, idcg=idcg, judged=judged, in_qrels=in_qrels)


def _rank_order(g: np.ndarray, score: np.ndarray, chunk: pa.Array) -> np.ndarray | None:
    """Row order by (group, score desc, chunk id desc); ``None`` if already in that order."""
    if len(g) > 1:
        same = g[1:] == g[:-1]
        grouped = bool(np.all(g[1:] >= g[:-1]))
        if grouped and not np.any(same & (score[1:] >= score[:-1])):
            return None  # grouped, scores strictly descending: nothing to do
    table = pa.table({"g": g, "s": score, "c": chunk})
    idx = pc.sort_indices(table, sort_keys=[("g", "ascending"), ("s", "descending"),
                                            ("c", "descending")])
    return idx.to_numpy()


def _lookup_grades(run_q: np.ndarray, run_chunk: pa.Array, qq: np.ndarray,
                   q_chunk: pa.Array, q_grade: np.ndarray) -> np.ndarray:
    """Grade of each (query code, chunk) of the run in the qrels, ``-1`` where unjudged."""
    if len(qq) == 0 or len(run_q) == 0:
        return np.full(len(run_q), -1, dtype=np.int64)
    both = pa.concat_arrays([run_chunk.cast(pa.large_string()),
                             q_chunk.cast(pa.large_string())])
    encoded = pc.dictionary_encode(both)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    uniques = encoded.dictionary
    nc = np.int64(len(uniques))
    run_key = run_q.astype(np.int64) * nc + codes[:len(run_q)]
    q_key = qq.astype(np.int64) * nc + codes[len(run_q):]
    order = np.argsort(q_key, kind="stable")
    q_sorted = q_key[order]
    at = np.searchsorted(q_sorted, run_key)
    at_c = np.minimum(at, len(q_sorted) - 1)
    hit = q_sorted[at_c] == run_key
    return np.where(hit, q_grade[order[at_c]], -1).astype(np.int64)


def _ideal_dcg(owner: np.ndarray, grade: np.ndarray, n_owner: int, ks: list[int],
               gain: str) -> np.ndarray:
    """IDCG@k per owner from its grades: ideal list = grades sorted descending."""
    levels = np.unique(grade[grade > 0])[::-1]
    kmax = max(ks)
    cum = np.concatenate([[0.0], np.cumsum(1.0 / discounts(kmax))])
    out = np.zeros((n_owner, len(ks)))
    start = np.zeros(n_owner, dtype=np.int64)
    for level in levels:
        n_at = np.bincount(owner[grade == level], minlength=n_owner)
        end = start + n_at
        g_val = float(gain_of(np.array([level]), gain)[0])
        for j, k in enumerate(ks):
            out[:, j] += g_val * (cum[np.minimum(end, k)] - cum[np.minimum(start, k)])
        start = end
    return out
