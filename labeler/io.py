"""Read and write pairs, queries, corpus, qrels, runs and label records as DataFrames.

Every reader validates once, at the edge, and raises :class:`~labeler.errors.InputError`
naming the file and the line (or row) at fault. Ids are always strings. Every writer is
atomic: it writes a temporary file beside the target and renames it into place.

Usage::

    from labeler import io
    qrels = io.read_qrels("tests/data/dl19.qrels")        # query_id, chunk_id, grade
    run = io.read_run("tests/data/runs/bm25.run")          # query_id, chunk_id, score, system
    io.write_qrels(qrels, "out/labels.qrels")
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError
from .schema import CORPUS_COLUMNS, GRADES, LABEL_COLUMNS, PAIR_COLUMNS, QUERY_COLUMNS

PathLike = str | os.PathLike[str]
GradeMap = Mapping[str, int] | None

TABLE_FORMATS = ("csv", "jsonl", "parquet", "tsv")
_EXT_FORMATS = {
    ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
    ".parquet": "parquet", ".pq": "parquet", ".tsv": "tsv",
    ".qrels": "trec", ".run": "trec", ".trec": "trec", ".txt": "trec",
}
_INT_RE = re.compile(r"^\s*[+-]?\d+\s*$")

Locator = Callable[[int], dict[str, int]]
"""Maps a 0-based DataFrame position to ``{"line": n}`` or ``{"row": n}`` for error messages."""


# --------------------------------------------------------------------------- formats

def detect_format(path: PathLike, fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, else from its extension (``.gz`` ignored)."""
    if fmt:
        fmt = fmt.lower()
        if fmt in ("qrels", "run"):
            fmt = "trec"
        if fmt not in (*TABLE_FORMATS, "trec"):
            raise InputError(f"unknown format '{fmt}' (use csv, jsonl, parquet, tsv or trec)",
                             path=path)
        return fmt
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zst"):
        suffixes = suffixes[:-1]
    ext = suffixes[-1] if suffixes else ""
    if ext not in _EXT_FORMATS:
        raise InputError(
            f"cannot tell the format from the extension '{ext or '(none)'}'; use one of "
            ".csv .jsonl .parquet .tsv .qrels .run .trec, or pass --format", path=path)
    return _EXT_FORMATS[ext]


def _check_exists(path: PathLike) -> Path:
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
    with _open_text(p) as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg})", path=p, line=n) from None
            if not isinstance(obj, dict):
                raise InputError("each line must be a JSON object", path=p, line=n)
            records.append(obj)
            lines.append(n)
    if not records:
        raise InputError("the file has no records", path=p)
    df = pd.DataFrame.from_records(records)
    return df, lambda i: {"line": lines[i]}


def _open_text(p: Path) -> Any:
    suffix = p.suffix.lower()
    if suffix == ".gz":
        import gzip
        return gzip.open(p, "rt", encoding="utf-8")
    return open(p, encoding="utf-8")


def _csv_locator(p: Path, n_rows: int) -> Locator:
    # Lines are exact when no field spans lines (the common case); else fall back to rows.
    try:
        with open(p, "rb") as fh:
            n_lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        n_lines = -1
    if n_lines in (n_rows + 1, n_rows):  # header + rows, last newline optional
        return lambda i: {"line": i + 2}
    return lambda i: {"row": i + 1}


