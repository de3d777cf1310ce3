"""The vectorised NDCG@k kernel behind :func:`labeler.score.evaluate` (trec_eval ``ndcg_cut``).

Arrays in, arrays out; the caller validates at the edge. One pass: encode (system, query)
into groups, order each group by score descending then chunk id descending by byte order
(trec_eval), keep the top k rows, look their grades up in the qrels and sum the gains in
rank order with :func:`numpy.bincount`. IDCG comes from the number of judged chunks at each
grade per query, so it needs no sort.

Chunk ids are matched through 64-bit hashes of their bytes (sorted + searchsorted, no Python
objects); every hash match is confirmed on the strings themselves, and a hash collision
inside the qrels falls back to an exact dictionary encoding, so results are exact.

Usage::

    out = kernel(RunArrays(...), QrelsArrays(...), ks=[10], gain="linear", ideal="qrels")
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


class DuplicateKeys(Exception):
    """A (system, query, chunk) of the run or a (query, chunk) of the qrels may occur twice."""

    def __init__(self, which: str) -> None:
        self.which = which
        super().__init__(which)


@dataclass(frozen=True)
class RunArrays:
    """A run as flat arrays: ids as Arrow string arrays, ``system`` an array or one name."""

    system: pa.Array | str
    query: pa.Array
    chunk: pa.Array
    score: np.ndarray


@dataclass(frozen=True)
class QrelsArrays:
    """Qrels as flat arrays: ids as Arrow string arrays, ``grade`` int64."""

    query: pa.Array
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
    in_qrels: np.ndarray     # (groups,) the query has at least one judgement


def gain_of(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gain of each grade: ``rel`` (linear) or ``2**rel - 1`` (exponential), as float64."""
    g = np.asarray(grades, dtype=np.float64)
    return np.exp2(g) - 1.0 if gain == "exponential" else g


def discounts(n: int) -> np.ndarray:
    """``log2(i + 1)`` for positions i = 1..n."""
    return np.log2(np.arange(2, n + 2, dtype=np.float64))


# --------------------------------------------------------------------------- Arrow strings

def arrow_strings(values: object) -> pa.Array:
    """One contiguous ``large_string`` Arrow array (zero-copy for Arrow-backed pandas strings).

    Raises ``pa.ArrowException`` when ``values`` holds something other than strings.
    """
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(
        values, type=pa.large_string(), from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string())
    return arr


@dataclass(frozen=True)
class _Bytes:
    """The raw layout of a large_string array: start and length of each value, padded bytes."""

    starts: np.ndarray
    lens: np.ndarray
    data: np.ndarray

    @classmethod
    def of(cls, arr: pa.Array) -> _Bytes:
        _, off_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
        raw = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(
            0, np.uint8)
        data = np.zeros(int(offsets[-1]) + 8 if len(offsets) else 8, dtype=np.uint8)
        data[:len(data) - 8] = raw[:len(data) - 8]
        return cls(starts=offsets[:-1], lens=np.diff(offsets), data=data)

    def words(self, j: int) -> np.ndarray:
        """The j-th 8 bytes of each value (zeros past its end) as uint64."""
        view = np.ndarray((len(self.data) - 7,), dtype="<u8", buffer=self.data, strides=(1,))
        idx = np.minimum(self.starts + 8 * j, len(view) - 1)
        rem = np.clip(self.lens - 8 * j, 0, 8)
        shift = (8 * (8 - rem)).astype(np.uint64)
        w = view[idx] << np.minimum(shift, np.uint64(63))
        w >>= np.minimum(shift, np.uint64(63))
        w[rem == 0] = 0
        return w


