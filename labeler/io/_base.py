"""Formats, raw tables, ids and grades: the shared validation of every reader.

CSV files are checked row by row before pandas reads them: a row whose field count differs
from the header's is an error naming its line (a trailing comma on every row — one extra,
empty field, common in exports — is read correctly); a file in another encoding than UTF-8,
a ``;``-separated file and a corrupt ``.gz`` get a message that says what to do. Ids are
strings in every format (a JSONL ``12345678901234567`` stays exactly that). A cell that
labeler neutralised against spreadsheet formulas (``'=…``) is read back as written.
"""

from __future__ import annotations

import csv
import json
import os
import re
import warnings
from array import array
from collections.abc import Callable, Mapping
from io import TextIOWrapper
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from labeler.fmt import clean_data
from labeler.errors import InputError
from labeler.io.lines import (DECOMPRESS_ERRORS, INT_RE, COMPRESSED, UTF8_ADVICE, corrupt,
                              first_bad_line, open_binary, text_lines, trec_kind, first_line,
                              sniff_trec)
from labeler.schema import GRADES, INPUT_FORMATS

PathLike: TypeAlias = str | os.PathLike[str]
GradeMap: TypeAlias = Mapping[str, int] | None

TABLE_FORMATS = tuple(f for f in INPUT_FORMATS if f != "trec")
"""The formats of tables (every input format but TREC's)."""
_EXT_FORMATS = {
    ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
    ".parquet": "parquet", ".pq": "parquet", ".tsv": "tsv",
    ".qrels": "trec", ".run": "trec", ".trec": "trec", ".txt": "trec",
}
_WEAK_EXTS = (".txt",)
"""Extensions that only guess (TREC): the content decides first (a ``.txt`` CSV is CSV)."""
FORMAT_HINT = ", or give the format (`fmt`)"
"""The end of a message about a format that could not be told; the CLI names its own flag
(or drops the hint where the command has none)."""

Locator = Callable[[int], dict[str, int]]
"""Maps a 0-based DataFrame position to ``{"line": n}`` or ``{"row": n}`` for error messages."""


def frame_rows(i: int) -> dict[str, int]:
    """The :data:`Locator` of a DataFrame the caller gave: 1-based rows.

    Usage: ``raise InputError("bad", path="<DataFrame>", **frame_rows(0))``
    """
    return {"row": i + 1}

_NEUTRALISED = re.compile(r"^'(?=[=+\-@]|'[=+\-@])")
"""A cell a writer prefixed with ``'`` so that spreadsheets do not run it (see writers)."""


# --------------------------------------------------------------------------- formats

def detect_format(path: PathLike, fmt: str | None = None, *, content: bool = True) -> str:
    """The format of ``path``: ``fmt`` if given, else from its extension (``.gz`` ignored),
    else (with ``content``, for a file to read) from its content (TREC qrels or run lines,
    JSON lines, a CSV header, Parquet)."""
    if fmt:
        fmt = fmt.lower()
        if fmt in ("qrels", "run"):
            fmt = "trec"
        if fmt not in INPUT_FORMATS:
            raise InputError(f"unknown format '{fmt}' (use {', '.join(INPUT_FORMATS[:-1])} or "
                             f"{INPUT_FORMATS[-1]})", path=path)
        return fmt
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in COMPRESSED:
        suffixes = suffixes[:-1]
    ext = suffixes[-1] if suffixes else ""
    if ext in _EXT_FORMATS and not (content and ext in _WEAK_EXTS):
        return _EXT_FORMATS[ext]
    sniffed = sniff_format(Path(path)) if content else None
    if sniffed is None and ext in _WEAK_EXTS:
        return _EXT_FORMATS[ext]   # a .txt that looks like nothing else: TREC, the reader says
    if sniffed is None:
        raise InputError(
            f"cannot tell the format from the extension '{ext or '(none)'}'"
            f"{' nor from the content' if content else ''}; use one of .csv .jsonl .parquet "
            f".tsv .qrels .run .trec{FORMAT_HINT}", path=path)
    return sniffed


