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

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

class _NoPandas:
    """A meta-path finder that refuses ``pandas`` to pyarrow and to labeler's pandas-free
    scoring modules: pyarrow tries to import pandas at its first conversion (to recognise
    pandas objects, and in every ``to_numpy``); while pandas is not imported nothing can be
    a pandas object, so the attempt may fail, cheaply. Any other module that imports pandas
    gets it (and the refusal ends)."""

    LEAN = ("pyarrow", "labeler._arrow", "labeler.scoring.", "labeler.io.arrow_read",
            "labeler.report.trec_text", "labeler.cli.score_cmd", "labeler.cli.tables")

    def __init__(self) -> None:
        self.on = False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if not self.on or not (name == "pandas" or name.startswith("pandas.")):
            return None
        frame: Any = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
            frame = frame.f_back   # the import machinery's own frames
        importer = "" if frame is None else str(frame.f_globals.get("__name__", ""))
        if importer.startswith(self.LEAN):
            raise ImportError("pandas is not needed here (labeler's pandas-free path)")
        self.on = False   # a module that needs pandas: it is imported from now on
        return None


_BLOCK_PANDAS = _NoPandas()


@contextmanager
def without_pandas() -> Iterator[None]:
    """Use pyarrow without importing pandas (~0.3 s of start-up), when nothing has imported
    it yet; code that needs pandas inside runs under :func:`allow_pandas` (or imports it
    from a module of its own, which lifts this).

    Usage: ``with without_pandas(): table.column("score").to_numpy()``
    """
    if "pandas" in sys.modules or _BLOCK_PANDAS.on:
        yield
        return
    sys.meta_path.insert(0, _BLOCK_PANDAS)
    _BLOCK_PANDAS.on = True
    try:
        yield
    finally:
        _BLOCK_PANDAS.on = False
        if _BLOCK_PANDAS in sys.meta_path:
            sys.meta_path.remove(_BLOCK_PANDAS)
        if "pandas" in sys.modules:   # pyarrow looks for pandas again
            pa.table({"_": pa.array([0])}).to_pandas()


@contextmanager
def allow_pandas() -> Iterator[None]:
    """Lift :func:`without_pandas` for code that needs pandas, and let pyarrow see it.

    Usage: ``with allow_pandas(): df = io.read_run(path)``
    """
    blocked = _BLOCK_PANDAS.on
    _BLOCK_PANDAS.on = False
    try:
        if blocked:   # pyarrow looks for pandas again on its next pandas conversion
            pa.table({"_": pa.array([0])}).to_pandas()
        yield
    finally:
        if blocked and "pandas" not in sys.modules:
            _BLOCK_PANDAS.on = True


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


def arrow_strings(values: Any) -> pa.ChunkedArray:
    """A ``large_string`` chunked array (zero-copy for Arrow-backed pandas strings; the
    chunks are kept as they are, so nothing is copied).

    Raises ``pa.ArrowException`` when ``values`` holds something other than strings.
    """
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(
        values, type=pa.large_string(), from_pandas=True)
    if isinstance(arr, pa.Array):
        arr = pa.chunked_array([arr])
    if not pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string())
    return arr


def encode(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Dictionary-encode: (int64 code of each row, the distinct values in order of first
    appearance)."""
    enc = pc.dictionary_encode(arr)
    chunks = enc.chunks if isinstance(enc, pa.ChunkedArray) else [enc]
    if not chunks:
        return np.zeros(0, np.int64), pa.array([], pa.large_string())
    codes = [c.indices.to_numpy(zero_copy_only=False) for c in chunks]
    return (np.concatenate(codes) if len(codes) > 1 else codes[0]).astype(np.int64), \
        chunks[-1].dictionary   # one dictionary shared by all chunks


def chunks(arr: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """The chunks of a (chunked) array."""
    return arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]


def take(arr: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``arr.take(rows)`` as one array; a chunked array is read chunk by chunk (pyarrow's
    own take on a chunked array of strings joins every chunk first)."""
    parts = chunks(arr)
    if len(parts) == 1:
        return parts[0].take(pa.array(rows))
    if not parts:
        return pa.array([], arr.type)
    if len(rows) > 1 << 16 and not bool(np.all(rows[1:] >= rows[:-1])):
        return pa.concat_arrays(chunks(arr.take(pa.array(rows))))   # many, in no order
    starts = np.cumsum([0] + [len(c) for c in parts])
    which = np.searchsorted(starts, rows, side="right") - 1
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(len(parts) + 1))
    pieces = [parts[c].take(pa.array(rows[order[bounds[c]:bounds[c + 1]]] - starts[c]))
              for c in range(len(parts)) if bounds[c + 1] > bounds[c]]
    joined = pa.concat_arrays(pieces) if pieces else pa.array([], arr.type)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.arange(len(order))
    return joined if bool((order == np.arange(len(order))).all()) else joined.take(
        pa.array(inverse))


