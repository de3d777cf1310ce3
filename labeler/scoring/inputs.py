"""Inputs of the scoring kernel: DataFrames, objects and files turned into the kernel's
arrays, through the fast path when the input allows it (Arrow readers for files, the frame's
own columns for DataFrames) and through :mod:`labeler.io` otherwise — which cleans ids and
names a bad line or a chunk ranked twice.

Usage::

    out = kernel_of_files("human.qrels", ["bm25.run"], ks=[10], gain="linear",
                          ideal="qrels", depth=0)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from labeler._arrow import arrow_strings
from labeler._lean import allow_pandas
from labeler.scoring.arrays import KernelOut, NeedsIO, QrelsArrays, RunArrays
from labeler.scoring.ndcg import kernel

if TYPE_CHECKING:
    import pandas as pd


def _is_frame(obj: Any) -> bool:
    """``obj`` is a pandas DataFrame (without importing pandas when nothing has)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def run_kernel(qa: QrelsArrays, check_q: bool, ra: RunArrays, check_r: bool,
               qrels_io: Callable[[], QrelsArrays], run_io: Callable[[], RunArrays],
               ks: list[int], gain: str, ideal: str, depth: int | None) -> KernelOut:
    """The kernel on arrays not yet checked (``check_*``); an input the kernel doubts is
    read again through ``*_io`` (io cleans the ids, or finds and names a repeated key)."""
    while True:
        try:
            return kernel(ra, qa, ks, gain, ideal, check_run=check_r, check_qrels=check_q,
                          depth=depth)
        except NeedsIO as why:
            if why.which == "run":
                ra, check_r = run_io(), False
            else:
                qa, check_q = qrels_io(), False


def kernel_of_files(qrels: Any, runs: Sequence[Any], ks: list[int], gain: str, ideal: str,
                    depth: int | None, qrels_fmt: str | None = None,
                    run_fmt: str | None = None, grade_map: Mapping[str, int] | None = None
                    ) -> KernelOut:
    """The kernel on a qrels file and run files: read by Arrow where they are plain TREC or
    Parquet files (no pandas), else by :mod:`labeler.io`."""
    from labeler.io.arrow_read import read_qrels_arrow, read_runs_arrow

    def qrels_io() -> QrelsArrays:
        with allow_pandas():
            from labeler import io
            return qrels_arrays(io.read_qrels(qrels, qrels_fmt, grade_map, any_grade=True))

    def run_io() -> RunArrays:
        with allow_pandas():
            from labeler import io
            return run_arrays(io.read_runs(list(runs), run_fmt))

    q_table = None if grade_map else read_qrels_arrow(qrels, qrels_fmt)
    r_tables = read_runs_arrow(list(runs), run_fmt)
    qa, check_q = ((qrels_io(), False) if q_table is None else
                   (QrelsArrays(query=q_table.column("query_id"),
                                chunk=q_table.column("chunk_id"),
                                grade=q_table.column("grade").to_numpy()), True))
    ra, check_r = (run_io(), False) if r_tables is None else (_runs_of_tables(r_tables), True)
    return run_kernel(qa, check_q, ra, check_r, qrels_io, run_io, ks, gain, ideal, depth)


def _runs_of_tables(tables: list[tuple[str | None, pa.Table]]) -> RunArrays:
    """One :class:`RunArrays` of the Arrow readers' runs (named, or with a system column)."""
    def strings(col: str) -> pa.ChunkedArray:
        return pa.chunked_array([c for _, t in tables for c in t.column(col).chunks],
                                type=pa.large_string())

    score = np.concatenate([t.column("score").to_numpy() for _, t in tables])
    if len(tables) == 1 and tables[0][0] is not None:
        system: pa.ChunkedArray | str = str(tables[0][0])
    elif len(tables) == 1:
        system = tables[0][1].column("system")
    else:
        system = pa.chunked_array([pa.repeat(pa.scalar(name, pa.large_string()), t.num_rows)
                                   for name, t in tables], type=pa.large_string())
    return RunArrays(system=system, query=strings("query_id"), chunk=strings("chunk_id"),
                     score=score)


def run_arrays(run: pd.DataFrame) -> RunArrays:
    return RunArrays(system=arrow_strings(run["system"]), query=arrow_strings(run["query_id"]),
                     chunk=arrow_strings(run["chunk_id"]),
                     score=run["score"].to_numpy(dtype=np.float64))


def qrels_arrays(qrels: pd.DataFrame) -> QrelsArrays:
    return QrelsArrays(query=arrow_strings(qrels["query_id"]),
                       chunk=arrow_strings(qrels["chunk_id"]),
                       grade=qrels["grade"].to_numpy(dtype=np.int64))


def run_input(run: Any) -> tuple[RunArrays, bool]:
    """Arrays of a run, and whether duplicates are still to be checked.

    A DataFrame that ``io.as_run`` would keep unchanged (string ids without surrounding
    blanks, numeric scores) is used as it is; anything else goes through ``io.as_run``.
    """
    if _is_frame(run) and {"query_id", "chunk_id", "score"} <= set(run.columns):
        try:
            fast = _fast_run(run)
        except (pa.ArrowException, TypeError, ValueError):
            fast = None
        if fast is not None:
            return fast, True
    return run_arrays(_io().as_run(run)), False


def _fast_run(run: pd.DataFrame) -> RunArrays | None:
    if run["score"].dtype.kind not in "fiu":
        return None
    score = run["score"].to_numpy(dtype=np.float64)
    if np.isnan(score).any():
        return None
    query, chunk = arrow_strings(run["query_id"]), arrow_strings(run["chunk_id"])
    system: pa.Array | str = "run"
    if "system" in run.columns:
        system = arrow_strings(run["system"])
        if system.null_count:
            return None
    return RunArrays(system=system, query=query, chunk=chunk, score=score)


def qrels_input(qrels: Any) -> tuple[QrelsArrays, bool]:
    """Arrays of qrels, and whether duplicates are still to be checked (see _run_input)."""
    if (_is_frame(qrels) and "status" not in qrels.columns
            and {"query_id", "chunk_id", "grade"} <= set(qrels.columns)
            and qrels["grade"].dtype.kind in "iu"):
        grade = qrels["grade"].to_numpy(dtype=np.int64)
        try:
            query, chunk = arrow_strings(qrels["query_id"]), arrow_strings(qrels["chunk_id"])
        except (pa.ArrowException, TypeError, ValueError):
            query = chunk = None
        if query is not None and chunk is not None and len(grade):
            return QrelsArrays(query=query, chunk=chunk, grade=grade), True
    return qrels_arrays(_io().as_qrels(qrels, any_grade=True)), False




def _io() -> Any:
    from labeler import io
    return io