def sniff_format(p: Path) -> str | None:
    """The format of a file whose extension does not say, from its first lines: TREC
    (``qid iter docid rel`` or ``qid Q0 docid rank score tag``), JSON lines, Parquet, CSV."""

    if not p.is_file():
        return None
    with open(p, "rb") as fh:
        if fh.read(4) == b"PAR1":
            return "parquet"
    if sniff_trec(p):
        return "trec"
    try:
        first = next((raw.strip() for _, raw in text_lines(p) if raw.strip()), "")
    except (InputError, OSError, EOFError):
        return None
    if first.startswith("{"):
        return "jsonl"
    if "," in first and "\t" not in first:
        return "csv"
    return None


def check_exists(path: PathLike) -> Path:
    """``path`` as a :class:`~pathlib.Path` of a non-empty file, else an InputError naming it.

    Usage: ``p = check_exists("qrels.txt")``
    """
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", path=p)
    if p.is_dir():
        raise InputError("is a directory, expected a file", path=p)
    if p.stat().st_size == 0:
        raise InputError("the file is empty", path=p)
    return p


# --------------------------------------------------------------------------- raw tables

def _read_jsonl(p: Path) -> tuple[pd.DataFrame, Locator]:
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    for n, raw in text_lines(p):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", path=p, line=n) from None
        if not isinstance(obj, dict):
            raise InputError("each line must be a JSON object", path=p, line=n)
        if "\\u" in raw and _LONE_ESCAPE.search(raw):
            obj = clean_data(obj)  # lone surrogates cannot be UTF-8: U+FFFD instead
        records.append(obj)
        lines.append(n)
    if not records:
        raise InputError("the file has no records", path=p)
    df = pd.DataFrame.from_records(records)
    for col in df.columns[(df.dtypes == "float64").to_numpy()]:
        # ints mixed with missing values became floats: past 2**53 that changes the number
        values = [r.get(col) for r in records]
        if any(isinstance(v, int) and abs(v) > 2**53 for v in values):
            df[col] = pd.Series(values, dtype=object).map(_exact)
    return df, lambda i: {"line": lines[i]}