_BLOCK = 1 << 20
"""Rows hashed at a time: the temporaries of a block stay small (a 10M-row array at once
spends more time faulting in fresh pages for each temporary than computing)."""


def _per_chunk(arr: pa.Array | pa.ChunkedArray, fn: Any, *columns: np.ndarray | None
               ) -> np.ndarray:
    """``fn(Bytes, *column slices)`` on each block of each chunk, results concatenated."""
    out, at = [], 0
    for chunk in chunks(arr):
        for lo in range(0, len(chunk), _BLOCK):
            piece = chunk.slice(lo, _BLOCK)
            n = len(piece)
            out.append(fn(Bytes.of(piece), *(c[at:at + n] if c is not None else None
                                            for c in columns)))
            at += n
    if not out:
        return np.zeros(0, np.uint64)
    return np.concatenate(out) if len(out) > 1 else out[0]


@dataclass(frozen=True)
class Bytes:
    """The raw layout of one large_string array: offsets (n + 1) and the data bytes."""

    offsets: np.ndarray
    data: np.ndarray

    @classmethod
    def of(cls, arr: pa.Array) -> Bytes:
        _, off_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
        data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
                else np.zeros(0, np.uint8))
        if len(data) < 16:   # so that an 8-byte window always fits
            data = np.concatenate([data, np.zeros(16, np.uint8)])
        return cls(offsets=offsets, data=data)

    @property
    def lens(self) -> np.ndarray:
        return self.offsets[1:] - self.offsets[:-1]

    def word(self, j: int, lens: np.ndarray) -> np.ndarray:
        """Bytes 8j..8j+7 of each value (zero past its end) as little-endian uint64."""
        view = np.ndarray((len(self.data) - 7,), dtype="<u8", buffer=self.data, strides=(1,))
        first = self.offsets[:-1] if j == 0 else self.offsets[:-1] + 8 * j
        cut = int(np.searchsorted(first, len(view)))   # windows past the end: the last few
        if cut == len(first):
            w = view[first]
        else:
            w = np.empty(len(first), dtype=np.uint64)
            w[:cut] = view[first[:cut]]
            tail = np.zeros(32, np.uint8)
            base = len(self.data) - 8
            tail[:8] = self.data[base:]
            tview = np.ndarray((25,), dtype="<u8", buffer=tail, strides=(1,))
            w[cut:] = tview[np.minimum(first[cut:] - base, 24)]
        w &= _MASKS[np.minimum(lens, 8) if j == 0 else np.clip(lens - 8 * j, 0, 8)]
        return w

    def word_at(self, rows: np.ndarray, j: int) -> np.ndarray:
        """Bytes 8j..8j+7 of the values at ``rows`` (zero past each one's end)."""
        first = self.offsets[rows] + 8 * j
        lens = self.offsets[rows + 1] - first
        view = np.ndarray((len(self.data) - 7,), dtype="<u8", buffer=self.data, strides=(1,))
        inside = first < len(view)
        w = view[np.where(inside, first, 0)]
        if not inside.all():   # windows past the end: read them from a padded copy
            base = len(self.data) - 8
            tail = np.zeros(32, np.uint8)
            tail[:8] = self.data[base:]
            tview = np.ndarray((25,), dtype="<u8", buffer=tail, strides=(1,))
            out = ~inside
            w[out] = tview[np.minimum(first[out] - base, 24)]
        w &= _MASKS[np.clip(lens, 0, 8)]
        return w


