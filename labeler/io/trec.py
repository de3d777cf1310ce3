"""TREC qrels and runs: a fast pyarrow path for the common layout, a general reader
that decides every odd file and names the line at fault."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from labeler.errors import InputError
from labeler.io._base import Locator
from labeler.io.lines import COMPRESSED, is_comment, text_lines, read_space_separated

# --------------------------------------------------------------------------- TREC


def _read_trec_lines(p: Path, names: list[str], usecols: list[int], what: str,
                     check: Callable[[list[str]], str | None] | None
                     ) -> tuple[pd.DataFrame, Locator]:
    """The general TREC reader, line by line: blank lines and ``#`` comments skipped, fields
    split on any whitespace; a run line may carry fields after its tag (ignored, as trec_eval
    does); anything else names the line at fault."""
    n_fields, exact = len(names), what == "qrels"
    rows: list[list[str]] = []
    lines: list[int] = []
    for n, raw in text_lines(p):
        parts = raw.split()
        if not parts or is_comment(parts):
            continue
        if len(parts) < n_fields or (exact and len(parts) > n_fields):
            raise InputError(f"a TREC {what} line has {n_fields} fields, this one has "
                             f"{len(parts)}: {raw.strip()[:80]!r}", path=p, line=n)
        problem = check(parts) if check else None
        if problem:
            raise InputError(problem, path=p, line=n)
        rows.append([parts[i] for i in usecols])
        lines.append(n)
    if not rows:
        raise InputError("the file has no records", path=p)
    return (pd.DataFrame(rows, columns=[names[i] for i in usecols]),
            lambda i: {"line": lines[i]})


def trec_locate_bad(p: Path, n_fields: int, what: str, check: Callable[[list[str]], str | None]
                     ) -> InputError:
    """Slow path: find the first malformed TREC line and describe it."""
    names = [f"f{i}" for i in range(n_fields)]
    try:
        _read_trec_lines(p, names, list(range(n_fields)), what, check)
    except InputError as exc:
        return exc
    return InputError(f"not a valid TREC {what} file", path=p)


def trec_lines(p: Path) -> Locator:
    """Locator for a whitespace TREC file read with blank lines skipped."""
    line_of: list[int] | None = None

    def loc(i: int) -> dict[str, int]:
        nonlocal line_of
        if line_of is None:
            line_of = [n for n, raw in text_lines(p) if raw.strip()]
        return {"line": line_of[i]}
    return loc


def read_trec(p: Path, names: list[str], usecols: list[int], what: str
               ) -> tuple[pd.DataFrame, Locator]:
    """A TREC file of any layout: pandas' C parser for whitespace-separated lines, the
    line-by-line reader for comments, extra fields after a run's tag, or to name a line with
    too few (or, in qrels, too many) fields. Values are checked by the caller
    (:func:`trec_locate_bad` names a bad one)."""
    try:   # one more column than a line should have: it must stay empty
        df = pd.read_csv(p, sep=r"\s+", header=None, names=[*names, "_extra"], dtype=str,
                         engine="c", keep_default_na=False, na_filter=True,
                         skip_blank_lines=True, quoting=3)
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError):
        return _read_trec_lines(p, names, usecols, what, None)
    extra = df.pop("_extra")
    df = df[[names[i] for i in usecols]]
    if (df.empty or extra.notna().any() or df.isna().to_numpy().any()
            or df[names[0]].str.startswith("#").any()):
        return _read_trec_lines(p, names, usecols, what, None)
    return df, trec_lines(p)


def read_trec_fast(p: Path, names: list[str], keep: list[str], numeric: dict[str, str],
                    categorical: tuple[str, ...] = ()) -> pd.DataFrame | None:
    """The common case of :func:`read_trec`, fast: fields split by single spaces, read by
    pyarrow's CSV reader (``numeric`` columns parsed as ``"float"``/``"int"``, the
    ``categorical`` ones kept as pandas categoricals); ``None`` whenever the file is anything
    else (tabs, runs of blanks, bad numbers, compression ...), so that the general reader
    decides and names the line."""
    if p.suffix.lower() in COMPRESSED:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    from labeler._arrow import plain_fields

    types = {n: pa.large_string() if n in keep and n not in categorical
             else pa.dictionary(pa.int32(), pa.large_string()) for n in names}
    types.update({n: pa.float64() if kind == "float" else pa.int64()
                  for n, kind in numeric.items()})
    table = read_space_separated(p, names, types)
    if table is None:
        return None
    first = table.column(names[0])
    if pa.types.is_large_string(first.type) and pc.any(pc.starts_with(first, "#")).as_py():
        return None   # comment lines: the general reader skips them
    for name in names:
        col = table.column(name)
        if name in numeric:
            if col.null_count or (numeric[name] == "float"
                                  and bool(pc.any(pc.is_nan(col)).as_py())):
                return None
        elif not plain_fields(col if pa.types.is_large_string(col.type) else
                              pa.chunked_array([c.dictionary for c in col.chunks],
                                               type=pa.large_string())):
            return None   # an empty field (two blanks in a row) or a tab: general reader
    out = table.select(keep).to_pandas()
    strings = [c for c in keep if c not in numeric and c not in categorical]
    return out if all(out[c].dtype == "str" for c in strings) else None


def may_repeat(df: pd.DataFrame, group_cols: list[str], id_col: str) -> bool:
    """Cheap pre-test for a repeated (group..., id) row: ``False`` only when none repeats for
    sure (64-bit keys of the ids); ``True`` means "run the exact check"."""
    import pyarrow as pa

    from labeler._arrow import arrow_strings, group_codes, may_repeat
    try:
        codes = None
        for col in group_cols:
            col_codes, values = group_codes(arrow_strings(df[col]))
            codes = col_codes if codes is None else codes * len(values) + col_codes
        return may_repeat(arrow_strings(df[id_col]), codes)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return True


