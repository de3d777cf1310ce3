"""Qrels and runs as Arrow tables, without pandas, for the common files: TREC lines split by
single blanks (as run and qrels files come) and Parquet with our column names.

Every reader returns None when the file is anything else or when it is unsure (comments,
tabs, compression, a grade map, other column names, ids that are not strings ...): the
caller then reads it with :mod:`labeler.io.readers`, which decides every odd file and names
the line at fault. No check is left out: the caller's scoring kernel checks ids and repeats
on the arrays and falls back the same way.

Usage::

    table = read_qrels_arrow("human.qrels")   # query_id, chunk_id, grade (int64) or None
    runs = read_runs_arrow(["bm25=a.run", "dense.run"])   # [(name, table)] or None
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from labeler._lean import declare_lean
from labeler.io.lines import read_space_separated

declare_lean(__name__)   # `labeler score` reads plain files without pandas

__all__ = ["read_qrels_arrow", "read_runs_arrow", "split_run_spec"]

_TREC_EXTS = (".qrels", ".run", ".trec")
_PARQUET_EXTS = (".parquet", ".pq")


def split_run_spec(spec: Any) -> tuple[str | None, Any]:
    """``"bm25=runs/a.run"`` → ``("bm25", "runs/a.run")``, as ``io.parse_run_arg`` reads it
    (which also names a bad spec): None when it is not plainly one or the other."""
    if isinstance(spec, tuple):
        return spec[0], spec[1]
    text = os.fspath(spec)
    if isinstance(spec, Path) or "=" not in text or Path(text).exists():
        return None, spec
    name, _, path = text.partition("=")
    if "/" in name or os.sep in name or not name.strip() or not path:
        return None, None   # a path, or a bad spec: the general reader decides
    return name.strip(), path


def _kind(path: Any, fmt: str | None) -> str | None:
    if fmt:
        fmt = fmt.lower()
        return "trec" if fmt in ("trec", "qrels", "run") else (
            "parquet" if fmt == "parquet" else None)
    ext = Path(path).suffix.lower()
    return "trec" if ext in _TREC_EXTS else "parquet" if ext in _PARQUET_EXTS else None


def _read_trec(path: Any, names: list[str], types: dict[str, pa.DataType]) -> pa.Table | None:
    import pyarrow.compute as pc

    from labeler._arrow import plain_fields

    table = read_space_separated(path, names, types)
    if table is None:
        return None
    if pc.any(pc.starts_with(table.column(names[0]), "#")).as_py():
        return None   # comment lines
    for name in names:
        col = table.column(name)
        if pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
            if col.null_count or (pa.types.is_floating(col.type)
                                  and bool(pc.any(pc.is_nan(col)).as_py())):
                return None
        elif pa.types.is_dictionary(col.type):
            if not plain_fields(pa.chunked_array([c.dictionary for c in col.chunks],
                                                 type=pa.large_string())):
                return None
        elif not plain_fields(col):
            return None   # an empty field (two blanks in a row) or a tab
    return table


def _read_parquet(path: Any, want: tuple[str, ...], optional: tuple[str, ...] = ()
                  ) -> pa.Table | None:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        cols = [c for c in (*want, *optional) if c in schema.names]
        if not set(want) <= set(cols):
            return None
        table = pq.read_table(path, columns=cols)
    except (pa.ArrowException, OSError):
        return None
    if table.num_rows == 0 or any(table.column(c).null_count for c in cols):
        return None
    for c in cols:
        t = table.column(c).type
        if c in ("query_id", "chunk_id", "system"):
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                return None
            table = table.set_column(table.schema.get_field_index(c), c,
                                     table.column(c).cast(pa.large_string()))
    return table


def read_qrels_arrow(path: Any, fmt: str | None = None) -> pa.Table | None:
    """``query_id, chunk_id, grade`` (int64) of a TREC qrels file or a Parquet table with
    those columns; None when the general reader must decide."""
    kind = _kind(path, fmt)
    if kind == "trec":
        names = ["query_id", "iter", "chunk_id", "grade"]
        table = _read_trec(path, names, {"query_id": pa.large_string(),
                                         "iter": pa.dictionary(pa.int32(), pa.large_string()),
                                         "chunk_id": pa.large_string(), "grade": pa.int64()})
        return None if table is None else table.select(["query_id", "chunk_id", "grade"])
    if kind == "parquet":
        table = _read_parquet(path, ("query_id", "chunk_id", "grade"))
        if table is None or not pa.types.is_integer(table.column("grade").type):
            return None
        return table.set_column(2, "grade", table.column("grade").cast(pa.int64()))
    return None


def read_runs_arrow(specs: Sequence[Any], fmt: str | None = None
                    ) -> list[tuple[str | None, pa.Table]] | None:
    """Each run as ``(name, table)``: ``query_id, chunk_id, score`` (float64) and, when the
    file names its systems, ``system``; the name is NAME of ``NAME=PATH``, else the TREC tag
    of the first line (None for a table: its ``system`` column or its stem name it). None
    when the general reader must decide, or when two runs share a name."""
    out: list[tuple[str | None, pa.Table]] = []
    for spec in specs:
        name, path = split_run_spec(spec)
        if path is None or not Path(path).is_file():
            return None
        kind = _kind(path, fmt)
        if kind == "trec":
            table = _read_trec(path, ["query_id", "q0", "chunk_id", "rank", "score", "tag"],
                               {"query_id": pa.large_string(),
                                "q0": pa.dictionary(pa.int32(), pa.large_string()),
                                "chunk_id": pa.large_string(), "rank": pa.int64(),
                                "score": pa.float64(),
                                "tag": pa.dictionary(pa.int32(), pa.large_string())})
            if table is None:
                return None
            if name is None:
                name = str(table.column("tag")[0].as_py())
            out.append((name, table.select(["query_id", "chunk_id", "score"])))
        elif kind == "parquet":
            table = _read_parquet(path, ("query_id", "chunk_id", "score"), ("system",))
            if table is None or not (pa.types.is_floating(table.column("score").type)
                                     or pa.types.is_integer(table.column("score").type)):
                return None
            table = table.set_column(2, "score", table.column("score").cast(pa.float64()))
            if name is None and "system" not in table.column_names:
                name = _stem(path)
            if name is not None and "system" in table.column_names:
                table = table.drop_columns(["system"])
            out.append((name, table))
        else:
            return None
    names = [n for n, _ in out if n is not None]
    if len(set(names)) < len(names) or any("system" in t.column_names for _, t in out):
        return None if len(out) > 1 or len(set(names)) < len(names) else out
    return out


def _stem(path: Any) -> str:
    name = Path(path).name
    return name.rsplit(".", 1)[0] if "." in name else name