_LONE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate (paired ones are checked too; cheap and rare)."""


def _exact(value: Any) -> Any:
    """A JSON number as text without a float's rounding (floats that are whole lose '.0')."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _csv_shape(p: Path) -> tuple[list[str], bool, array]:
    """Check every CSV row against the header: (header, rows end in one extra empty field,
    the line each row starts on). A row with another field count is an InputError."""
    lines = array("l")
    try:
        with TextIOWrapper(open_binary(p), encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            n = len(header)
            if n == 1:
                _check_delimiter(p, header[0])
            extra = 0
            start = reader.line_num + 1
            for row in reader:
                if row:
                    if len(row) != n:
                        if len(row) == n + 1 and row[-1] == "":
                            extra += 1
                        else:
                            raise _ragged(p, start, len(row), n)
                    lines.append(start)
                start = reader.line_num + 1
    except UnicodeDecodeError:
        raise InputError(UTF8_ADVICE, path=p, line=first_bad_line(p)) from None
    except csv.Error as exc:
        raise InputError(f"not a valid CSV file ({exc})", path=p, line=start) from None
    except (*DECOMPRESS_ERRORS, OSError) as exc:
        raise corrupt(p, exc) from None
    if extra and extra != len(lines):
        # some rows have a trailing comma, others not: which columns are meant is unclear
        raise InputError("some rows end with an extra empty field (a trailing comma) and "
                         "others do not; remove the trailing commas", path=p)
    return header, extra > 0, lines


def _check_delimiter(p: Path, header: str) -> None:

    kind = trec_kind(header.split())
    if kind:
        raise InputError(f"this is a TREC {kind} line, not a CSV header; use the extension "
                         f".{kind}{FORMAT_HINT}", path=p, line=1)
    for sep, name in ((";", "';'"), ("\t", "a tab"), ("|", "'|'")):
        if header.count(sep) >= 1:
            raise InputError(f"the header has one column and the delimiter looks like {name}; "
                             "save the file as comma-separated CSV (or as .tsv for "
                             "id<TAB>text files)", path=p, line=1)


def _ragged(p: Path, line: int, got: int, want: int) -> InputError:
    return InputError(f"this row has {got} fields but the header has {want}; every row needs "
                      "one field per column (quote a text that holds a comma: \"a, b\")",
                      path=p, line=line)


def _csv_locator(p: Path, n_rows: int) -> Locator:
    """Lines when no field spans lines (the common case), else rows; the file is read again
    (to count its lines) only when an error is to be reported."""
    by_line: bool | None = None

    def loc(i: int) -> dict[str, int]:
        nonlocal by_line
        if by_line is None:
            try:
                with open_binary(p) as fh:
                    n_lines = sum(b.count(b"\n") for b in iter(lambda: fh.read(1 << 20), b""))
            except OSError:
                n_lines = -1
            by_line = n_lines in (n_rows + 1, n_rows)  # header + rows, last newline optional
        return {"line": i + 2} if by_line else {"row": i + 1}
    return loc


def read_table(path: PathLike, fmt: str | None = None,
               tsv_columns: tuple[str, str] | None = None) -> tuple[pd.DataFrame, Locator]:
    """Read a CSV/JSONL/Parquet/TSV file as strings, with a locator for error messages.

    A TSV file is ``id<TAB>text`` without a header; ``tsv_columns`` names its two columns.
    """
    p = check_exists(path)
    forced = bool(fmt)
    fmt = detect_format(p, fmt)
    if fmt == "csv":
        return _read_csv(p)
    if fmt == "jsonl":
        return _read_jsonl(p)
    if fmt == "parquet":
        try:
            df = pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises many types
            raise InputError(f"not a valid Parquet file ({first_line(exc)})", path=p) from None
        if df.empty:
            raise InputError("the file has no rows", path=p)
        return df, lambda i: {"row": i + 1}
    if fmt == "tsv":
        cols = tsv_columns or ("id", "text")
        rows: list[tuple[str, str]] = []
        lines: list[int] = []
        for n, raw in text_lines(p):
            raw = raw.rstrip("\r\n")
            if not raw.strip():
                continue
            parts = raw.split("\t", 1)
            if len(parts) != 2:
                raise InputError("expected 'id<TAB>text'", path=p, line=n)
            rows.append((parts[0].strip(), parts[1]))
            lines.append(n)
        if not rows:
            raise InputError("the file has no records", path=p)
        return pd.DataFrame(rows, columns=list(cols)), lambda i: {"line": lines[i]}
    if forced:
        raise InputError(f"format '{fmt}' is not a table format here (use csv, jsonl, parquet "
                         "or tsv)", path=p)
    raise InputError("cannot tell the format from the extension (TREC, not a table format "
                     "here) nor from the content; use one of .csv .jsonl .parquet .tsv"
                     f"{FORMAT_HINT}", path=p)


def _read_csv(p: Path) -> tuple[pd.DataFrame, Locator]:
    """pandas reads the file; the row-by-row check (:func:`_csv_shape`) runs only when pandas
    fails or something looks off (a first column taken as the index, empty last cells), and
    for the line numbers of an error message."""
    try:
        df = _pandas_csv(p, trailing=False)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError,
            *DECOMPRESS_ERRORS) as exc:
        _csv_shape(p)  # raises the precise error (line, advice) when it finds one
        raise InputError(f"not a valid CSV file ({first_line(exc)})", path=p) from None
    if df.shape[1] == 1:
        _check_delimiter(p, str(df.columns[0]))
    lines: array | None = None
    if not isinstance(df.index, pd.RangeIndex) or (df.iloc[:, -1] == "").any():
        header, trailing, lines = _csv_shape(p)  # a ragged row is an error naming its line
        if trailing:
            df = _pandas_csv(p, trailing=True)
        if header and header[-1] == "" and (df.iloc[:, -1] == "").all():
            df = df.iloc[:, :-1]  # a trailing comma on the header too: no column there
    if df.empty:
        raise InputError("the file has a header but no rows", path=p)
    return _unneutralise(df), _csv_lines(p, len(df), lines)


