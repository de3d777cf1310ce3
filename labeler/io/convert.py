"""The field's objects in and out: what a caller hands a stage, as a raw table; results back
as ir_measures, pytrec_eval, ranx and PyTerrier objects.

In: a DataFrame (any column convention :func:`~labeler.io.readers.rename_aliases` knows), a
list or iterator of records (dicts, or namedtuples such as ir_measures' ``Qrel``/``ScoredDoc``
and ir_datasets' query, doc and qrel tuples), a pytrec_eval dict ``{qid: {docno: value}}``,
``{id: text}`` (queries, corpus), a ranx ``Qrels``/``Run`` (recognised by its type; ranx is
never imported to read one). ``irds:<id>`` strings and ir_datasets dataset objects are
:mod:`labeler.io.irds`'s. Out: :func:`to_ir_measures`, :func:`to_pytrec_eval`,
:func:`to_ranx`, :func:`to_pyterrier` of a qrels, label-records or run frame.

Usage::

    from labeler.io.convert import table_of, to_ranx
    df, name = table_of([Qrel("q1", "d1", 2)], "qrels")      # columns query_id, doc_id, ...
    to_ranx(io.read_qrels("human.qrels"))                       # a ranx.Qrels
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from labeler.errors import ConfigError
from labeler.schema import CHUNK_ID, GRADE, QUERY_ID, SCORE, STATUS, STATUS_OK, SYSTEM

__all__ = ["IRDS_PREFIX", "is_irds", "is_path", "is_records", "is_scores_dict",
           "ranx_kind", "table_of", "to_ir_measures", "to_pyterrier", "to_pytrec_eval",
           "to_ranx"]

IRDS_PREFIX = "irds:"
_VALUE = {"qrels": GRADE, "labels": GRADE, "run": SCORE}
"""The column a ``{qid: {docno: value}}`` value becomes, per kind of input."""


def is_irds(obj: Any) -> bool:
    """An ``irds:<id>`` text or path, an ir_datasets dataset, or a PyTerrier dataset backed
    by one."""
    if isinstance(obj, (str, os.PathLike)):
        return os.fspath(obj).startswith(IRDS_PREFIX)
    module = type(obj).__module__ or ""
    if module.startswith("ir_datasets"):
        return any(hasattr(obj, a) for a in ("queries_iter", "docs_iter", "qrels_iter",
                                             "scoreddocs_iter"))
    return module.startswith("pyterrier") and callable(getattr(obj, "irds_ref", None))


def is_path(obj: Any) -> bool:
    """A file path (``str`` or ``os.PathLike``), not an ``irds:`` id."""
    return isinstance(obj, (str, os.PathLike)) and not is_irds(obj)


def ranx_kind(obj: Any) -> str | None:
    """``"qrels"`` or ``"run"`` for a ranx ``Qrels``/``Run`` (by its type's name and module:
    ranx is not imported), else None."""
    kind = type(obj)
    if (kind.__module__ or "").startswith("ranx") and kind.__name__ in ("Qrels", "Run"):
        return kind.__name__.lower()
    return None


def is_scores_dict(obj: Any) -> bool:
    """A pytrec_eval dict: ``{qid: {docno: number}}`` (not ``{name: {qid: {...}}}``)."""
    if not isinstance(obj, Mapping) or not obj:
        return False
    for inner in obj.values():
        if not isinstance(inner, Mapping):
            return False
        if any(isinstance(v, Mapping) for v in inner.values()):
            return False
    return True


def is_records(obj: Any) -> bool:
    """A list, tuple or iterator of records (dicts or namedtuples), not a text or a table."""
    if isinstance(obj, (str, bytes, os.PathLike, Mapping, pd.DataFrame, pd.Series)):
        return False
    if isinstance(obj, (list, tuple)):
        return bool(obj) and all(_is_record(r) for r in obj[:1])
    return isinstance(obj, Iterable)


def _is_record(item: Any) -> bool:
    return isinstance(item, Mapping) or hasattr(item, "_asdict")


def table_of(obj: Any, kind: str) -> tuple[pd.DataFrame, str]:
    """A caller's object as a table with the caller's own column names, and a name for
    messages. ``kind``: pairs, queries, corpus, qrels, labels or run. A DataFrame is copied
    (fresh index); a ranx Run's name becomes its ``system``.

    Usage: ``df, name = table_of(ranx_qrels, "qrels")``
    """
    if isinstance(obj, QrelsExport):   # a label or reconcile result: its label records
        return obj._label_records().reset_index(drop=True).copy(), f"<{type(obj).__name__}>"
    if isinstance(obj, pd.DataFrame):
        return (obj.reset_index(drop=True).copy(),
                str(obj.attrs.get("path", f"<{kind} DataFrame>")))
    ranx = ranx_kind(obj)
    if ranx is not None:
        df = _nested(obj.to_dict(), _VALUE.get(kind, GRADE if ranx == "qrels" else SCORE))
        name = getattr(obj, "name", None)
        if ranx == "run" and name:
            df[SYSTEM] = str(name)
        return df, f"<ranx {type(obj).__name__}>"
    if isinstance(obj, Mapping):
        if is_scores_dict(obj) and kind in _VALUE:
            return _nested(obj, _VALUE[kind]), f"<{kind} dict>"
        if kind in ("queries", "corpus") and not any(isinstance(v, Mapping)
                                                    for v in obj.values()):
            cols = ("query_id", "query") if kind == "queries" else ("chunk_id", "chunk")
            return (pd.DataFrame({cols[0]: [str(k) for k in obj],
                                  cols[1]: [v if v is None else str(v) for v in obj.values()]}),
                    f"<{kind} dict>")
        raise TypeError(f"{kind}: cannot read a dict of this shape; give {_SHAPES[kind]}")
    if is_records(obj):
        rows = list(obj)
        if rows and not all(_is_record(r) for r in rows):
            bad = next(r for r in rows if not _is_record(r))
            raise TypeError(f"{kind}: a list of records holds a {type(bad).__name__}; give "
                            f"{_SHAPES[kind]}")
        first = rows[0] if rows else None
        records = [r._asdict() for r in rows] if hasattr(first, "_asdict") else rows
        what = type(first).__name__ if first is not None and not isinstance(first, Mapping) \
            else "records"
        return pd.DataFrame.from_records(records), f"<{kind} {what}>"
    raise TypeError(f"{kind} must be {_SHAPES[kind]}, not {type(obj).__name__}")


_SHAPES = {
    "pairs": "a path, a DataFrame or records",
    "queries": "a path, irds:<id>, a DataFrame, records or {query_id: text}",
    "corpus": "a path, irds:<id>, a DataFrame, records or {chunk_id: text}",
    "qrels": "a path, irds:<id>, a DataFrame, records (e.g. ir_measures Qrel), "
             "{qid: {docno: grade}} or a ranx Qrels",
    "labels": "a path, a DataFrame, records or {qid: {docno: grade}}",
    "run": "a path, a DataFrame, records (e.g. ir_measures ScoredDoc), {qid: {docno: score}} "
           "or a ranx Run",
}


def _nested(obj: Mapping[Any, Mapping[Any, Any]], value: str) -> pd.DataFrame:
    rows = [(str(q), str(d), v) for q, docs in obj.items() for d, v in docs.items()]
    return pd.DataFrame(rows, columns=[QUERY_ID, CHUNK_ID, value])


# --------------------------------------------------------------------------- out

def _judged(frame: pd.DataFrame) -> pd.DataFrame:
    """Qrels rows of a qrels or label-records frame: judged (``ok``) rows, int grades."""
    if STATUS in frame.columns:
        frame = frame.loc[frame[STATUS] == STATUS_OK]
    if GRADE not in frame.columns:
        raise ConfigError("expected qrels or label records (a 'grade' column)")
    return pd.DataFrame({QUERY_ID: frame[QUERY_ID].astype(str).to_numpy(),
                         CHUNK_ID: frame[CHUNK_ID].astype(str).to_numpy(),
                         GRADE: frame[GRADE].astype("int64").to_numpy()})


def _is_run(frame: pd.DataFrame) -> bool:
    return SCORE in frame.columns and GRADE not in frame.columns


def to_ir_measures(frame: pd.DataFrame) -> pd.DataFrame:
    """Qrels or label records as ir_measures reads qrels (``query_id, doc_id, relevance``;
    failed labels left out), a run as ``query_id, doc_id, score`` (one system).

    Usage: ``ir_measures.calc_aggregate([nDCG@10], to_ir_measures(llm), run)``
    """
    if _is_run(frame):
        _one_system(frame, "ir_measures")
        return pd.DataFrame({"query_id": frame[QUERY_ID].astype(str).to_numpy(),
                             "doc_id": frame[CHUNK_ID].astype(str).to_numpy(),
                             "score": frame[SCORE].astype("float64").to_numpy()})
    q = _judged(frame)
    return pd.DataFrame({"query_id": q[QUERY_ID], "doc_id": q[CHUNK_ID],
                         "relevance": q[GRADE]})


def to_pytrec_eval(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``{qid: {docno: grade}}`` of qrels or label records (``ok`` only), or
    ``{qid: {docno: score}}`` of a one-system run: what pytrec_eval evaluates.

    Usage: ``pytrec_eval.RelevanceEvaluator(to_pytrec_eval(llm), {"ndcg_cut.10"})``
    """
    cast: type[float] | type[int]
    if _is_run(frame):
        _one_system(frame, "pytrec_eval")
        keys, value, cast = frame, SCORE, float
    else:
        keys, value, cast = _judged(frame), GRADE, int
    out: dict[str, dict[str, Any]] = {}
    for q, d, v in zip(keys[QUERY_ID].astype(str), keys[CHUNK_ID].astype(str),
                       keys[value].to_numpy()):
        out.setdefault(q, {})[d] = cast(v)
    return out


