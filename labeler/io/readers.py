"""Readers for pairs, queries, corpus, qrels, runs and label records, and the edges that
accept a DataFrame, a path or a dict."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labeler.errors import InputError
from labeler.schema import (CORPUS_COLUMNS, GRADES, PAIR_COLUMNS, QRELS_COLUMNS, QUERY_COLUMNS,
                            STATUS, STATUSES, STATUS_OK)
from labeler.io._base import (COMPRESSED, GradeMap, Locator, PathLike, _as_id, _as_text,
                              _check_exists, _require_columns, detect_format, parse_grades,
                              read_table)
from labeler.io.convert import is_irds, is_path, table_of
from labeler.io.lines import _run_check, sniff_trec
from labeler.io.trec import _may_repeat, _read_trec, _read_trec_fast, _trec_lines, _trec_locate_bad

# --------------------------------------------------------------------------- readers

def read_pairs(path: Any, fmt: str | None = None) -> pd.DataFrame:
    """Pairs to label: ``query_id, query, chunk_id, chunk`` (extra columns kept).

    A repeated (query_id, chunk_id) with the same texts is kept once; a query id or a
    chunk id given two different texts is an error naming both lines. Not a path: see
    :func:`labeler.io.as_pairs` (``irds:<id>``, a DataFrame, records).
    """
    df, loc = read_table(path, fmt)
    df = conform(df, "pairs", PAIR_COLUMNS, path, "pairs").copy()
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


def read_queries(path: Any, fmt: str | None = None) -> pd.DataFrame:
    """Queries: ``query_id, query`` (TSV ``id<TAB>text`` accepted); ``irds:<id>``, a
    DataFrame, records or ``{id: text}`` too (:func:`labeler.io.as_queries`)."""
    return _read_texts(path, fmt, QUERY_COLUMNS, "queries")


def read_corpus(path: Any, fmt: str | None = None) -> pd.DataFrame:
    """Corpus: ``chunk_id, chunk`` (TSV ``id<TAB>text`` accepted; ``docid/doc`` and
    ``id/text`` column names are understood); ``irds:<id>`` (every document: stages fetch
    only the ones they need), a DataFrame, records or ``{id: text}`` too."""
    return _read_texts(path, fmt, CORPUS_COLUMNS, "corpus")


_ID_ALIASES = {   # ir_measures, PyTerrier, ir_datasets, BEIR, pyserini
    "query_id": ("qid", "query-id", "topic_id", "topic"),
    "chunk_id": ("doc_id", "docid", "docno", "pid", "passage_id", "corpus-id"),
}
_ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "queries": {"query_id": (*_ID_ALIASES["query_id"], "id", "_id"),
                "query": ("text", "query_text", "title")},
    "corpus": {"chunk_id": (*_ID_ALIASES["chunk_id"], "id", "_id"),
               "chunk": ("doc", "text", "passage", "contents", "body")},
    "pairs": {**_ID_ALIASES, "query": ("query_text",),
              "chunk": ("doc", "text", "passage", "contents", "body")},
    "qrels": {**_ID_ALIASES, "grade": ("relevance", "rel", "label", "judgement", "score")},
    "labels": {**_ID_ALIASES, "grade": ("relevance", "rel", "label")},
    "run": {**_ID_ALIASES, "system": ("run_id", "runid", "run", "tag", "name")},
}


def rename_aliases(df: pd.DataFrame, kind: str, mapping: Mapping[str, str] | None = None,
                   path: PathLike = "<DataFrame>") -> pd.DataFrame:
    """``df`` with its columns renamed to ours: first ``mapping`` (``{their name: ours}``,
    as ranx's ``from_df``), then, for each of our columns still missing, the first known
    alias present (ir_measures ``query_id, doc_id, relevance``; PyTerrier ``qid, docno,
    label``; ...). ``kind``: pairs, queries, corpus, qrels, labels or run.

    Usage: ``rename_aliases(df, "qrels", {"q": "query_id"})``
    """
    if mapping:
        unknown = [c for c in mapping if c not in df.columns]
        if unknown:
            have = ", ".join(map(str, df.columns)) or "(none)"
            raise InputError(f"the column mapping names {', '.join(map(repr, unknown))}, "
                             f"which the table does not have; found {have}", path=path)
        df = df.rename(columns=dict(mapping))
    rename: dict[str, str] = {}
    for col, aliases in _ALIASES[kind].items():
        if col in df.columns or col in rename.values():
            continue
        for alias in aliases:
            if alias in df.columns and alias not in rename:
                rename[alias] = col
                break
    return df.rename(columns=rename) if rename else df


def conform(df: pd.DataFrame, kind: str, cols: Sequence[str], path: PathLike, what: str,
            mapping: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``df`` renamed to our columns (:func:`rename_aliases`), checked to hold ``cols``; a
    missing column is an InputError naming the columns as the caller wrote them and the
    names that would have been understood.

    Usage: ``df = conform(raw, "qrels", QRELS_COLUMNS, path, "qrels")``
    """
    given = [str(c) for c in df.columns]
    twice = sorted({c for c in given if given.count(c) > 1})
    if twice:
        raise InputError(f"the column {twice[0]!r} appears twice: rename or drop one", path=path)
    grade = _ALIASES.get(kind, {}).get("grade", ())
    if "grade" not in given and not (mapping and "grade" in mapping.values()):
        both = [a for a in grade if a in given]
        if len(both) > 1:  # which one is the grade? never picked silently
            raise InputError(f"both {both[0]!r} and {both[1]!r} could be the grade: rename "
                             "the one that is to 'grade' (or drop the other)", path=path)
    out = rename_aliases(df, kind, mapping, path=path)
    missing = [c for c in cols if c not in out.columns]
    if missing:
        known = _ALIASES.get(kind, {})
        wants = "; ".join(f"{c}" + (f" (or {', '.join(known[c])})" if known.get(c) else "")
                          for c in missing)
        hint = " (or map yours: `columns`)" if kind in ("qrels", "run") else ""
        raise InputError(f"{what} need the column(s) {wants}; found "
                         f"{', '.join(given) or '(none)'}{hint}", path=path)
    return out


def _read_texts(path: PathLike, fmt: str | None, cols: tuple[str, ...],
                what: str) -> pd.DataFrame:
    df, loc = read_table(path, fmt, tsv_columns=(cols[0], cols[1]))
    df = conform(df, what, cols, path, what).copy()
    df[cols[0]] = _as_id(df[cols[0]], cols[0], path, loc)
    df[cols[1]] = _as_text(df[cols[1]], cols[1], path, loc)
    _check_consistent(df, cols[0], cols[1], path, loc)
    return df.drop_duplicates(cols[0]).reset_index(drop=True)


def read_qrels(path: Any, fmt: str | None = None, grade_map: GradeMap = None,
               *, any_grade: bool = False, columns: Mapping[str, str] | None = None
               ) -> pd.DataFrame:
    """Qrels: ``query_id, chunk_id, grade`` (int 0–3) from TREC ``qid 0 docid rel`` or a table.

    Label records are accepted too: failed rows (no grade) are left out.
    A (query, chunk) judged twice with different grades is an error. ``any_grade``: any
    integer is a grade (for scoring, as trec_eval). ``columns`` maps a table's own column
    names to ours (``{"docno": "chunk_id"}``); ir_measures' and PyTerrier's names are known.
    Not a path: ``irds:<id>`` and anything :func:`as_qrels` takes.
    """
    if not is_path(path):
        return as_qrels(path, grade_map, any_grade=any_grade, columns=columns)
    p = _check_exists(path)
    kind = _trec_if_it_looks_so(p, detect_format(p, fmt), fmt)
    if kind == "trec":
        fast = (_read_trec_fast(p, ["query_id", "iter", "chunk_id", "grade"],
                                ["query_id", "chunk_id", "grade"], {"grade": "int"})
                if not grade_map else None)
        if fast is not None and (any_grade or fast["grade"].isin(GRADES).all()):
            if _may_repeat(fast, ["query_id"], "chunk_id"):
                return _dedupe_judgements(fast, p, _trec_lines(p))
            return fast
        df, loc = _read_trec(p, ["query_id", "iter", "chunk_id", "grade"], [0, 2, 3],
                             "qrels")
    else:
        df, loc = read_table(p, kind)
        df = conform(df, "qrels", QRELS_COLUMNS, p, "qrels", columns)
        out = _qrels_of_table(df, p, loc, grade_map, any_grade)
        if out.empty:
            raise InputError("no label record has status 'ok'", path=p)
        return out
    out = pd.DataFrame({
        "query_id": _as_id(df["query_id"], "query_id", p, loc),
        "chunk_id": _as_id(df["chunk_id"], "chunk_id", p, loc),
        "grade": parse_grades(df["grade"], p, loc, grade_map, any_grade=any_grade),
    })
    return _dedupe_judgements(out, p, loc)


def _qrels_of_table(df: pd.DataFrame, path: PathLike, loc: Locator, grade_map: GradeMap,
                    any_grade: bool = False) -> pd.DataFrame:
    """Qrels from a table's ``query_id, chunk_id, grade`` (label records: ``ok`` rows only)."""
    _require_columns(df, QRELS_COLUMNS, path, "qrels")
    if "status" in df.columns:  # label records: keep judged rows only
        positions = np.flatnonzero((df[STATUS].astype(str) == STATUS_OK).to_numpy())
        df = df.iloc[positions].reset_index(drop=True)
        inner = loc
        loc = lambda i: inner(int(positions[i]))  # noqa: E731
    out = pd.DataFrame({
        "query_id": _as_id(df["query_id"], "query_id", path, loc),
        "chunk_id": _as_id(df["chunk_id"], "chunk_id", path, loc),
        "grade": parse_grades(df["grade"], path, loc, grade_map, any_grade=any_grade),
    })
    return _dedupe_judgements(out, path, loc)


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


def read_run(path: Any, fmt: str | None = None, *, name: str | None = None,
             columns: Mapping[str, str] | None = None) -> pd.DataFrame:
    """A ranking: ``query_id, chunk_id, score, system`` (float scores, string system).

    From TREC ``qid Q0 docid rank score tag`` (the tag of the first line names the run; fields
    after it are ignored) or a table with ``score`` or ``rank`` (score = −rank) and an optional
    ``system`` column; without one, the run is named after the file's stem. ``name`` names
    the run whatever the file says. The same chunk twice in one query is an error. Not a
    path: ``irds:<id>`` (its scored documents) and anything :func:`as_run` takes.
    """
    if not is_path(path):
        run = as_run(path, columns=columns)
        return run.assign(system=name) if name is not None else run
    p = _check_exists(path)
    kind = _trec_if_it_looks_so(p, detect_format(p, fmt), fmt)
    if kind == "trec":
        names = ["query_id", "q0", "chunk_id", "rank", "score", "system"]
        df = _read_trec_fast(p, names, ["query_id", "chunk_id", "score", "system"],
                             {"score": "float", "rank": "int"}, categorical=("system",))
        if df is None:
            df, loc = _read_trec(p, names, [0, 2, 4, 5], "run")
        else:
            loc = _trec_lines(p)
        scores = pd.to_numeric(df["score"], errors="coerce")
        if scores.isna().any():
            raise _trec_locate_bad(p, 6, "run", _run_check)
        tag = name if name is not None else str(df["system"].iloc[0])
        out = pd.DataFrame({"query_id": df["query_id"], "chunk_id": df["chunk_id"],
                            "score": scores.astype("float64"), "system": tag})
    else:
        df, loc = read_table(p, kind)
        df = conform(df, "run", ("query_id", "chunk_id"), p, "runs", columns)
        if name is not None:
            df = df.assign(system=name)
        return _run_of_table(df, p, loc, run_stem(p))
    _check_ranked_once(out, p, loc, one_system=True)
    return out


def _run_of_table(df: pd.DataFrame, path: PathLike, loc: Locator, system: str
                  ) -> pd.DataFrame:
    """A run from a table's ``query_id, chunk_id, score`` (or ``rank``) and optional
    ``system`` (else every row is ``system``)."""
    _require_columns(df, ("query_id", "chunk_id"), path, "runs")
    if "score" in df.columns:
        scores = pd.to_numeric(df["score"], errors="coerce")
        what = "score"
    elif "rank" in df.columns:
        scores = -pd.to_numeric(df["rank"], errors="coerce")
        what = "rank"
    else:
        raise InputError("runs need a 'score' or a 'rank' column", path=path)
    if scores.isna().any():
        i = int(np.flatnonzero(scores.isna().to_numpy())[0])
        raise InputError(f"{what} must be a number, got {df[what].iloc[i]!r}", path=path,
                         **loc(i))
    if "system" in df.columns and df["system"].isna().any():  # never the run "None"
        i = int(np.flatnonzero(df["system"].isna().to_numpy())[0])
        raise InputError("'system' is empty", path=path, **loc(i))
    out = pd.DataFrame({
        "query_id": _as_id(df["query_id"], "query_id", path, loc),
        "chunk_id": _as_id(df["chunk_id"], "chunk_id", path, loc),
        "score": scores.astype("float64"),
        "system": (df["system"].astype(str) if "system" in df.columns
                   else pd.Series(system, index=df.index)),
    })
    _check_ranked_once(out, path, loc, one_system="system" not in df.columns)
    return out


def _check_ranked_once(run: pd.DataFrame, path: PathLike, loc: Locator,
                       one_system: bool) -> None:
    """The same chunk twice for one (system, query) is an error naming its line or row."""
    if not _may_repeat(run, ["query_id"] if one_system else ["system", "query_id"],
                       "chunk_id"):
        return
    dup = run.duplicated(["system", "query_id", "chunk_id"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"chunk {run['chunk_id'].iloc[i]!r} is ranked twice for query "
                         f"{run['query_id'].iloc[i]!r}", path=path, **loc(i))


def _trec_if_it_looks_so(p: Path, kind: str, fmt: str | None) -> str:
    """A ``.tsv`` file (not forced) whose lines are TREC qrels or run lines is read as TREC
    (MS MARCO's qrels are ``qid<TAB>0<TAB>pid<TAB>rel``)."""
    if kind == "tsv" and not fmt and sniff_trec(p):
        return "trec"
    return kind


def run_stem(path: PathLike) -> str:
    """A run's name from its file: ``runs/bm25.run.gz`` → ``bm25``."""
    name = Path(path).name
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix)
    return name.rsplit(".", 1)[0] if "." in name else name


RunSpec = PathLike | tuple[str | None, PathLike]
"""A run argument: a path, ``"NAME=PATH"`` or ``(NAME, PATH)``."""


def parse_named(spec: RunSpec, what: str = "run", *, base: PathLike | None = None
                ) -> tuple[str | None, PathLike]:
    """``"bm25=runs/a.run"`` → ``("bm25", "runs/a.run")``; a plain path → ``(None, path)``:
    the one parser of every ``[NAME=]PATH`` argument (runs, judges' label sets, config runs).

    A text holding ``=`` is a path when a file of that name exists (relative to ``base`` when
    given), or when what precedes the ``=`` holds a path separator and what follows is no
    file; an empty NAME is an error that names ``what``. PATH may be ``irds:<id>``.

    Usage: ``name, path = parse_named("gpt=labels/gpt.jsonl", "label set")``
    """
    if isinstance(spec, tuple):
        return spec[0], spec[1]
    text = os.fspath(spec)
    if (isinstance(spec, Path) or "=" not in text
            or (Path(base) / text if base is not None else Path(text)).exists()):
        return None, spec
    name, _, path = text.partition("=")
    target = Path(base) / path if base is not None else Path(path)
    if ("/" in name or "\\" in name or os.sep in name) and not (
            path.startswith("irds:") or target.exists()):
        return None, spec
    if not name.strip() or not path:
        raise InputError(f"cannot read the {what} {text!r}: write NAME=PATH, e.g. "
                         f"{'bm25=runs/bm25.run' if what == 'run' else 'gpt=labels.jsonl'}")
    return name.strip(), path


def parse_run_arg(spec: RunSpec) -> tuple[str | None, PathLike]:
    """``"bm25=runs/a.run"`` → ``("bm25", "runs/a.run")``; a plain path → ``(None, path)``
    (:func:`parse_named` for a run).

    Usage: ``name, path = parse_run_arg("dense=out/dense.trec")``
    """
    return parse_named(spec, "run")


def read_runs(paths: Sequence[RunSpec], fmt: str | None = None
              ) -> pd.DataFrame:
    """Several run files as one DataFrame; each is a path, ``"NAME=PATH"`` or
    ``(NAME, PATH)`` (the name wins over the file's tag), PATH may be ``irds:<id>``. Two runs
    with the same name are an error that suggests NAME=PATH. Anything else
    :func:`labeler.io.as_runs` takes (``{name: run}``, ranx Runs ...) goes there."""
    frames = []
    seen: dict[str, PathLike] = {}
    for spec in paths:
        name, path = parse_run_arg(spec)
        df = read_run(path, fmt, name=name)
        for tag in df["system"].unique():
            if tag in seen:
                raise InputError(f"run name {tag!r} is used by {seen[tag]} too; name each run "
                                 f"as NAME=PATH, e.g. other={path}", path=path)
            seen[tag] = path
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def read_labels(path: Any, fmt: str | None = None, grade_map: GradeMap = None,
                *, any_grade: bool = False) -> pd.DataFrame:
    """Label records. A plain qrels file is accepted: every row becomes ``ok``.
    ``any_grade``: any integer is a grade (label sets used for scoring), not only 0-3.
    Not a path: anything :func:`labeler.io.as_labels` takes."""
    p = _check_exists(path)
    kind = detect_format(p, fmt)
    if kind == "trec":
        q = read_qrels(p, kind, grade_map, any_grade=any_grade)
        q["grade"] = q["grade"].astype("Int64")
        q[STATUS] = STATUS_OK
        return q
    df, loc = read_table(p, kind)
    df = conform(df, "labels", ("query_id", "chunk_id", "grade"), p, "label records").copy()
    df["query_id"] = _as_id(df["query_id"], "query_id", p, loc)
    df["chunk_id"] = _as_id(df["chunk_id"], "chunk_id", p, loc)
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


# --------------------------------------------------------------------------- edges

def _rows(i: int) -> dict[str, int]:
    """Locator of a DataFrame given by the caller: 1-based rows."""
    return {"row": i + 1}


def as_qrels(obj: Any, grade_map: GradeMap = None, *, any_grade: bool = False,
             columns: Mapping[str, str] | None = None, fmt: str | None = None
             ) -> pd.DataFrame:
    """A qrels DataFrame from a path, ``irds:<id>`` or an ir_datasets dataset, a DataFrame
    (ir_measures, PyTerrier ... column names), records (ir_measures ``Qrel``, ir_datasets'
    qrels), ``{qid: {docid: grade}}`` (pytrec_eval) or a ranx ``Qrels``.

    ``columns`` maps a DataFrame's own column names to ours, as ranx's ``from_df``:
    ``as_qrels(df, columns={"q": "query_id", "doc": "chunk_id", "rel": "grade"})``.
    ``fmt`` forces a file's format (``"trec"``, ``"csv"`` ...).
    """
    if is_path(obj):
        return read_qrels(obj, fmt, grade_map=grade_map, any_grade=any_grade, columns=columns)
    if is_irds(obj):
        from labeler.io import irds

        ds = irds.dataset(obj)
        df, name = irds.qrels(ds), irds.name_of(ds)
    else:
        df, name = table_of(obj, "qrels")
    df = conform(df, "qrels", QRELS_COLUMNS, name, "qrels", columns)
    return _qrels_of_table(df, name, _rows, grade_map, any_grade)


def as_run(obj: Any, system: str = "run", *, columns: Mapping[str, str] | None = None
           ) -> pd.DataFrame:
    """A run DataFrame from a path, ``NAME=PATH``, a list of those, ``irds:<id>`` or a
    dataset (its scored documents), a DataFrame (ir_measures, PyTerrier ... column names),
    records (ir_measures ``ScoredDoc``), ``{qid: {docid: score}}`` (pytrec_eval) or a ranx
    ``Run`` (named by its name). ``columns`` maps a DataFrame's own column names to ours."""
    if is_path(obj):
        name, path = parse_run_arg(obj)
        return read_run(path, name=name, columns=columns)
    if is_irds(obj):
        from labeler.io import irds

        ds = irds.dataset(obj)
        return _run_of_table(irds.run(ds), irds.name_of(ds), _rows, system)
    if (isinstance(obj, (list, tuple)) and obj and isinstance(obj[0], (str, os.PathLike, tuple))
            and not hasattr(obj[0], "_fields")):
        return read_runs(list(obj))
    df, name = table_of(obj, "run")
    df = conform(df, "run", ("query_id", "chunk_id"), name, "runs", columns)
    return _run_of_table(df, name, _rows, system)