def _unneutralise(df: pd.DataFrame) -> pd.DataFrame:
    """Take off the ``'`` a writer put before a cell a spreadsheet would run."""
    for col in df.columns:
        cells = df[col]
        if not cells.str.startswith("'").any():  # fast: most files have none
            continue
        hit = cells.str.match(_NEUTRALISED)
        if hit.any():
            df[col] = cells.where(~hit, cells.str[1:])
    return df


def _pandas_csv(p: Path, trailing: bool) -> pd.DataFrame:
    with warnings.catch_warnings():  # with `trailing`, the extra fields are known empty
        warnings.simplefilter("ignore", pd.errors.ParserWarning)
        return pd.read_csv(p, dtype=str, keep_default_na=False, na_filter=False,
                           index_col=False if trailing else None, encoding="utf-8-sig")


def _csv_lines(p: Path, n_rows: int, lines: array | None) -> Locator:
    """The line each row starts on (the file is scanned on the first error message only)."""
    known = lines

    def loc(i: int) -> dict[str, int]:
        nonlocal known
        if known is None:
            try:
                known = _csv_shape(p)[2]
            except InputError:
                known = array("l")
        if len(known) == n_rows:
            return {"line": int(known[i])}
        return _csv_locator(p, n_rows)(i)
    return loc


def require_columns(df: pd.DataFrame, cols: tuple[str, ...], path: PathLike,
                     what: str) -> None:
    """An InputError naming ``path`` and the columns of ``cols`` that ``df`` lacks, if any.

    Usage: ``require_columns(df, ("query_id", "chunk_id"), path, "runs")``
    """
    missing = [c for c in cols if c not in df.columns]
    if missing:
        have = ", ".join(map(str, df.columns)) or "(none)"
        raise InputError(f"{what} need the column(s) {', '.join(missing)}; found {have}",
                         path=path)


_LONE = re.compile("[\ud800-\udfff]")


def _only_text(series: pd.Series, col: str, path: PathLike, loc: Locator) -> None:
    """A column of Python objects (a caller's frame) holding bytes or a string with a lone
    surrogate (which no file can hold) is refused, naming the row — never judged or written
    as its ``repr``."""
    if series.dtype != object:
        return
    for i, value in enumerate(series.to_numpy()):
        if isinstance(value, (bytes, bytearray, memoryview)):
            raise InputError(f"'{col}' holds bytes ({bytes(value)[:40]!r}), not text: decode "
                             "them first, e.g. df[col].str.decode('utf-8')", path=path, **loc(i))
        if isinstance(value, str) and _LONE.search(value):
            raise InputError(f"'{col}' holds a lone surrogate ({value[:40]!r}), which is not "
                             "text any file can hold: fix the decoding (errors='replace')",
                             path=path, **loc(i))


def as_id(series: pd.Series, col: str, path: PathLike, loc: Locator) -> pd.Series:
    """Ids as strings: numbers written without '.0', empty or missing ids refused.

    Usage: ``df["query_id"] = as_id(df["query_id"], "query_id", path, loc)``
    """
    _only_text(series, col, path, loc)
    if series.dtype.kind == "f":
        bad = series.isna() | (series != np.floor(series))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"'{col}' must be an id, got {series.iloc[i]!r}", path=path, **loc(i))
        series = series.astype("int64")
    if series.dtype.kind in "iub":
        return series.astype(str)
    missing = series.isna()
    out = series.astype(object).where(~missing, "").astype(str).str.strip()
    empty = missing | (out == "")
    if empty.any():
        i = int(np.flatnonzero(empty.to_numpy())[0])
        raise InputError(f"'{col}' is empty", path=path, **loc(i))
    # one search over all ids joined by a newline (which is not an odd character) first
    if _ODD_ID.search("\n".join(out.to_list())) is not None:
        odd = out.str.contains(ODD_ID_CHARS, regex=True)
        i = int(np.flatnonzero(odd.to_numpy())[0])
        raise InputError(f"'{col}' {out.iloc[i]!r} holds a control character (tools that "
                         "read TREC files cut or split an id there): fix the id",
                         path=path, **loc(i))
    return out


ODD_ID_CHARS = "[\x00-\x08\x0e-\x1f\x7f]"
"""Characters no id may hold: controls other than whitespace (a NUL cuts an id in C tools;
whitespace is refused where it matters, when a TREC file is written)."""
_ODD_ID = re.compile(ODD_ID_CHARS)