def to_ranx(frame: pd.DataFrame) -> Any:
    """A ranx ``Qrels`` of qrels or label records (``ok`` only; grades of 0 kept, as ranx
    keeps them), or a ranx ``Run`` of a run (``{system: Run}`` when it holds several).

    Usage: ``ranx.compare(to_ranx(llm), runs=list(to_ranx(runs).values()), metrics="ndcg@10")``
    """
    import ranx

    if not _is_run(frame):
        return ranx.Qrels.from_dict(to_pytrec_eval(frame))
    systems = frame[SYSTEM].astype(str) if SYSTEM in frame.columns else pd.Series(
        "run", index=frame.index)
    runs = {}
    for name in pd.unique(systems):
        one = frame.loc[systems == name]
        runs[str(name)] = ranx.Run.from_dict(to_pytrec_eval(one.drop(columns=[SYSTEM],
                                                                     errors="ignore")),
                                             name=str(name))
    return runs[next(iter(runs))] if len(runs) == 1 else runs


def to_pyterrier(frame: pd.DataFrame) -> pd.DataFrame:
    """Qrels or label records as PyTerrier's qrels (``qid, docno, label``; ``ok`` only), or a
    run as its result frame (``qid, docno, score, rank``, plus ``name`` when it holds several
    systems; ranks from 0, score descending then docno descending, as trec_eval).

    Usage: ``pt.Experiment([bm25], topics, to_pyterrier(llm), ["nDCG@10"])``
    """
    if not _is_run(frame):
        q = _judged(frame)
        return pd.DataFrame({"qid": q[QUERY_ID], "docno": q[CHUNK_ID], "label": q[GRADE]})
    out = pd.DataFrame({"qid": frame[QUERY_ID].astype(str).to_numpy(),
                        "docno": frame[CHUNK_ID].astype(str).to_numpy(),
                        "score": frame[SCORE].astype("float64").to_numpy()})
    group = ["qid"]
    if SYSTEM in frame.columns and frame[SYSTEM].nunique() > 1:
        out.insert(0, "name", frame[SYSTEM].astype(str).to_numpy())
        group = ["name", "qid"]
    out = out.sort_values([*group, "score", "docno"],
                          ascending=[True] * len(group) + [False, False], kind="stable")
    out["rank"] = out.groupby(group, sort=False).cumcount().astype(np.int64)
    return out.reset_index(drop=True)