def read_table(path: PathLike, fmt: str | None = None,
               tsv_columns: tuple[str, str] | None = None) -> tuple[pd.DataFrame, Locator]:
    """Read a CSV/JSONL/Parquet/TSV file as strings, with a locator for error messages.

    A TSV file is ``id<TAB>text`` without a header; ``tsv_columns`` names its two columns.
    """
    p = _check_exists(path)
    fmt = detect_format(p, fmt)
    if fmt == "csv":
        try:
            df = pd.read_csv(p, dtype=str, keep_default_na=False, na_filter=False)
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"not a valid CSV file ({_first_line(exc)})", path=p) from None
        if df.empty:
            raise InputError("the file has a header but no rows", path=p)
        return df, _csv_locator(p, len(df))
    if fmt == "jsonl":
        return _read_jsonl(p)
    if fmt == "parquet":
        try:
            df = pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises many types
            raise InputError(f"not a valid Parquet file ({_first_line(exc)})", path=p) from None
        if df.empty:
            raise InputError("the file has no rows", path=p)
        return df, lambda i: {"row": i + 1}
    if fmt == "tsv":
        cols = tsv_columns or ("id", "text")
        rows: list[tuple[str, str]] = []
        lines: list[int] = []
        with _open_text(p) as fh:
            for n, raw in enumerate(fh, start=1):
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
    raise InputError(f"format '{fmt}' is not a table format here", path=p)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _require_columns(df: pd.DataFrame, cols: tuple[str, ...], path: PathLike,
                     what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        have = ", ".join(map(str, df.columns)) or "(none)"
        raise InputError(f"{what} need the column(s) {', '.join(missing)}; found {have}",
                         path=path)


def _as_id(series: pd.Series, col: str, path: PathLike, loc: Locator) -> pd.Series:
    """Ids as strings: numbers written without '.0', empty or missing ids refused."""
    if series.dtype.kind == "f":
        bad = series.isna() | (series != np.floor(series))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"'{col}' must be an id, got {series.iloc[i]!r}", path=path, **loc(i))
        series = series.astype("int64")
    if series.dtype.kind in "iub":
        return series.astype(str)
    out = series.astype(object)
    empty = out.isna() | (out.astype(str).str.strip() == "")
    if empty.any():
        i = int(np.flatnonzero(empty.to_numpy())[0])
        raise InputError(f"'{col}' is empty", path=path, **loc(i))
    return out.astype(str).str.strip()


def _as_text(series: pd.Series, col: str, path: PathLike, loc: Locator) -> pd.Series:
    missing = series.isna()
    if missing.any():
        i = int(np.flatnonzero(missing.to_numpy())[0])
        raise InputError(f"'{col}' is missing", path=path, **loc(i))
    return series.astype(str)


# --------------------------------------------------------------------------- grades

def parse_grades(raw: pd.Series, path: PathLike, loc: Locator, grade_map: GradeMap = None,
                 column: str = "grade", allow_missing: bool = False) -> pd.Series:
    """Validate grades: integers 0–3 after ``grade_map``; anything else names the line.

    ``grade_map`` maps a raw grade (as text, e.g. ``"-1"`` or ``"4"``) to a grade 0–3.
    With ``allow_missing`` an empty grade becomes ``<NA>`` (a failed label).
    """
    text = raw.astype(object).where(raw.notna(), "").astype(str).str.strip()
    text = text.str.replace(r"\.0+$", "", regex=True)  # 2.0 -> 2 (Parquet floats)
    if grade_map:
        mapping = {str(k).strip(): int(v) for k, v in grade_map.items()}
        bad_target = [v for v in mapping.values() if v not in GRADES]
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
        raise InputError(f"{column} must be an integer 0-3, got {shown!r}", path=path, **loc(i))
    values = pd.to_numeric(text.where(~empty, None), errors="coerce").astype("Int64")
    out_of_range = values.notna() & ~values.isin(GRADES)
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range.to_numpy())[0])
        hint = (" (negative grades need an explicit mapping, e.g. --grade-map -1=0)"
                if int(values.iloc[i]) < 0 else
                " (map it explicitly, e.g. --grade-map 4=3, if your scale is larger)")
        raise InputError(f"{column} must be an integer 0-3, got {int(values.iloc[i])}{hint}",
                         path=path, **loc(i))
    return values if allow_missing else values.astype("int64")


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
        if not sep or not _INT_RE.match(value):
            raise InputError(f"bad grade map entry '{part}': use FROM=TO, e.g. -1=0,4=3")
        out[key.strip()] = int(value)
    return out


# --------------------------------------------------------------------------- TREC

def _trec_locate_bad(p: Path, n_fields: int, what: str, check: Callable[[list[str]], str | None]
                     ) -> InputError:
    """Slow path: find the first malformed TREC line and describe it."""
    with _open_text(p) as fh:
        for n, raw in enumerate(fh, start=1):
            parts = raw.split()
            if not parts:
                continue
            if len(parts) != n_fields:
                return InputError(
                    f"a TREC {what} line has {n_fields} fields, this one has {len(parts)}: "
                    f"{raw.strip()[:80]!r}", path=p, line=n)
            problem = check(parts)
            if problem:
                return InputError(problem, path=p, line=n)
    return InputError(f"not a valid TREC {what} file", path=p)