def as_text(series: pd.Series, col: str, path: PathLike, loc: Locator) -> pd.Series:
    """A text column as strings; a missing text is an InputError naming its line or row.

    Usage: ``df["query"] = as_text(df["query"], "query", path, loc)``
    """
    _only_text(series, col, path, loc)
    missing = series.isna()
    if missing.any():
        i = int(np.flatnonzero(missing.to_numpy())[0])
        raise InputError(f"'{col}' is missing", path=path, **loc(i))
    return series.astype(str)


# --------------------------------------------------------------------------- grades

def parse_grades(raw: pd.Series, path: PathLike, loc: Locator, grade_map: GradeMap = None,
                 column: str = "grade", allow_missing: bool = False,
                 any_grade: bool = False) -> pd.Series:
    """Validate grades: integers 0–3 after ``grade_map``; anything else names the line.

    ``grade_map`` maps a raw grade (as text, e.g. ``"-1"`` or ``"4"``) to a grade 0–3.
    With ``allow_missing`` an empty grade becomes ``<NA>`` (a failed label). With
    ``any_grade`` (grades for scoring, as trec_eval) any integer is a grade.
    """
    ints = raw.dtype.kind == "i" or (raw.dtype.kind == "u" and raw.dtype.itemsize < 8)
    if ints and not grade_map and (allow_missing or not raw.isna().any()):
        values = raw.astype("Int64")  # integers already: only the range is left to check
    else:
        values = _grades_of_text(raw, path, loc, grade_map, column, allow_missing, any_grade)
    out_of_range = values.notna() & ~values.isin(GRADES) & (not any_grade)
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range.to_numpy())[0])
        hint = (" (negative grades need an explicit mapping, e.g. `grade_map` -1=0)"
                if int(values.iloc[i]) < 0 else
                " (map it explicitly, e.g. `grade_map` 4=3, if your scale is larger)")
        raise InputError(f"{column} must be an integer 0-3, got {int(values.iloc[i])}{hint}",
                         path=path, **loc(i))
    return values if allow_missing else values.astype("int64")


def _grades_of_text(raw: pd.Series, path: PathLike, loc: Locator, grade_map: GradeMap,
                    column: str, allow_missing: bool, any_grade: bool) -> pd.Series:
    """Grades written as text (or floats, or mixed): integers as ``Int64``, empty as NA."""
    scale = "an integer" if any_grade else "an integer 0-3"
    text = raw.astype(object).where(raw.notna(), "").astype(str).str.strip()
    text = text.str.replace(r"\.0+$", "", regex=True)  # 2.0 -> 2 (Parquet floats)
    if grade_map:
        mapping = {str(k).strip(): int(v) for k, v in grade_map.items()}
        bad_target = [] if any_grade else [v for v in mapping.values() if v not in GRADES]
        if bad_target:
            raise InputError(f"the grade map sends grades to {bad_target[0]}, outside 0-3",
                             path=path)
        text = text.map(lambda s: str(mapping[s]) if s in mapping else s)
    empty = text == ""
    is_int = text.str.fullmatch(r"[+-]?\d+")
    bad = ~is_int & ~(empty & allow_missing)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        shown = raw.iloc[i]
        raise InputError(f"{column} must be {scale}, got {shown!r}", path=path, **loc(i))
    return pd.to_numeric(text.where(~empty, None), errors="coerce").astype("Int64")


def parse_grade_map(spec: str | Mapping[str, int] | None) -> dict[str, int] | None:
    """``"-1=0,4=3"`` (or a dict) → ``{"-1": 0, "4": 3}``; ``None`` stays ``None``."""
    if spec is None or spec == "":
        return None
    if isinstance(spec, Mapping):
        return {str(k): int(v) for k, v in spec.items()}
    out: dict[str, int] = {}
    for part in str(spec).split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not INT_RE.match(value):
            raise InputError(f"bad grade map entry '{part}': use FROM=TO, e.g. -1=0,4=3")
        out[key.strip()] = int(value)
    return out


