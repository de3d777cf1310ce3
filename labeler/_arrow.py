"""Fast, exact helpers on Arrow string arrays, shared by ``io`` (TREC readers) and the scorer.

Ids are kept as Arrow ``large_string`` arrays and read through their raw buffers with numpy:
no Python string objects. :func:`hash_ids` gives a 64-bit hash per (code, id); callers use it
to rule duplicates *out* (distinct hashes ⇒ distinct keys) and confirm anything that looks
equal on the strings themselves, so results stay exact.

Usage::

    arr = arrow_strings(df["chunk_id"])
    if may_repeat(arr, query_codes):
        ...  # exact (slow) check
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# every character for which Python's str.isspace() is true (what str.strip() removes)
PY_WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003"
                 "\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
# UTF-8 bytes that can start / end one of those characters
_WS_FIRST = np.zeros(256, dtype=bool)
_WS_FIRST[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0xC2, 0xE1, 0xE2, 0xE3]] = True
_WS_LAST = np.zeros(256, dtype=bool)
_WS_LAST[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0x85, 0xA0, 0x9F, 0xA8, 0xA9, 0xAF]] = True
_WS_LAST[0x80:0x8B] = True
# _MASKS[r] keeps the first r bytes of a little-endian word
_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)


def arrow_strings(values: Any) -> pa.Array:
    """One contiguous ``large_string`` array (zero-copy for Arrow-backed pandas strings).

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
class Bytes:
    """The raw layout of a large_string array: where each value starts, its length, bytes."""

    starts: np.ndarray
    lens: np.ndarray
    data: np.ndarray

    @classmethod
    def of(cls, arr: pa.Array) -> Bytes:
        _, off_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
        data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
                else np.zeros(0, np.uint8))
        return cls(starts=offsets[:-1], lens=offsets[1:] - offsets[:-1], data=data)

    def word(self, j: int) -> np.ndarray:
        """Bytes 8j..8j+7 of each value (zero past its end) as little-endian uint64."""
        data = self.data
        if len(data) < 16:
            data = np.concatenate([data, np.zeros(16, np.uint8)])
        view = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
        first = self.starts + 8 * j
        w = view[np.minimum(first, len(view) - 1)]
        late = np.flatnonzero(first > len(view) - 1)   # the last few bytes of the buffer
        if len(late):
            tail = np.zeros(24, np.uint8)
            base = len(data) - 8
            tail[:8] = data[base:]
            tview = np.ndarray((17,), dtype="<u8", buffer=tail, strides=(1,))
            w[late] = tview[np.minimum(first[late] - base, 16)]
        w &= _MASKS[np.clip(self.lens - 8 * j, 0, 8)]
        return w


def clean_ids(arr: pa.Array) -> bool:
    """True when no id is null or empty and none starts or ends with whitespace (Python's
    ``str.strip`` set): ``io`` would keep every id as it is."""
    if len(arr) == 0 or arr.null_count:
        return False
    b = Bytes.of(arr)
    if int(b.lens.min()) <= 0:
        return False
    first = _WS_FIRST[b.data[b.starts]]
    last = _WS_LAST[b.data[b.starts + b.lens - 1]]
    suspect = first | last
    if not suspect.any():
        return True
    odd = arr.filter(pa.array(suspect))   # rare: decide exactly on these
    return bool(pc.all(pc.equal(pc.utf8_trim(odd, characters=PY_WHITESPACE), odd)).as_py())


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, in place on a uint64 array."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def hash_ids(arr: pa.Array, codes: np.ndarray | None = None) -> np.ndarray:
    """A 64-bit hash per row of (``codes`` row, bytes of the id)."""
    b = Bytes.of(arr)
    h = b.lens.astype(np.uint64)
    if codes is not None:
        h += codes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    _mix(h)
    for j in range(-(-int(b.lens.max(initial=0)) // 8)):
        h ^= b.word(j)
        _mix(h)
    return h


def has_equal_neighbours(sorted_values: np.ndarray) -> bool:
    """Whether a sorted array holds a value twice."""
    return bool(np.any(sorted_values[1:] == sorted_values[:-1]))


def may_repeat(arr: pa.Array, groups: np.ndarray | None = None,
               counts: np.ndarray | None = None, order: np.ndarray | None = None) -> bool:
    """False when every (group, id) row is distinct for sure; True when some may repeat.

    ``counts`` (rows per group) and ``order`` (rows by group; ``None``: they come grouped)
    let ids be compared within each group: when all groups have one size, that is a sort
    of short rows instead of a global one.
    """
    if len(arr) < 2:
        return False
    b = Bytes.of(arr)
    # equal ids give equal keys, which is all a test for repeats needs: the exact check
    # that follows a "maybe" sorts out any accidental equality
    key = b.word(0) ^ (b.lens.astype(np.uint64) << np.uint64(59))
    for j in range(1, -(-int(b.lens.max()) // 8)):
        key ^= _mix(b.word(j) + np.uint64(j))
    if counts is not None and len(counts) and bool((counts == counts[0]).all()):
        key = key if order is None else key[order]
        key = np.sort(key.reshape(len(counts), int(counts[0])), axis=1)
        return bool(np.any(key[:, 1:] == key[:, :-1]))
    if groups is not None:
        key = _mix(key + groups.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    return has_equal_neighbours(np.sort(key))