def _one_system(frame: pd.DataFrame, tool: str) -> None:
    if SYSTEM in frame.columns and frame[SYSTEM].nunique() > 1:
        raise ConfigError(f"the run holds {frame[SYSTEM].nunique()} systems; {tool} takes one "
                          "run at a time: select one (run[run.system == NAME])")


class QrelsExport:
    """``to_ir_measures()``, ``to_pytrec_eval()``, ``to_ranx()``, ``to_pyterrier()`` of the
    label records a result holds (judged pairs only), for a result class to inherit.

    Usage: ``labeler.label(pairs, model="lexical").to_pyterrier()``
    """

    def _label_records(self) -> pd.DataFrame:
        raise NotImplementedError

    def to_ir_measures(self) -> pd.DataFrame:
        """The judged labels as ir_measures qrels (``query_id, doc_id, relevance``)."""
        return to_ir_measures(self._label_records())

    def to_pytrec_eval(self) -> dict[str, dict[str, Any]]:
        """The judged labels as ``{qid: {docno: grade}}``."""
        return to_pytrec_eval(self._label_records())

    def to_ranx(self) -> Any:
        """The judged labels as a ranx ``Qrels`` (needs ranx)."""
        return to_ranx(self._label_records())

    def to_pyterrier(self) -> pd.DataFrame:
        """The judged labels as PyTerrier qrels (``qid, docno, label``)."""
        return to_pyterrier(self._label_records())