_WS_FIRST = np.zeros(256, dtype=bool)
_WS_FIRST[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0xC2, 0xE1, 0xE2, 0xE3]] = True
_WS_LAST = np.zeros(256, dtype=bool)
_WS_LAST[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0x85, 0xA0, 0x9F, 0xA8, 0xA9, 0xAF]] = True
_WS_LAST[0x80:0x8B] = True
# every character for which Python's str.isspace() is true (what io's str.strip() removes)
_PY_WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003"
                  "\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def clean_ids(arr: pa.Array) -> bool:
    """True when no id is null or empty and none starts or ends with whitespace (Python's
    ``str.strip`` set), i.e. when ``io`` would keep every id unchanged."""
    if arr.null_count or len(arr) == 0:
        return len(arr) > 0 and not arr.null_count
    b = _Bytes.of(arr)
    if b.lens.min() <= 0:
        return False
    first = _WS_FIRST[b.data[b.starts]]
    last = _WS_LAST[b.data[b.starts + b.lens - 1]]
    if not (first.any() or last.any()):
        return True
    suspect = arr.filter(pa.array(first | last))   # rare: decide exactly on these
    return bool(pc.all(pc.equal(pc.utf8_trim(suspect, characters=_PY_WHITESPACE),
                                suspect)).as_py())


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, in place on a uint64 array."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def hash_ids(arr: pa.Array, codes: np.ndarray) -> np.ndarray:
    """A 64-bit hash of (code, bytes of the id) per row."""
    b = _Bytes.of(arr)
    h = _mix(codes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + b.lens.astype(np.uint64))
    for j in range(int(-(-int(b.lens.max(initial=0)) // 8))):
        h ^= b.words(j)
        _mix(h)
    return h


def _equal_runs(sorted_hash: np.ndarray) -> bool:
    return bool(np.any(sorted_hash[1:] == sorted_hash[:-1]))


# --------------------------------------------------------------------------- kernel

def kernel(run: RunArrays, qrels: QrelsArrays, ks: list[int], gain: str, ideal: str,
           check_run: bool = False, check_qrels: bool = False) -> KernelOut:
    """NDCG@k ingredients for every (system, query) group of ``run``.

    With ``check_run``/``check_qrels`` the kernel raises :class:`DuplicateKeys` when a key
    may occur twice (the caller then validates that input exactly, which names the row).
    """
    n = len(run.score)
    kmax = max(ks)
    # ---- one code space for the query ids of run and qrels (run's ids first)
    encoded = pc.dictionary_encode(pa.chunked_array([run.query, qrels.query]))
    q_dict = encoded.chunk(0).dictionary if encoded.num_chunks else pa.array([], pa.large_string())
    run_q = _indices(encoded, 0, n)
    qr_q = _indices(encoded, 1, len(qrels.grade))
    nq = int(run_q.max(initial=-1)) + 1
    # ---- groups: (system, query) in order of first appearance
    if isinstance(run.system, str) or _all_equal(run.system):
        s_names = np.array([run.system if isinstance(run.system, str) else run.system[0].as_py()],
                           dtype=object)
        g, group_q, group_s = run_q, np.arange(nq), np.zeros(nq, dtype=np.int64)
    else:
        s_codes, s_uniques = pd.factorize(pd.Series(run.system, dtype="str"), sort=False)
        s_names = np.asarray(s_uniques, dtype=object)
        g, pair_uniques = pd.factorize(s_codes.astype(np.int64) * nq + run_q, sort=False)
        group_q, group_s = pair_uniques % nq, pair_uniques // nq
    g = g.astype(np.int64)
    ng = len(group_q)
    counts = np.bincount(g, minlength=ng)

    if check_run and n > 1:
        if _equal_runs(np.sort(hash_ids(run.chunk, g))):
            raise DuplicateKeys("run")
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
    sel_grade = _lookup_grades(run_q[sel_rows], run.chunk.take(pa.array(sel_rows)),
                               qr_q, qrels, check_qrels)

    # ---- DCG and judged share per k (bincount adds in rank order, as trec_eval sums)
    judged_flag = sel_grade >= 0
    disc = discounts(int(sel_pos.max(initial=0)) + 1)
    contrib = gain_of(np.maximum(sel_grade, 0), gain) / disc[sel_pos]
    dcg = np.empty((ng, len(ks)))
    judged = np.empty((ng, len(ks)))
    for j, k in enumerate(ks):
        m = sel_pos < k
        dcg[:, j] = np.bincount(sel_g[m], weights=contrib[m], minlength=ng)
        judged[:, j] = (np.bincount(sel_g[m], weights=judged_flag[m], minlength=ng)
                        / np.minimum(counts, k))

    # ---- IDCG from the number of chunks at each grade level
    n_codes = max(nq, int(qr_q.max(initial=-1)) + 1)
    in_qrels = np.bincount(qr_q, minlength=n_codes)[group_q] > 0
    if ideal == "run":
        idcg = _ideal_dcg(sel_g, sel_grade, ng, ks, gain)
    else:
        idcg = _ideal_dcg(qr_q, qrels.grade, n_codes, ks, gain)[group_q]
    queries = q_dict.take(pa.array(group_q)).to_numpy(zero_copy_only=False)
    return KernelOut(systems=s_names[group_s], queries=queries, dcg=dcg, idcg=idcg,
                     judged=judged, in_qrels=in_qrels)


def _indices(encoded: pa.ChunkedArray, i: int, n: int) -> np.ndarray:
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return encoded.chunk(i).indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _all_equal(arr: pa.Array) -> bool:
    return len(arr) == 0 or bool(pc.all(pc.equal(arr, arr[0])).as_py())


def _rank_order(g: np.ndarray, score: np.ndarray, chunk: pa.Array) -> np.ndarray | None:
    """Row order by (group, score desc, chunk id desc); ``None`` if already in that order."""
    if len(g) > 1:
        same = g[1:] == g[:-1]
        if bool(np.all(g[1:] >= g[:-1])) and not np.any(same & (score[1:] >= score[:-1])):
            return None  # grouped, scores strictly descending within groups
    table = pa.table({"g": g, "s": score, "c": chunk})
    idx = pc.sort_indices(table, sort_keys=[("g", "ascending"), ("s", "descending"),
                                            ("c", "descending")])
    return idx.to_numpy()


def _lookup_grades(run_q: np.ndarray, run_chunk: pa.Array, qr_q: np.ndarray,
                   qrels: QrelsArrays, check_qrels: bool) -> np.ndarray:
    """Grade of each (query code, chunk) of the run in the qrels, ``-1`` where unjudged."""
    if len(qr_q) == 0:
        return np.full(len(run_q), -1, dtype=np.int64)
    q_hash = hash_ids(qrels.chunk, qr_q)
    order = np.argsort(q_hash)
    q_sorted = q_hash[order]
    if _equal_runs(q_sorted):  # a duplicate judgement, or (rarely) a hash collision
        return _lookup_exact(run_q, run_chunk, qr_q, qrels, check_qrels)
    if len(run_q) == 0:
        return np.zeros(0, dtype=np.int64)
    r_hash = hash_ids(run_chunk, run_q)
    at = np.minimum(np.searchsorted(q_sorted, r_hash), len(q_sorted) - 1)
    cand = order[at]
    hit = q_sorted[at] == r_hash
    rows = np.flatnonzero(hit)
    if len(rows):  # confirm every hash match on the ids themselves
        same = pc.equal(run_chunk.take(pa.array(rows)),
                        qrels.chunk.take(pa.array(cand[rows]))).to_numpy(zero_copy_only=False)
        hit[rows] = same & (qr_q[cand[rows]] == run_q[rows])
    return np.where(hit, qrels.grade[cand], -1).astype(np.int64)


def _lookup_exact(run_q: np.ndarray, run_chunk: pa.Array, qr_q: np.ndarray,
                  qrels: QrelsArrays, check_qrels: bool) -> np.ndarray:
    """Exact lookup through one dictionary encoding of the chunk ids (the slow, sure path)."""
    both = pa.chunked_array([run_chunk, qrels.chunk])
    encoded = pc.dictionary_encode(both)
    nc = np.int64(len(encoded.chunk(0).dictionary)) if encoded.num_chunks else np.int64(1)
    run_key = run_q * nc + _indices(encoded, 0, len(run_q))
    q_key = qr_q * nc + _indices(encoded, 1, len(qr_q))
    order = np.argsort(q_key, kind="stable")
    q_sorted = q_key[order]
    if check_qrels and _equal_runs(q_sorted):
        raise DuplicateKeys("qrels")
    if len(q_sorted) == 0:
        return np.full(len(run_q), -1, dtype=np.int64)
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