def _trec_lines(p: Path) -> Locator:
    """Locator for a whitespace TREC file read with blank lines skipped."""
    line_of: list[int] | None = None

    def loc(i: int) -> dict[str, int]:
        nonlocal line_of
        if line_of is None:
            with _open_text(p) as fh:
                line_of = [n for n, raw in enumerate(fh, start=1) if raw.strip()]
        return {"line": line_of[i]}
    return loc


def _read_trec(p: Path, names: list[str], usecols: list[int], what: str,
               check: Callable[[list[str]], str | None]) -> pd.DataFrame:
    try:
        df = pd.read_csv(p, sep=r"\s+", header=None, names=names, usecols=usecols,
                         dtype=str, engine="c", keep_default_na=False, na_filter=True,
                         skip_blank_lines=True, quoting=3)
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError):
        raise _trec_locate_bad(p, len(names), what, check) from None
    if df.empty:
        raise InputError("the file has no records", path=p)
    if df.isna().to_numpy().any():
        raise _trec_locate_bad(p, len(names), what, check)
    return df


def _read_trec_fast(p: Path, names: list[str], keep: list[str], numeric: dict[str, str],
                    categorical: tuple[str, ...] = ()) -> pd.DataFrame | None:
    """The common case of :func:`_read_trec`, fast: fields split by single spaces, read by
    pyarrow's CSV reader (``numeric`` columns parsed as ``"float"``/``"int"``, the
    ``categorical`` ones kept as pandas categoricals); ``None`` whenever the file is anything
    else (tabs, runs of blanks, bad numbers, compression ...), so that the general reader
    decides and names the line."""
    if p.suffix.lower() in (".gz", ".bz2", ".xz", ".zst"):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    from ._arrow import plain_fields

    types = {n: pa.large_string() if n in keep and n not in categorical
             else pa.dictionary(pa.int32(), pa.large_string()) for n in names}
    types.update({n: pa.float64() if kind == "float" else pa.int64()
                  for n, kind in numeric.items()})
    try:
        table = pcsv.read_csv(
            p, read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False,
                                            escape_char=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(column_types=types, null_values=[],
                                                strings_can_be_null=False))
    except (pa.ArrowException, UnicodeDecodeError, OSError):
        return None
    if table.num_rows == 0:
        return None
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


def _may_repeat(df: pd.DataFrame, group_cols: list[str], id_col: str) -> bool:
    """Cheap pre-test for a repeated (group..., id) row: ``False`` only when none repeats for
    sure (64-bit keys of the ids); ``True`` means "run the exact check"."""
    import pyarrow as pa

    from ._arrow import arrow_strings, encode, may_repeat
    try:
        codes = np.zeros(len(df), dtype=np.int64)
        for col in group_cols:
            col_codes, values = encode(arrow_strings(df[col]))
            codes = codes * len(values) + col_codes
        return may_repeat(arrow_strings(df[id_col]), codes)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return True


def _qrels_check(parts: list[str]) -> str | None:
    if not _INT_RE.match(parts[3]):
        return f"grade must be an integer 0-3, got {parts[3]!r}"
    return None


def _run_check(parts: list[str]) -> str | None:
    try:
        value = float(parts[4])
    except ValueError:
        value = float("nan")
    if value != value:   # not a number, or "nan"
        return f"score must be a number, got {parts[4]!r}"
    return None


# --------------------------------------------------------------------------- readers

def read_pairs(path: PathLike, fmt: str | None = None) -> pd.DataFrame:
    """Pairs to label: ``query_id, query, chunk_id, chunk`` (extra columns kept).

    A repeated (query_id, chunk_id) with the same texts is kept once; a query id or a
    chunk id given two different texts is an error naming both lines.
    """
    df, loc = read_table(path, fmt)
    _require_columns(df, PAIR_COLUMNS, path, "pairs")
    df = df.copy()
    for col in ("query_id", "chunk_id"):
        df[col] = _as_id(df[col], col, path, loc)
    for col in ("query", "chunk"):
        df[col] = _as_text(df[col], col, path, loc)
    for id_col, text_col in (("query_id", "query"), ("chunk_id", "chunk")):
        _check_consistent(df, id_col, text_col, path, loc)
    dup = df.duplicated(["query_id", "chunk_id"], keep="first")
    if dup.any():
        df = df.loc[~dup]
    return df.reset_index(drop=True)


