"""Grade lookup for :func:`labeler.scoring.ndcg.kernel`: the grade of each ranked (query, chunk) in
the qrels, exact, without Python string objects.

Both sides get (query code, 40-bit id hash) keys; the smaller side is sorted and the other
searched in it, and every match is confirmed on the id strings themselves (a hash collision
falls back to one exact dictionary encoding).

Usage::

    grades = lookup_grades(run_query_codes, run_chunk_ids, qrels_query_codes, qrels)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeler import _arrow
from labeler._arrow import BLOCK, chunks, encode

Strings: TypeAlias = pa.Array | pa.ChunkedArray
T = TypeVar("T")
THREADS = min(2, os.cpu_count() or 1)
"""Threads that look blocks of a run up (:func:`judged_rows`)."""

UNJUDGED = np.iinfo(np.int64).min
"""The grade given to a ranked chunk that the qrels do not judge (any integer is a grade)."""


class QrelsLike(Protocol):
    """Qrels as arrays: chunk ids and their grades."""

    @property
    def chunk(self) -> Strings: ...

    @property
    def grade(self) -> np.ndarray: ...


@dataclass(frozen=True)
class QrelsIndex:
    """The qrels' (query, id-hash) keys, sorted: to search run rows among them."""

    key: np.ndarray
    order: np.ndarray | None   # None: only the repeat test was wanted (a sort is cheaper)
    sorted: np.ndarray

    @classmethod
    def of(cls, chunk: Strings, qr_q: np.ndarray, with_order: bool = True) -> QrelsIndex:
        key = _arrow.group_keys(chunk, qr_q)
        if not with_order:
            return cls(key=key, order=None, sorted=np.sort(key))
        order = np.argsort(key, kind="stable")
        return cls(key=key, order=order, sorted=key[order])

    @property
    def may_repeat(self) -> bool:
        return _arrow.has_equal_neighbours(self.sorted)


def lookup_grades(run_q: np.ndarray, run_chunk: Strings, qr_q: np.ndarray,
                   qrels: QrelsLike, q_index: QrelsIndex | None = None) -> np.ndarray:
    """Grade of each (query code, chunk) of the run in the qrels (keys unique), UNJUDGED
    where unjudged. Both sides get (query, id-hash) keys, nearly sorted already when the rows come
    by query; the qrels keys are searched among the run's and every match is confirmed on
    the ids themselves."""
    if len(qr_q) == 0 or len(run_q) == 0:
        return np.full(len(run_q), UNJUDGED, dtype=np.int64)
    if len(run_q) > len(qr_q):   # whole rankings: sort the (smaller) qrels side instead
        found = _lookup_in_qrels(run_q, run_chunk, qr_q, qrels, q_index)
        if found is not None:
            return found
    r_key = _arrow.group_keys(run_chunk, run_q)
    r_order = np.argsort(r_key, kind="stable")
    r_sorted = r_key[r_order]
    new = np.empty(len(r_sorted), dtype=bool)
    new[0] = True
    np.not_equal(r_sorted[1:], r_sorted[:-1], out=new[1:])
    table, first = r_sorted[new], r_order[new]
    inverse = np.empty(len(r_key), dtype=np.int64)
    inverse[r_order] = np.cumsum(new) - 1
    if len(table) < len(run_q):   # a key twice (several systems), or a hash collision
        rep = first[inverse]
        same = pc.equal(run_chunk, _arrow.take(run_chunk, rep)).to_numpy(zero_copy_only=False)
        if not (same.all() and (run_q == run_q[rep]).all()):
            return _lookup_exact(run_q, run_chunk, qr_q, qrels)
    q_key = _arrow.group_keys(qrels.chunk, qr_q)
    q_order = np.argsort(q_key, kind="stable")
    at = np.minimum(np.searchsorted(table, q_key[q_order]), len(table) - 1)
    maybe = np.flatnonzero(table[at] == q_key[q_order])
    hits, at = q_order[maybe], at[maybe]            # qrels rows that may be in the run
    if len(hits):
        r_rows = first[at]
        same = pc.equal(_arrow.take(qrels.chunk, hits), _arrow.take(run_chunk, r_rows))
        ok = same.to_numpy(zero_copy_only=False) & (qr_q[hits] == run_q[r_rows])
        grade_of_key = np.full(len(table), UNJUDGED, dtype=np.int64)
        grade_of_key[at[ok]] = qrels.grade[hits[ok]]
        return grade_of_key[inverse]
    return np.full(len(run_q), UNJUDGED, dtype=np.int64)


def _lookup_in_qrels(run_q: np.ndarray, run_chunk: Strings, qr_q: np.ndarray,
                     qrels: QrelsLike, q_index: QrelsIndex | None = None
                     ) -> np.ndarray | None:
    """:func:`lookup_grades` with the qrels keys sorted and each run row searched among
    them; None when two qrels keys share a hash (then the run side decides)."""
    found: tuple[np.ndarray, np.ndarray, list[None]] | None = judged_rows(
        lambda lo, hi: run_q[lo:hi], run_chunk, qr_q, qrels, q_index)
    if found is None:
        return None
    out = np.full(len(run_q), UNJUDGED, dtype=np.int64)
    out[found[0]] = found[1]
    return out


