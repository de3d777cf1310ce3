"""Atomic writers: a temporary file beside the target, renamed into place on success.

Text cells of a written CSV that a spreadsheet would run as a formula (starting with ``=``,
``+``, ``-`` or ``@``, and not a number) get a leading ``'``; the readers take it off again.
An id holding whitespace cannot be written to a TREC file (the line would split): that is an
:class:`~labeler.errors.InputError` naming the id and its row.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labeler.errors import InputError, OutputError
from labeler.fmt import clean_text
from labeler.schema import LABEL_COLUMNS
from labeler.io._base import PathLike, detect_format

# --------------------------------------------------------------------------- writers

_FORMULA = r"^(?:[=+\-@]|'[=+\-@])"
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")

@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place only on success."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        full = full_disk(exc, target)
        if full is not None:
            raise full from None
        raise
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are shared files
        os.replace(tmp_path, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        full = full_disk(exc, target)
        if full is not None:
            raise full from None
        raise


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def full_disk(exc: BaseException, path: PathLike | None = None) -> OutputError | None:
    """The clear error for ``exc`` when it says the disk is full or over quota, else None."""
    if not isinstance(exc, OSError) or exc.errno not in _FULL:
        return None
    where = path if path is not None else exc.filename
    return OutputError(f"cannot write: the disk is full or over quota ({exc.strerror}); free "
                       "some space or write elsewhere", path=where)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(text: str, path: PathLike) -> Path:
    """Write text atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(clean_text(text), encoding="utf-8")
    return Path(path)


def write_json(obj: Any, path: PathLike) -> Path:
    """Write JSON atomically (indented, UTF-8, NaN written as null)."""
    return write_text(json.dumps(_jsonable(obj), indent=2, ensure_ascii=False) + "\n", path)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return None if not np.isfinite(obj) else float(obj)
    if obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_table(df: pd.DataFrame, path: PathLike, fmt: str | None = None) -> Path:
    """Write a DataFrame as CSV, JSONL or Parquet (by extension), atomically."""
    kind = detect_format(path, fmt, content=False)
    with atomic_path(path) as tmp:
        if kind == "csv":
            neutralise_formulas(df).to_csv(tmp, index=False)
        elif kind == "jsonl":
            df.to_json(tmp, orient="records", lines=True, force_ascii=False)
        elif kind == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            raise InputError(f"cannot write a table as '{kind}'", path=path)
    return Path(path)


def neutralise_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with text cells a spreadsheet would run (``=``, ``+``, ``-``, ``@`` first, not a
    number) prefixed with ``'``; a copy only when some cell changes.

    Usage::

        neutralise_formulas(pd.DataFrame({"chunk": ["=HYPERLINK(...)", "-3"]}))  # "'=HY…", "-3"
    """
    out = df
    for col in df.columns:
        cells = df[col]
        if cells.dtype != object and not pd.api.types.is_string_dtype(cells):
            continue
        try:
            risky = cells.str.contains(_FORMULA, regex=True, na=False)
        except AttributeError:  # not text (e.g. lists of votes)
            continue
        if not risky.any():
            continue
        risky &= ~cells.str.fullmatch(_NUMBER, na=False)
        if risky.any():
            if out is df:
                out = df.copy()
            out[col] = cells.where(~risky, "'" + cells.astype(str))
    return out


def _check_trec_ids(df: pd.DataFrame, columns: tuple[str, ...], path: PathLike) -> None:
    for col in columns:
        bad = df[col].astype(str).str.contains(r"[\s\x00-\x1f\x7f]", regex=True)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{col} {df[col].iloc[i]!r} holds whitespace or a control character "
                             "and cannot be written to a TREC file (its fields are separated by "
                             "blanks); write .jsonl "
                             "or .csv instead", path=path, row=i + 1)


def write_qrels(df: pd.DataFrame, path: PathLike, fmt: str | None = None) -> Path:
    """Write ``query_id, chunk_id, grade`` as TREC qrels (``.qrels``/``.trec``/``.txt``) or a
    table; rows without a grade (failed labels) are not written to qrels."""
    judged = df.loc[df["grade"].notna(), ["query_id", "chunk_id", "grade"]]
    kind = detect_format(path, fmt, content=False)
    if kind != "trec":
        out = judged.copy()
        out["grade"] = out["grade"].astype("int64")
        return write_table(out, path, kind)
    _check_trec_ids(df, ("query_id", "chunk_id"), path)
    grades = judged["grade"].astype("int64").astype(str)
    lines = judged["query_id"].astype(str) + " 0 " + judged["chunk_id"].astype(str) + " " + grades
    return write_text("\n".join(lines.tolist()) + ("\n" if len(lines) else ""), path)


def write_run(df: pd.DataFrame, path: PathLike, fmt: str | None = None) -> Path:
    """Write a run as TREC (``qid Q0 docid rank score tag``, ranks by trec_eval's order) or a
    table."""
    kind = detect_format(path, fmt, content=False)
    if kind != "trec":
        return write_table(df, path, kind)
    _check_trec_ids(df, ("query_id", "chunk_id", "system"), path)
    ordered = df.sort_values(["system", "query_id", "score", "chunk_id"],
                             ascending=[True, True, False, False])
    rank = ordered.groupby(["system", "query_id"], sort=False).cumcount() + 1
    lines = (ordered["query_id"].astype(str) + " Q0 " + ordered["chunk_id"].astype(str) + " "
             + rank.astype(str) + " " + ordered["score"].map(repr) + " "
             + ordered["system"].astype(str))
    return write_text("\n".join(lines.tolist()) + "\n", path)


def write_labels(df: pd.DataFrame, path: PathLike, fmt: str | None = None) -> Path:
    """Write label records (the documented columns first) as JSONL/CSV/Parquet, or TREC qrels."""
    kind = detect_format(path, fmt, content=False)
    if kind == "trec":
        return write_qrels(df, path, kind)
    cols = [c for c in LABEL_COLUMNS if c in df.columns]
    cols += [c for c in df.columns if c not in cols]
    out = df[cols].copy()
    if "grade" in out.columns:
        out["grade"] = out["grade"].astype("Int64")
    return write_table(out, path, kind)