def _check_consistent(df: pd.DataFrame, id_col: str, text_col: str, path: PathLike,
                      loc: Locator) -> None:
    first = df.groupby(id_col, sort=False)[text_col].transform("first")
    differs = (df[text_col] != first).to_numpy()
    if differs.any():
        i = int(np.flatnonzero(differs)[0])
        key = df[id_col].iloc[i]
        j = int(np.flatnonzero((df[id_col] == key).to_numpy())[0])
        where_j = ", ".join(f"{k} {v}" for k, v in loc(j).items())
        raise InputError(f"{id_col} {key!r} has a different {text_col} here than at {where_j}",
                         path=path, **loc(i))


def read_queries(path: PathLike, fmt: str | None = None) -> pd.DataFrame:
    """Queries: ``query_id, query`` (TSV ``id<TAB>text`` accepted)."""
    return _read_texts(path, fmt, QUERY_COLUMNS, "queries")


def read_corpus(path: PathLike, fmt: str | None = None) -> pd.DataFrame:
    """Corpus: ``chunk_id, chunk`` (TSV ``id<TAB>text`` accepted; ``docid/doc`` and
    ``id/text`` column names are understood)."""
    return _read_texts(path, fmt, CORPUS_COLUMNS, "corpus")


_ALIASES = {
    "query_id": ("qid", "id", "_id", "query-id"),
    "query": ("text", "query_text"),
    "chunk_id": ("docid", "doc_id", "pid", "id", "_id", "corpus-id"),
    "chunk": ("doc", "text", "passage", "contents", "body"),
}


def _read_texts(path: PathLike, fmt: str | None, cols: tuple[str, ...],
                what: str) -> pd.DataFrame:
    df, loc = read_table(path, fmt, tsv_columns=(cols[0], cols[1]))
    rename = {}
    for col in cols:
        if col not in df.columns:
            for alias in _ALIASES[col]:
                if alias in df.columns and alias not in rename:
                    rename[alias] = col
                    break
    df = df.rename(columns=rename)
    _require_columns(df, cols, path, what)
    df = df.copy()
    df[cols[0]] = _as_id(df[cols[0]], cols[0], path, loc)
    df[cols[1]] = _as_text(df[cols[1]], cols[1], path, loc)
    _check_consistent(df, cols[0], cols[1], path, loc)
    return df.drop_duplicates(cols[0]).reset_index(drop=True)


def read_qrels(path: PathLike, fmt: str | None = None, grade_map: GradeMap = None
               ) -> pd.DataFrame:
    """Qrels: ``query_id, chunk_id, grade`` (int 0–3) from TREC ``qid 0 docid rel`` or a table.

    Label records are accepted too: failed rows (no grade) are left out.
    A (query, chunk) judged twice with different grades is an error.
    """
    p = _check_exists(path)
    kind = detect_format(p, fmt)
    if kind == "trec":
        fast = (_read_trec_fast(p, ["query_id", "iter", "chunk_id", "grade"],
                                ["query_id", "chunk_id", "grade"], {"grade": "int"})
                if not grade_map else None)
        if fast is not None and fast["grade"].isin(GRADES).all():
            if _may_repeat(fast, ["query_id"], "chunk_id"):
                return _dedupe_judgements(fast, p, _trec_lines(p))
            return fast
        df = _read_trec(p, ["query_id", "iter", "chunk_id", "grade"], [0, 2, 3], "qrels",
                        _qrels_check)
        loc = _trec_lines(p)
    else:
        df, loc = read_table(p, kind)
        if "grade" not in df.columns:
            for alias in ("relevance", "rel", "label", "score"):
                if alias in df.columns:
                    df = df.rename(columns={alias: "grade"})
                    break
        _require_columns(df, ("query_id", "chunk_id", "grade"), p, "qrels")
        if "status" in df.columns:  # label records: keep judged rows only
            keep = (df["status"].astype(str) == "ok").to_numpy()
            positions = np.flatnonzero(keep)
            df = df.loc[keep].reset_index(drop=True)
            inner = loc
            loc = lambda i: inner(int(positions[i]))  # noqa: E731
            if df.empty:
                raise InputError("no label record has status 'ok'", path=p)
    out = pd.DataFrame({
        "query_id": _as_id(df["query_id"], "query_id", p, loc),
        "chunk_id": _as_id(df["chunk_id"], "chunk_id", p, loc),
        "grade": parse_grades(df["grade"], p, loc, grade_map),
    })
    return _dedupe_judgements(out, p, loc)