def same_ids(a: Bytes, rows_a: np.ndarray, b: Bytes, rows_b: np.ndarray) -> np.ndarray:
    """Whether the value at each ``rows_a`` of ``a`` equals the one at ``rows_b`` of ``b``
    (byte for byte)."""
    len_a = a.offsets[rows_a + 1] - a.offsets[rows_a]
    same = len_a == b.offsets[rows_b + 1] - b.offsets[rows_b]
    for j in range(-(-int(len_a.max(initial=0)) // 8)):
        same &= a.word_at(rows_a, j) == b.word_at(rows_b, j)
    return same


def clean_ids(arr: pa.Array | pa.ChunkedArray) -> bool:
    """True when no id is null or empty and none starts or ends with whitespace (Python's
    ``str.strip`` set): ``io`` would keep every id as it is."""
    if len(arr) == 0 or arr.null_count:
        return False
    return all(clean_chunk(chunk) for chunk in chunks(arr))


def clean_chunk(chunk: pa.Array) -> bool:
    """:func:`clean_ids` for one array without nulls."""
    if not len(chunk):
        return True
    if chunk.null_count:
        return False
    b = Bytes.of(chunk)
    ends = b.offsets[1:]
    if bool(np.any(ends == b.offsets[:-1])):
        return False   # an empty id
    suspect = _WS_FIRST[b.data[b.offsets[:-1]]]
    suspect |= _WS_LAST[b.data[ends - 1]]
    if suspect.any():   # rare: decide exactly on these
        odd = chunk.filter(pa.array(suspect))
        if not pc.all(pc.equal(pc.utf8_trim(odd, characters=PY_WHITESPACE), odd)).as_py():
            return False
    return True


def plain_fields(arr: pa.Array | pa.ChunkedArray) -> bool:
    """True when no value is empty and none holds a tab (what a split on single blanks
    gives for a well-formed whitespace-separated line)."""
    for chunk in chunks(arr):
        if not len(chunk):
            continue
        b = Bytes.of(chunk)
        if bool(np.any(b.offsets[1:] == b.offsets[:-1])):
            return False
        if bool(np.any(b.data[b.offsets[0]:b.offsets[-1]] == 9)):
            return False
    return True


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, in place on a uint64 array."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


_MIXED_LENS = _mix(np.arange(256, dtype=np.uint64))   # _mix of each short length, made once


def _hash(b: Bytes, codes: np.ndarray | None) -> np.ndarray:
    """The hash of each value from its own bytes (and code) alone: a value of w words gets
    exactly w + 1 rounds, whatever its neighbours' lengths, so equal ids hash equal in any
    block, array or call."""
    lens = b.lens
    longest = int(lens.max(initial=0))
    if codes is None and longest < len(_MIXED_LENS):
        h = _MIXED_LENS[lens]
    else:
        h = lens.astype(np.uint64)
        if codes is not None:
            h += codes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        _mix(h)
    for j in range(-(-longest // 8)):
        if j == 0 or int(lens.min(initial=0)) > 8 * j:   # every value has word j
            h ^= b.word(j, lens)
            _mix(h)
        else:   # only the values that reach word j get a round for it
            rows = np.flatnonzero(lens > 8 * j)
            h[rows] = _mix(h[rows] ^ b.word_at(rows, j))
    return h


def hash_ids(arr: pa.Array | pa.ChunkedArray, codes: np.ndarray | None = None) -> np.ndarray:
    """A 64-bit hash per row of (``codes`` row, bytes of the id)."""
    return _per_chunk(arr, _hash, codes)


def _key(b: Bytes) -> np.ndarray:
    """Equal ids give equal keys (not the other way round), from each id's own bytes alone:
    cheap, for repeat tests."""
    lens = b.lens
    key = b.word(0, lens)
    key ^= lens.astype(np.uint64) << np.uint64(59)
    for j in range(1, -(-int(lens.max(initial=0)) // 8)):
        if int(lens.min(initial=0)) > 8 * j:
            key ^= _mix(b.word(j, lens) + np.uint64(j))
        else:
            rows = np.flatnonzero(lens > 8 * j)
            key[rows] ^= _mix(b.word_at(rows, j) + np.uint64(j))
    return key


def has_equal_neighbours(sorted_values: np.ndarray) -> bool:
    """Whether a sorted array holds a value twice."""
    return bool(np.any(sorted_values[1:] == sorted_values[:-1]))


def group_keys(arr: pa.Array | pa.ChunkedArray, groups: np.ndarray) -> np.ndarray:
    """A uint64 key per row for (group, id): the group in the top 24 bits, 40 bits of the
    id's hash below, so rows that come grouped give nearly sorted keys (cheap to sort and to
    search). Groups beyond 2**24 fall back to one 64-bit hash of both."""
    if len(groups) and int(groups.max()) >= 1 << 24:
        return hash_ids(arr, groups)
    key = hash_ids(arr)
    key &= np.uint64((1 << 40) - 1)
    key |= groups.astype(np.uint64) << np.uint64(40)
    return key


def changes(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Row i + 1 differs from row i (length n - 1)."""
    if len(arr) < 2:
        return np.zeros(0, dtype=bool)
    return pc.not_equal(arr.slice(1), arr.slice(0, len(arr) - 1)).to_numpy(zero_copy_only=False)


def group_codes(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """:func:`encode`, cheaper for rows that come in runs of equal values (a run file's or
    a qrels file's queries): one comparison per row and an encoding of the runs' first
    values only."""
    heads = np.flatnonzero(np.concatenate([[len(arr) > 0], changes(arr)]))
    if len(heads) > len(arr) // 4:
        return encode(arr)
    head_codes, values = encode(take(arr, heads))
    return np.repeat(head_codes, np.diff(np.append(heads, len(arr)))), values


def may_repeat(arr: pa.Array | pa.ChunkedArray, groups: np.ndarray | None = None,
               block: int | None = None, order: np.ndarray | None = None) -> bool:
    """False when every (group, id) row is distinct for sure; True when some may repeat.

    ``groups``: the group of each row. Or ``block``: the rows come in groups of ``block``
    rows (in ``order`` when given) — then ids are compared within each block, a sort of
    short rows instead of a global one.
    """
    if len(arr) < 2:
        return False
    if block:
        # equal ids give equal keys, which is all a test for repeats needs: the exact
        # check that follows a "maybe" sorts out any accidental equality
        if order is not None:
            key = np.sort(_per_chunk(arr, _key)[order].reshape(-1, block), axis=1)
            return bool(np.any(key[:, 1:] == key[:, :-1]))
        step = block * max(1, _BLOCK // block)   # whole groups at a time: small temporaries
        for lo in range(0, len(arr), step):
            key = np.sort(_per_chunk(arr.slice(lo, step), _key).reshape(-1, block), axis=1)
            if np.any(key[:, 1:] == key[:, :-1]):
                return True
        return False
    starts = (np.flatnonzero(np.concatenate([[True], groups[1:] != groups[:-1]]))
              if groups is not None and len(groups) > _BLOCK else None)
    if groups is not None and starts is not None and len(np.unique(groups[starts])) == len(
            starts):   # each group in one run of rows: sort whole groups a slice at a time
        at = np.searchsorted(starts, np.arange(0, len(arr), _BLOCK))
        cuts = np.unique(starts[np.minimum(at, len(starts) - 1)])
        for lo, hi in zip(cuts, np.append(cuts[1:], len(arr))):
            key = group_keys(arr.slice(int(lo), int(hi - lo)), groups[lo:hi])
            if has_equal_neighbours(np.sort(key)):
                return True
        return False
    key = hash_ids(arr) if groups is None else group_keys(arr, groups)
    return has_equal_neighbours(np.sort(key))
