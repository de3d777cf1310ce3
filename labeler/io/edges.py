"""The edges of every stage: a DataFrame, a path, records or a dict in; one validated frame out.

Each stage converts its inputs once, here, and works on typed frames afterwards: ids are
strings, grades nullable integers, statuses ``ok``/``failed``. Errors name the file and the
line, or the caller's row (1-based) for a DataFrame.

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
                            QUERY_COLUMNS, QUERY_ID, STATUS, STATUS_FAILED, STATUS_OK, SYSTEM)
from labeler.io._base import GradeMap, Locator, _as_id, _as_text, parse_grades
from labeler.io.convert import is_irds, is_path, is_records, is_scores_dict, ranx_kind, table_of
from labeler.io import readers as files
from labeler.io.readers import _check_consistent, _rows, as_qrels, as_run, conform

__all__ = ["as_corpus", "as_labels", "as_pairs", "as_qrels", "as_queries", "as_runs",
           "chunk_texts", "read_corpus", "read_labels", "read_pairs", "read_queries",
           "read_runs"]

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
        return files.read_pairs(obj, fmt)
    if is_irds(obj):
        from labeler.io import irds

        return irds.pairs(irds.dataset(obj))
    df, name = _frame(obj, "pairs", PAIR_COLUMNS, "pairs")
    if df.empty:
        raise InputError("there are no pairs", path=name)
    for col in KEYS:
        df[col] = _as_id(df[col], col, name, _rows)
    for col in (QUERY, CHUNK):
        df[col] = _as_text(df[col], col, name, _rows)
    for id_col, text_col in ((QUERY_ID, QUERY), (CHUNK_ID, CHUNK)):
        _check_consistent(df, id_col, text_col, name, _rows)
    return df.drop_duplicates(list(KEYS)).reset_index(drop=True)


def _texts(obj: Any, cols: tuple[str, ...], what: str, reader: Any,
           fmt: str | None = None) -> pd.DataFrame:
    if is_path(obj):
        return reader(obj, fmt)
    if is_irds(obj):
        from labeler.io import irds

        ds = irds.dataset(obj)
        return irds.queries(ds) if what == "queries" else irds.corpus(ds)
    df, name = _frame(obj, what, cols, what)
    df[cols[0]] = _as_id(df[cols[0]], cols[0], name, _rows)
    df[cols[1]] = _as_text(df[cols[1]], cols[1], name, _rows)
    _check_consistent(df, cols[0], cols[1], name, _rows)
    return df.drop_duplicates(cols[0]).reset_index(drop=True)


def as_queries(obj: Any, *, fmt: str | None = None) -> pd.DataFrame:
    """Queries (``query_id, query``; extra columns such as ``description`` kept) from a path,
    a DataFrame, records or ``{query_id: text}``; ``fmt`` forces a file's format.

    Usage: ``io.as_queries({"q1": "what is bm25"})``
    """
    return _texts(obj, QUERY_COLUMNS, "queries", files.read_queries, fmt)


def as_corpus(obj: Any, *, fmt: str | None = None) -> pd.DataFrame:
    """The corpus (``chunk_id, chunk``) from a path, a DataFrame, records or ``{id: text}``;
    ``fmt`` forces a file's format.

    Usage: ``io.as_corpus("corpus.jsonl")``
    """
    return _texts(obj, CORPUS_COLUMNS, "corpus", files.read_corpus, fmt)


def as_labels(obj: Any, grade_map: GradeMap = None, *, fmt: str | None = None,
              any_grade: bool = False) -> pd.DataFrame:
    """Label records (at least ``query_id, chunk_id, grade, status``) from a path (records or
    any qrels form), a DataFrame or records; a table without ``status`` is all ``ok``.
    ``fmt`` forces a file's format.

    Usage: ``io.as_labels(result.records)``
    """
    if is_path(obj):
        df = files.read_labels(obj, fmt, grade_map=grade_map, any_grade=any_grade)
        df.attrs["path"] = str(obj)
        return df
    if is_irds(obj):
        obj = as_qrels(obj, grade_map, any_grade=any_grade)
    df, name = _frame(obj, "labels", (QUERY_ID, CHUNK_ID, "grade"), "label records")
    loc: Locator = _rows
    for col in KEYS:
        df[col] = _as_id(df[col], col, name, loc)
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


def as_runs(obj: Any) -> pd.DataFrame:
    """Runs (``query_id, chunk_id, score, system``) from a path, paths (``NAME=PATH``,
    ``irds:<id>``), a DataFrame, a list of DataFrames or of ranx ``Run``s, ``{name: run}``
    (any run :func:`as_run` takes: path, DataFrame, records, ``{qid: {docid: score}}``, ranx
    Run) or one run of any of those kinds. Two runs with the same name are an error.

    Usage: ``io.as_runs({"bm25": "bm25.run", "dense": dense_df})``
    """
    if isinstance(obj, Mapping) and obj and not is_scores_dict(obj):
        frames = [as_run(v).assign(**{SYSTEM: str(name)}) for name, v in obj.items()]
        return pd.concat(frames, ignore_index=True)
    if isinstance(obj, (list, tuple)) and obj and not is_records(obj) and all(
            isinstance(r, pd.DataFrame) or ranx_kind(r) == "run" for r in obj):
        frames = [as_run(r, system=f"run{i + 1}") for i, r in enumerate(obj)]
        _distinct([t for f in frames for t in f[SYSTEM].unique()])
        return pd.concat(frames, ignore_index=True)
    if isinstance(obj, (list, tuple)) and not is_records(obj):
        return files.read_runs(list(obj))
    return as_run(obj)


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


def _distinct(tags: list[str]) -> None:
    seen: set[str] = set()
    for tag in tags:
        if tag in seen:
            raise InputError(f"two runs are named {tag!r}; give each run a distinct name "
                             "(a 'system' column, or pass {name: run})")
        seen.add(tag)



# ------------------------------------------------------------------- the public readers

def read_pairs(path: Any, fmt: str | None = None) -> pd.DataFrame:
    """Pairs to label: ``query_id, query, chunk_id, chunk`` (extra columns kept), from a file
    (:func:`labeler.io.readers.read_pairs`) or anything :func:`as_pairs` takes.

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


def read_runs(paths: Any, fmt: str | None = None) -> pd.DataFrame:
    """Several runs as one DataFrame: paths, ``"NAME=PATH"`` or ``(NAME, PATH)`` (PATH may be
    ``irds:<id>``; :func:`labeler.io.readers.read_runs`), or anything :func:`as_runs` takes
    (``{name: run}``, ranx Runs ...).

    Usage: ``io.read_runs(["bm25=bm25.run", "dense.run"])``
    """
    if isinstance(paths, (list, tuple)) and all(
            is_path(p) or is_irds(p) or (isinstance(p, tuple) and not hasattr(p, "_fields"))
            for p in paths):
        return files.read_runs(paths, fmt)
    return as_runs(paths)
