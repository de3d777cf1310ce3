"""Pairs, queries, corpus and label records from every form: a file, ``irds:<id>``, a
DataFrame, records or a dict in; one validated frame out (qrels and runs:
:mod:`labeler.io.readers`).

Each stage converts its inputs once, here, and works on typed frames afterwards: ids are
strings, grades nullable integers, statuses ``ok``/``failed``. Errors name the file and the
line, or the caller's row (1-based) for a DataFrame. ``read_pairs`` and ``as_pairs`` (and so
on) are the same door: the files are read by this module's private readers.

Usage::

    from labeler import io
    pairs = io.as_pairs([{"query_id": 1, "query": "q", "chunk_id": "d1", "chunk": "text"}])
    runs = io.as_runs({"bm25": "bm25.run", "dense": dense_df})     # named runs
    labels = io.as_labels("labels.jsonl")                          # records or any qrels
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from labeler.errors import InputError
from labeler.schema import (CHUNK, CHUNK_ID, CORPUS_COLUMNS, KEYS, PAIR_COLUMNS, QUERY,
                            QUERY_COLUMNS, QUERY_ID, STATUS, STATUS_FAILED, STATUS_OK, STATUSES)
from labeler.io._base import (GradeMap, Locator, PathLike, as_id, as_text, check_exists,
                              detect_format, frame_rows, parse_grades, read_table)
from labeler.io.convert import is_irds, is_path, table_of
from labeler.io.readers import as_qrels, conform, read_qrels

__all__ = ["as_corpus", "as_labels", "as_pairs", "as_queries", "chunk_texts", "read_corpus",
           "read_labels", "read_pairs", "read_queries"]

PairsLike: TypeAlias = (str | os.PathLike[str] | pd.DataFrame | Sequence[Mapping[str, Any]]
                        | Any)
"""A path, ``irds:<id>`` or dataset (its judged pairs), a DataFrame or records."""
QrelsLike: TypeAlias = pd.DataFrame | str | os.PathLike[str] | Mapping[str, Mapping[str, int]]
"""Qrels as a stage takes them: a path, a frame, ``{qid: {docid: grade}}``."""
RunsLike: TypeAlias = (pd.DataFrame | str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
                       | Mapping[str, Mapping[str, float]])
"""Runs as a stage takes them: paths, a frame, ``{name: path}``, ``{qid: {docid: score}}``."""
QueriesLike: TypeAlias = pd.DataFrame | str | os.PathLike[str] | Mapping[str, str] | None
"""Query texts: a path, a frame, ``{qid: text}``."""


def _frame(obj: Any, kind: str, cols: tuple[str, ...], what: str) -> tuple[pd.DataFrame, str]:
    """A caller's object (DataFrame, records, namedtuples, dict, ranx object) as a frame
    with our column names, checked to hold ``cols``, and a name for messages."""
    df, name = table_of(obj, kind)
    return conform(df, kind, cols, name, what), name


def as_pairs(obj: Any, *, fmt: str | None = None) -> pd.DataFrame:
    """Pairs to judge (``query_id, query, chunk_id, chunk``, extra columns kept); ``fmt``
    forces a file's format.

    Usage: ``io.as_pairs("pairs.csv")`` or ``io.as_pairs(df)``
    """
    if is_path(obj):
        return _read_pairs_file(obj, fmt)
    if is_irds(obj):
        from labeler.io import irds

        return irds.pairs(irds.dataset(obj))
    df, name = _frame(obj, "pairs", PAIR_COLUMNS, "pairs")
    if df.empty:
        raise InputError("there are no pairs", path=name)
    for col in KEYS:
        df[col] = as_id(df[col], col, name, frame_rows)
    for col in (QUERY, CHUNK):
        df[col] = as_text(df[col], col, name, frame_rows)
    for id_col, text_col in ((QUERY_ID, QUERY), (CHUNK_ID, CHUNK)):
        _check_consistent(df, id_col, text_col, name, frame_rows)
    return df.drop_duplicates(list(KEYS)).reset_index(drop=True)


def _texts(obj: Any, cols: tuple[str, ...], what: str, fmt: str | None = None
           ) -> pd.DataFrame:
    if is_path(obj):
        return _read_texts_file(obj, fmt, cols, what)
    if is_irds(obj):
        from labeler.io import irds

        ds = irds.dataset(obj)
        return irds.queries(ds) if what == "queries" else irds.corpus(ds)
    df, name = _frame(obj, what, cols, what)
    df[cols[0]] = as_id(df[cols[0]], cols[0], name, frame_rows)
    df[cols[1]] = as_text(df[cols[1]], cols[1], name, frame_rows)
    _check_consistent(df, cols[0], cols[1], name, frame_rows)
    return df.drop_duplicates(cols[0]).reset_index(drop=True)


def as_queries(obj: Any, *, fmt: str | None = None) -> pd.DataFrame:
    """Queries (``query_id, query``; extra columns such as ``description`` kept) from a path,
    a DataFrame, records or ``{query_id: text}``; ``fmt`` forces a file's format.

    Usage: ``io.as_queries({"q1": "what is bm25"})``
    """
    return _texts(obj, QUERY_COLUMNS, "queries", fmt)


def as_corpus(obj: Any, *, fmt: str | None = None) -> pd.DataFrame:
    """The corpus (``chunk_id, chunk``) from a path, a DataFrame, records or ``{id: text}``;
    ``fmt`` forces a file's format.

    Usage: ``io.as_corpus("corpus.jsonl")``
    """
    return _texts(obj, CORPUS_COLUMNS, "corpus", fmt)


def as_labels(obj: Any, grade_map: GradeMap = None, *, fmt: str | None = None,
              any_grade: bool = False) -> pd.DataFrame:
    """Label records (at least ``query_id, chunk_id, grade, status``) from a path (records or
    any qrels form), a DataFrame or records; a table without ``status`` is all ``ok``.
    ``fmt`` forces a file's format.

    Usage: ``io.as_labels(result.records)``
    """
    if is_path(obj):
        df = _read_labels_file(obj, fmt, grade_map=grade_map, any_grade=any_grade)
        df.attrs["path"] = str(obj)
        return df
    if is_irds(obj):
        obj = as_qrels(obj, grade_map, any_grade=any_grade)
    df, name = _frame(obj, "labels", (QUERY_ID, CHUNK_ID, "grade"), "label records")
    loc: Locator = frame_rows
    for col in KEYS:
        df[col] = as_id(df[col], col, name, loc)
    df[STATUS] = df[STATUS].astype(str) if STATUS in df.columns else STATUS_OK
    df["grade"] = parse_grades(df["grade"], name, loc, grade_map, allow_missing=True,
                               any_grade=any_grade)
    bad = (~df[STATUS].isin([STATUS_OK, STATUS_FAILED])
           | ((df[STATUS] == STATUS_OK) & df["grade"].isna()))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(f"status must be '{STATUS_OK}' (with a grade) or '{STATUS_FAILED}', "
                         f"got {df[STATUS].iloc[i]!r} with grade {df['grade'].iloc[i]}",
                         path=name, row=i + 1)
    df.attrs["path"] = name
    return df


def chunk_texts(corpus: Any, ids: Any, fmt: str | None = None) -> dict[str, str]:
    """``{chunk_id: text}`` of the chunks ``ids`` that ``corpus`` holds: an ir_datasets
    corpus (``irds:<id>`` or a dataset) is asked for these documents only
    (``docs_store().get_many``); any other corpus is read whole (:func:`as_corpus`).

    Usage: ``texts = chunk_texts("irds:msmarco-passage", pooled["chunk_id"])``
    """
    if is_irds(corpus):
        from labeler.io import irds

        return irds.doc_texts(irds.dataset(corpus), ids)
    table = as_corpus(corpus, fmt=fmt)
    return dict(zip(table[CHUNK_ID].astype(str), table[CHUNK].astype(str)))


# ------------------------------------------------------------------- the readers

def read_pairs(path: Any, fmt: str | None = None) -> pd.DataFrame:
    """Pairs to label: ``query_id, query, chunk_id, chunk`` (extra columns kept), from a file
    or anything :func:`as_pairs` takes (``irds:<id>``, a DataFrame, records). A repeated
    (query_id, chunk_id) with the same texts is kept once; a query id or a chunk id given two
    different texts is an error naming both lines (or rows).

    Usage: ``io.read_pairs("pairs.jsonl")``
    """
    return as_pairs(path, fmt=fmt)


def read_queries(path: Any, fmt: str | None = None) -> pd.DataFrame:
    """Queries: ``query_id, query`` from a file (TSV ``id<TAB>text`` accepted), ``irds:<id>``,
    a DataFrame, records or ``{id: text}`` (:func:`as_queries`).

    Usage: ``io.read_queries("queries.tsv")``
    """
    return as_queries(path, fmt=fmt)


def read_corpus(path: Any, fmt: str | None = None) -> pd.DataFrame:
    """Corpus: ``chunk_id, chunk`` from a file (``docid/doc`` and ``id/text`` understood),
    ``irds:<id>`` (every document: stages fetch only the ones they need), a DataFrame,
    records or ``{id: text}`` (:func:`as_corpus`).

    Usage: ``io.read_corpus("corpus.jsonl")``
    """
    return as_corpus(path, fmt=fmt)


def read_labels(path: Any, fmt: str | None = None, grade_map: GradeMap = None,
                *, any_grade: bool = False) -> pd.DataFrame:
    """Label records from a file (a plain qrels file is all ``ok``) or anything
    :func:`as_labels` takes. ``any_grade``: any integer is a grade, not only 0-3.

    Usage: ``io.read_labels("labels.jsonl")``
    """
    return as_labels(path, grade_map, fmt=fmt, any_grade=any_grade)


# ------------------------------------------------------------------- files (private: the
# readers above are the one way in)

def _read_pairs_file(path: PathLike, fmt: str | None = None) -> pd.DataFrame:
    """Pairs from a file. A repeated (query_id, chunk_id) with the same texts is kept once;
    a query id or a chunk id given two different texts is an error naming both lines."""
    df, loc = read_table(path, fmt)
    df = conform(df, "pairs", PAIR_COLUMNS, path, "pairs").copy()
    for col in ("query_id", "chunk_id"):
        df[col] = as_id(df[col], col, path, loc)
    for col in ("query", "chunk"):
        df[col] = as_text(df[col], col, path, loc)
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


def _read_texts_file(path: PathLike, fmt: str | None, cols: tuple[str, ...],
                     what: str) -> pd.DataFrame:
    """Queries or a corpus from a file (TSV ``id<TAB>text`` accepted)."""
    df, loc = read_table(path, fmt, tsv_columns=(cols[0], cols[1]))
    df = conform(df, what, cols, path, what).copy()
    df[cols[0]] = as_id(df[cols[0]], cols[0], path, loc)
    df[cols[1]] = as_text(df[cols[1]], cols[1], path, loc)
    _check_consistent(df, cols[0], cols[1], path, loc)
    return df.drop_duplicates(cols[0]).reset_index(drop=True)


def _read_labels_file(path: PathLike, fmt: str | None = None, grade_map: GradeMap = None,
                      *, any_grade: bool = False) -> pd.DataFrame:
    """Label records from a file. A plain qrels file is accepted: every row becomes ``ok``."""
    p = check_exists(path)
    kind = detect_format(p, fmt)
    if kind == "trec":
        q = read_qrels(p, kind, grade_map, any_grade=any_grade)
        q["grade"] = q["grade"].astype("Int64")
        q[STATUS] = STATUS_OK
        return q
    df, loc = read_table(p, kind)
    df = conform(df, "labels", ("query_id", "chunk_id", "grade"), p, "label records").copy()
    df["query_id"] = as_id(df["query_id"], "query_id", p, loc)
    df["chunk_id"] = as_id(df["chunk_id"], "chunk_id", p, loc)
    if "status" not in df.columns:
        df[STATUS] = STATUS_OK
    df["status"] = df["status"].astype(str)
    bad_status = ~df[STATUS].isin(STATUSES)
    if bad_status.any():
        i = int(np.flatnonzero(bad_status.to_numpy())[0])
        raise InputError(f"status must be 'ok' or 'failed', got {df['status'].iloc[i]!r}",
                         path=p, **loc(i))
    df["grade"] = parse_grades(df["grade"], p, loc, grade_map, allow_missing=True,
                               any_grade=any_grade)
    missing = (df[STATUS] == STATUS_OK) & df["grade"].isna()
    if missing.any():
        i = int(np.flatnonzero(missing.to_numpy())[0])
        raise InputError("a label with status 'ok' has no grade", path=p, **loc(i))
    return df