def _dedupe_judgements(df: pd.DataFrame, path: PathLike, loc: Locator) -> pd.DataFrame:
    dup = df.duplicated(["query_id", "chunk_id"], keep=False)
    if dup.any():
        first_grade = df.groupby(["query_id", "chunk_id"], sort=False)["grade"].transform("first")
        conflict = (dup & (df["grade"] != first_grade)).to_numpy()
        if conflict.any():
            i = int(np.flatnonzero(conflict)[0])
            q, c = df["query_id"].iloc[i], df["chunk_id"].iloc[i]
            raise InputError(f"query {q!r}, chunk {c!r} is judged twice with different grades",
                             path=path, **loc(i))
        df = df.drop_duplicates(["query_id", "chunk_id"])
    return df.reset_index(drop=True)


def read_run(path: PathLike, fmt: str | None = None) -> pd.DataFrame:
    """A ranking: ``query_id, chunk_id, score, system`` (float scores, string system).

    From TREC ``qid Q0 docid rank score tag`` (the tag of the first line names the run) or a
    table with ``score`` or ``rank`` (score = −rank) and an optional ``system`` column; without
    one, the run is named after the file's stem. The same chunk twice in one query is an error.
    """
    p = _check_exists(path)
    kind = detect_format(p, fmt)
    if kind == "trec":
        names = ["query_id", "q0", "chunk_id", "rank", "score", "system"]
        df = _read_trec_fast(p, names, ["query_id", "chunk_id", "score", "system"],
                             {"score": "float", "rank": "int"}, categorical=("system",))
        if df is None:
            df = _read_trec(p, names, [0, 2, 4, 5], "run", _run_check)
        loc = _trec_lines(p)
        scores = pd.to_numeric(df["score"], errors="coerce")
        if scores.isna().any():
            raise _trec_locate_bad(p, 6, "run", _run_check)
        tag = str(df["system"].iloc[0])
        out = pd.DataFrame({"query_id": df["query_id"], "chunk_id": df["chunk_id"],
                            "score": scores.astype("float64"), "system": tag})
    else:
        df, loc = read_table(p, kind)
        _require_columns(df, ("query_id", "chunk_id"), p, "runs")
        if "score" in df.columns:
            scores = pd.to_numeric(df["score"], errors="coerce")
            what = "score"
        elif "rank" in df.columns:
            scores = -pd.to_numeric(df["rank"], errors="coerce")
            what = "rank"
        else:
            raise InputError("runs need a 'score' or a 'rank' column", path=p)
        if scores.isna().any():
            i = int(np.flatnonzero(scores.isna().to_numpy())[0])
            raise InputError(f"{what} must be a number, got {df[what].iloc[i]!r}", path=p,
                             **loc(i))
        system = (df["system"].astype(str) if "system" in df.columns
                  else pd.Series(run_stem(p), index=df.index))
        out = pd.DataFrame({
            "query_id": _as_id(df["query_id"], "query_id", p, loc),
            "chunk_id": _as_id(df["chunk_id"], "chunk_id", p, loc),
            "score": scores.astype("float64"), "system": system,
        })
    if not _may_repeat(out, ["query_id"] if kind == "trec" else ["system", "query_id"],
                       "chunk_id"):   # (a TREC run has one tag)
        return out
    dup = out.duplicated(["system", "query_id", "chunk_id"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"chunk {out['chunk_id'].iloc[i]!r} is ranked twice for query "
                         f"{out['query_id'].iloc[i]!r}", path=p, **loc(i))
    return out


def run_stem(path: PathLike) -> str:
    """A run's name from its file: ``runs/bm25.run.gz`` → ``bm25``."""
    name = Path(path).name
    for suffix in (".gz", ".bz2", ".xz", ".zst"):
        name = name.removesuffix(suffix)
    return name.rsplit(".", 1)[0] if "." in name else name


def read_runs(paths: list[PathLike] | tuple[PathLike, ...], fmt: str | None = None
              ) -> pd.DataFrame:
    """Several run files as one DataFrame; two runs with the same tag are an error."""
    frames = []
    seen: dict[str, PathLike] = {}
    for path in paths:
        df = read_run(path, fmt)
        for tag in df["system"].unique():
            if tag in seen:
                raise InputError(f"run tag {tag!r} is used by {seen[tag]} too; give each run "
                                 "a distinct tag", path=path)
            seen[tag] = path
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def read_labels(path: PathLike, fmt: str | None = None, grade_map: GradeMap = None
                ) -> pd.DataFrame:
    """Label records (SPEC §2). A plain qrels file is accepted: every row becomes ``ok``."""
    p = _check_exists(path)
    kind = detect_format(p, fmt)
    if kind == "trec":
        q = read_qrels(p, kind, grade_map)
        q["grade"] = q["grade"].astype("Int64")
        q["status"] = "ok"
        return q
    df, loc = read_table(p, kind)
    _require_columns(df, ("query_id", "chunk_id", "grade"), p, "label records")
    df = df.copy()
    df["query_id"] = _as_id(df["query_id"], "query_id", p, loc)
    df["chunk_id"] = _as_id(df["chunk_id"], "chunk_id", p, loc)
    if "status" not in df.columns:
        df["status"] = "ok"
    df["status"] = df["status"].astype(str)
    bad_status = ~df["status"].isin(["ok", "failed"])
    if bad_status.any():
        i = int(np.flatnonzero(bad_status.to_numpy())[0])
        raise InputError(f"status must be 'ok' or 'failed', got {df['status'].iloc[i]!r}",
                         path=p, **loc(i))
    df["grade"] = parse_grades(df["grade"], p, loc, grade_map, allow_missing=True)
    missing = (df["status"] == "ok") & df["grade"].isna()
    if missing.any():
        i = int(np.flatnonzero(missing.to_numpy())[0])
        raise InputError("a label with status 'ok' has no grade", path=p, **loc(i))
    return df


# --------------------------------------------------------------------------- writers

@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place only on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are shared files
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(text: str, path: PathLike) -> Path:
    """Write text atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
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
    kind = detect_format(path, fmt)
    with atomic_path(path) as tmp:
        if kind == "csv":
            df.to_csv(tmp, index=False)
        elif kind == "jsonl":
            df.to_json(tmp, orient="records", lines=True, force_ascii=False)
        elif kind == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            raise InputError(f"cannot write a table as '{kind}'", path=path)
    return Path(path)


def write_qrels(df: pd.DataFrame, path: PathLike, fmt: str | None = None) -> Path:
    """Write ``query_id, chunk_id, grade`` as TREC qrels (``.qrels``/``.trec``/``.txt``) or a
    table; rows without a grade (failed labels) are not written to qrels."""
    judged = df.loc[df["grade"].notna(), ["query_id", "chunk_id", "grade"]]
    kind = detect_format(path, fmt)
    if kind != "trec":
        out = judged.copy()
        out["grade"] = out["grade"].astype("int64")
        return write_table(out, path, kind)
    grades = judged["grade"].astype("int64").astype(str)
    lines = judged["query_id"].astype(str) + " 0 " + judged["chunk_id"].astype(str) + " " + grades
    return write_text("\n".join(lines.tolist()) + ("\n" if len(lines) else ""), path)


def write_run(df: pd.DataFrame, path: PathLike, fmt: str | None = None) -> Path:
    """Write a run as TREC (``qid Q0 docid rank score tag``, ranks by trec_eval's order) or a
    table."""
    kind = detect_format(path, fmt)
    if kind != "trec":
        return write_table(df, path, kind)
    ordered = df.sort_values(["system", "query_id", "score", "chunk_id"],
                             ascending=[True, True, False, False])
    rank = ordered.groupby(["system", "query_id"], sort=False).cumcount() + 1
    lines = (ordered["query_id"].astype(str) + " Q0 " + ordered["chunk_id"].astype(str) + " "
             + rank.astype(str) + " " + ordered["score"].map(repr) + " "
             + ordered["system"].astype(str))
    return write_text("\n".join(lines.tolist()) + "\n", path)


def write_labels(df: pd.DataFrame, path: PathLike, fmt: str | None = None) -> Path:
    """Write label records (SPEC §2 columns first) as JSONL/CSV/Parquet, or TREC qrels."""
    kind = detect_format(path, fmt)
    if kind == "trec":
        return write_qrels(df, path, kind)
    cols = [c for c in LABEL_COLUMNS if c in df.columns]
    cols += [c for c in df.columns if c not in cols]
    out = df[cols].copy()
    if "grade" in out.columns:
        out["grade"] = out["grade"].astype("Int64")
    return write_table(out, path, kind)


# --------------------------------------------------------------------------- edges

def as_qrels(obj: Any, grade_map: GradeMap = None) -> pd.DataFrame:
    """A qrels DataFrame from a path, a DataFrame or ``{qid: {docid: grade}}``."""
    if isinstance(obj, (str, os.PathLike)):
        return read_qrels(obj, grade_map=grade_map)
    if isinstance(obj, Mapping):
        rows = [(str(q), str(d), g) for q, docs in obj.items() for d, g in docs.items()]
        obj = pd.DataFrame(rows, columns=["query_id", "chunk_id", "grade"])
    if isinstance(obj, pd.DataFrame):
        _require_columns(obj, ("query_id", "chunk_id", "grade"), "<DataFrame>", "qrels")
        loc: Locator = lambda i: {"row": i + 1}  # noqa: E731
        src = obj.reset_index(drop=True)
        if "status" in src.columns:
            src = src.loc[src["status"].astype(str) == "ok"].reset_index(drop=True)
        out = pd.DataFrame({
            "query_id": _as_id(src["query_id"], "query_id", "<DataFrame>", loc),
            "chunk_id": _as_id(src["chunk_id"], "chunk_id", "<DataFrame>", loc),
            "grade": parse_grades(src["grade"], "<DataFrame>", loc, grade_map),
        })
        return _dedupe_judgements(out, "<DataFrame>", loc)
    raise TypeError(f"qrels must be a path, a DataFrame or a dict, not {type(obj).__name__}")


def as_run(obj: Any, system: str = "run") -> pd.DataFrame:
    """A run DataFrame from a path, a list of paths, a DataFrame or ``{qid: {docid: score}}``."""
    if isinstance(obj, (str, os.PathLike)):
        return read_run(obj)
    if isinstance(obj, (list, tuple)) and obj and isinstance(obj[0], (str, os.PathLike)):
        return read_runs(list(obj))
    if isinstance(obj, Mapping):
        rows = [(str(q), str(d), float(s)) for q, docs in obj.items() for d, s in docs.items()]
        obj = pd.DataFrame(rows, columns=["query_id", "chunk_id", "score"])
    if isinstance(obj, pd.DataFrame):
        _require_columns(obj, ("query_id", "chunk_id"), "<DataFrame>", "runs")
        src = obj.reset_index(drop=True)
        loc: Locator = lambda i: {"row": i + 1}  # noqa: E731
        if "score" in src.columns:
            score = pd.to_numeric(src["score"], errors="coerce").astype("float64")
        elif "rank" in src.columns:
            score = -pd.to_numeric(src["rank"], errors="coerce").astype("float64")
        else:
            raise InputError("runs need a 'score' or a 'rank' column", path="<DataFrame>")
        if score.isna().any():
            i = int(np.flatnonzero(score.isna().to_numpy())[0])
            raise InputError("score must be a number", path="<DataFrame>", row=i + 1)
        out = pd.DataFrame({
            "query_id": _as_id(src["query_id"], "query_id", "<DataFrame>", loc),
            "chunk_id": _as_id(src["chunk_id"], "chunk_id", "<DataFrame>", loc),
            "score": score,
            "system": src["system"].astype(str) if "system" in src.columns else system,
        })
        dup = out.duplicated(["system", "query_id", "chunk_id"])
        if dup.any():
            i = int(np.flatnonzero(dup.to_numpy())[0])
            raise InputError(f"chunk {out['chunk_id'].iloc[i]!r} is ranked twice for query "
                             f"{out['query_id'].iloc[i]!r}", path="<DataFrame>", row=i + 1)
        return out
    raise TypeError(f"a run must be a path, a DataFrame or a dict, not {type(obj).__name__}")