def judged_rows(row_q: Callable[[int, int], np.ndarray], run_chunk: Strings,
                qr_q: np.ndarray, qrels: QrelsLike, q_index: QrelsIndex | None = None,
                on_block: Callable[[pa.Array, np.ndarray, np.ndarray], T] | None = None
                ) -> tuple[np.ndarray, np.ndarray, list[T]] | None:
    """(row, grade) of every row of the run that the qrels judge, rows ascending: each
    block of rows is searched among the sorted qrels keys, so no per-row array of the whole
    run is made; blocks are looked up on two threads (numpy and Arrow let go of the GIL).
    ``row_q(lo, hi)`` gives the query codes of rows ``lo..hi``; ``on_block(ids, keys, query
    codes)`` sees every block (checks that may raise): its results come last, in row order.
    None when two qrels keys share a hash (the caller then takes the exact path)."""
    if q_index is None or q_index.order is None:
        q_index = QrelsIndex.of(qrels.chunk, qr_q)
    if q_index.may_repeat or q_index.order is None:
        return None
    q_key, q_order, q_sorted = q_index.key, q_index.order, q_index.sorted
    seen = _Bitmap(q_key)   # rules most unjudged rows out before the search
    q_bytes = _arrow.Bytes.of(_one_chunk(qrels.chunk))

    def one(block: tuple[int, pa.Array]) -> tuple[np.ndarray, np.ndarray, T | None]:
        first, part = block
        part_q = row_q(first, first + len(part))
        r_key = _arrow.group_keys(part, part_q)
        seen_by = on_block(part, r_key, part_q) if on_block is not None else None
        cand = seen.may_hold(r_key)
        at = np.minimum(np.searchsorted(q_sorted, r_key[cand]), len(q_sorted) - 1)
        found = q_sorted[at] == r_key[cand]
        hits, at = cand[found], at[found]         # rows of the block that may be judged
        q_rows = q_order[at]
        ok = _arrow.same_ids(_arrow.Bytes.of(part), hits, q_bytes, q_rows)
        ok &= part_q[hits] == qr_q[q_rows]
        return first + hits[ok], qrels.grade[q_rows[ok]].astype(np.int64, copy=False), seen_by

    blocks, base = [], 0
    for chunk in chunks(run_chunk):
        blocks += [(base + lo, chunk.slice(lo, BLOCK)) for lo in range(0, len(chunk), BLOCK)]
        base += len(chunk)
    if len(blocks) > 1 and THREADS > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            done = list(pool.map(one, blocks))
    else:
        done = [one(b) for b in blocks]
    rows = [np.zeros(0, np.int64)] + [d[0] for d in done]
    grades = [np.zeros(0, np.int64)] + [d[1] for d in done]
    return np.concatenate(rows), np.concatenate(grades), [d[2] for d in done]  # type: ignore[misc]


def _one_chunk(arr: Strings) -> pa.Array:
    parts = chunks(arr)
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays(parts) if parts else pa.array([], pa.large_string())


class _Bitmap:
    """A one-hash Bloom filter of uint64 keys, 16 to 32 one-bit slots per key (an absent key
    passes about once in 16 to 32): ``may_hold`` rules most absent keys out with one lookup."""

    _MUL = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self, keys: np.ndarray) -> None:
        self.log = max(16, min(27, len(keys).bit_length() + 4))
        slot = self._slot(keys)
        self.bits = np.zeros(1 << (self.log - 3), dtype=np.uint8)
        np.bitwise_or.at(self.bits, (slot >> np.uint64(3)).astype(np.intp),
                         np.left_shift(np.uint8(1), (slot & np.uint64(7)).astype(np.uint8)))

    def _slot(self, keys: np.ndarray) -> np.ndarray:
        return (keys * self._MUL) >> np.uint64(64 - self.log)   # multiplicative hashing

    def may_hold(self, keys: np.ndarray) -> np.ndarray:
        """Indices of the keys that may be in the set (every one that is)."""
        slot = self._slot(keys)
        byte = self.bits[(slot >> np.uint64(3)).astype(np.intp)]
        return np.flatnonzero((byte >> (slot & np.uint64(7)).astype(np.uint8)) & 1)


def _lookup_exact(run_q: np.ndarray, run_chunk: Strings, qr_q: np.ndarray,
                  qrels: QrelsLike) -> np.ndarray:
    """Exact lookup through one dictionary encoding of the chunk ids (the slow, sure path)."""
    codes, dictionary = encode(pa.chunked_array(chunks(run_chunk) + chunks(qrels.chunk),
                                                type=pa.large_string()))
    nc = np.int64(len(dictionary))
    run_key = run_q * nc + codes[:len(run_q)]
    q_key = qr_q * nc + codes[len(run_q):]
    order = np.argsort(q_key, kind="stable")
    q_sorted = q_key[order]
    at = np.minimum(np.searchsorted(q_sorted, run_key), len(q_sorted) - 1)
    hit = q_sorted[at] == run_key
    return np.where(hit, qrels.grade[order[at]], UNJUDGED).astype(np.int64)
