"""ir_datasets as an input: ``irds:<id>`` (or a dataset object) wherever queries, documents,
qrels or runs are read.

Documents are fetched by id from the dataset's docs store (``docs_store().get_many``), so a
stage that needs a few thousand passages never exports a corpus of millions. A query's text is
its ``default_text()`` (a TREC topic's title); its ``description`` and ``narrative`` are kept
for prompts that use them. ir_datasets is imported on first use (extra ``labeler[irds]``).

Usage::

    from labeler.io import irds
    ds = irds.dataset("irds:msmarco-passage/trec-dl-2019/judged")
    queries, qrels = irds.queries(ds), irds.qrels(ds)
    texts = irds.doc_texts(ds, ["8412684", "1729"])
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd

from labeler.errors import ConfigError, InputError, LabelerError
from labeler.io.convert import IRDS_PREFIX
from labeler.schema import CHUNK, CHUNK_ID, GRADE, QUERY, QUERY_ID, SCORE, SYSTEM

__all__ = ["corpus", "dataset", "doc_texts", "name_of", "pairs", "qrels", "queries", "run"]

TOPIC_FIELDS = ("description", "narrative")
INSTALL = "pip install 'labeler[irds]'"


def dataset(obj: Any) -> Any:
    """The ir_datasets dataset of ``irds:<id>``, of a PyTerrier dataset backed by one, or the
    dataset object itself. An unknown id is an InputError naming it."""
    if isinstance(obj, (str, os.PathLike)):
        ident = os.fspath(obj).removeprefix(IRDS_PREFIX)
        try:
            import ir_datasets
        except ImportError:
            raise ConfigError(f"reading {IRDS_PREFIX}{ident} needs ir_datasets: {INSTALL}"
                              ) from None
        try:
            return ir_datasets.load(ident)
        except KeyError:
            raise InputError("no such ir_datasets dataset (see ir_datasets' catalogue for "
                             "ids)", path=f"{IRDS_PREFIX}{ident}") from None
    irds_ref = getattr(obj, "irds_ref", None)
    return irds_ref() if callable(irds_ref) else obj


def name_of(ds: Any) -> str:
    """``irds:<id>`` of a dataset, for messages and run names."""
    ident = getattr(ds, "dataset_id", None)
    try:
        return f"{IRDS_PREFIX}{ident()}" if callable(ident) else "<ir_datasets dataset>"
    except Exception:
        return "<ir_datasets dataset>"


_NAMES = {"docs": "documents", "scoreddocs": "scored documents (no run to read)"}
_DOWNLOAD_FAILED = "All download sources failed"   # ir_datasets' RuntimeError for its mirrors
_NETWORK_MODULES = ("requests", "urllib3", "urllib.error", "http.client", "socket")


def _ident(ds: Any) -> str:
    return name_of(ds).removeprefix(IRDS_PREFIX)


def _is_download_failure(exc: BaseException) -> bool:
    """A failed download: ir_datasets' "all sources failed", or a network error anywhere in
    the exception's chain (requests, urllib3, urllib, sockets, refused or timed-out
    connections)."""
    todo: list[Any] = [exc]
    seen: set[int] = set()
    while todo:
        err = todo.pop()
        if not isinstance(err, BaseException) or id(err) in seen:
            continue
        seen.add(id(err))
        module = type(err).__module__ or ""
        if (isinstance(err, (ConnectionError, TimeoutError))
                or module.startswith(_NETWORK_MODULES)):
            return True
        if isinstance(err, RuntimeError) and err.args and err.args[0] == _DOWNLOAD_FAILED:
            return True
        todo += [err.__cause__, err.__context__]
    return False


@contextmanager
def _reading(ds: Any, what: str) -> Iterator[None]:
    """Turn whatever ir_datasets raises while it fetches or parses ``what`` into an
    InputError naming the dataset: a failed download says so and how to get past it."""
    try:
        yield
    except (LabelerError, KeyboardInterrupt):
        raise
    except Exception as exc:
        ident = _ident(ds)
        if _is_download_failure(exc):
            raise InputError(f"could not download ir_datasets '{ident}' (no network?): "
                             "download it once or give a local file") from exc
        raise InputError(f"could not read the {what} of ir_datasets '{ident}': "
                         f"{type(exc).__name__}: {exc}") from exc


def _need(ds: Any, what: str) -> None:
    has = getattr(ds, f"has_{what}", None)
    if callable(has) and not has():
        raise InputError(f"the dataset has no {_NAMES.get(what, what)}", path=name_of(ds))


def _text(item: Any) -> str:
    text = item.default_text() if hasattr(item, "default_text") else item.text
    return str(text)


def queries(ds: Any) -> pd.DataFrame:
    """``query_id, query`` (its default text), plus ``description``/``narrative`` where the
    dataset's queries have them."""
    _need(ds, "queries")
    with _reading(ds, "queries"):
        rows = list(ds.queries_iter())
    if not rows:
        raise InputError("the dataset has no queries", path=name_of(ds))
    out = pd.DataFrame({QUERY_ID: [str(q.query_id) for q in rows],
                        QUERY: [_text(q) for q in rows]})
    for field in TOPIC_FIELDS:
        if field in getattr(rows[0], "_fields", ()):
            out[field] = [getattr(q, field) for q in rows]
    return out


def qrels(ds: Any) -> pd.DataFrame:
    """``query_id, chunk_id, grade`` of the dataset's qrels (the raw relevance values)."""
    _need(ds, "qrels")
    with _reading(ds, "qrels"):
        rows = [(str(r.query_id), str(r.doc_id), int(r.relevance)) for r in ds.qrels_iter()]
    if not rows:
        raise InputError("the dataset has no qrels", path=name_of(ds))
    return pd.DataFrame(rows, columns=[QUERY_ID, CHUNK_ID, GRADE])


def run(ds: Any, name: str | None = None) -> pd.DataFrame:
    """``query_id, chunk_id, score, system`` of the dataset's scored documents (its
    ``scoreddocs``, e.g. a BM25 top 1000), named ``name`` or after the dataset."""
    _need(ds, "scoreddocs")
    with _reading(ds, "scored documents"):
        rows = [(str(r.query_id), str(r.doc_id), float(r.score)) for r in ds.scoreddocs_iter()]
    if not rows:
        raise InputError("the dataset has no scored documents", path=name_of(ds))
    out = pd.DataFrame(rows, columns=[QUERY_ID, CHUNK_ID, SCORE])
    out[SYSTEM] = name or name_of(ds).removeprefix(IRDS_PREFIX)
    return out


def doc_texts(ds: Any, ids: Iterable[str]) -> dict[str, str]:
    """``{doc_id: text}`` of the documents ``ids`` that the dataset holds (fetched by id from
    its docs store; ids it lacks are left out)."""
    _need(ds, "docs")
    wanted = list(dict.fromkeys(str(i) for i in ids))
    if not wanted:
        return {}
    with _reading(ds, "documents"):
        found = ds.docs_store().get_many(wanted)
        return {str(k): _text(doc) for k, doc in found.items()}


def corpus(ds: Any) -> pd.DataFrame:
    """Every document as ``chunk_id, chunk``: only when asked for the corpus itself (stages
    fetch the documents they need with :func:`doc_texts`)."""
    _need(ds, "docs")
    with _reading(ds, "documents"):
        rows = [(str(d.doc_id), _text(d)) for d in ds.docs_iter()]
    if not rows:
        raise InputError("the dataset has no documents", path=name_of(ds))
    return pd.DataFrame(rows, columns=[CHUNK_ID, CHUNK])


def pairs(ds: Any) -> pd.DataFrame:
    """Pairs to judge from a dataset: its judged pairs (qrels), else its scored documents,
    with the query texts (and topic fields) and the documents' texts fetched by id."""
    has_qrels = getattr(ds, "has_qrels", None)
    keys = (qrels(ds) if not callable(has_qrels) or has_qrels() else run(ds))
    keys = keys[[QUERY_ID, CHUNK_ID]].drop_duplicates().reset_index(drop=True)
    topics = queries(ds).drop_duplicates(QUERY_ID).set_index(QUERY_ID)
    texts = doc_texts(ds, keys[CHUNK_ID])
    for col, known, what in ((QUERY_ID, topics.index, "queries"),
                             (CHUNK_ID, texts.keys(), "documents")):
        missing = ~keys[col].isin(list(known))
        if missing.any():
            raise InputError(f"{col} {keys[col][missing].iloc[0]!r} ({int(missing.sum())} "
                             f"pairs) is not among the dataset's {what}", path=name_of(ds))
    out = pd.DataFrame({QUERY_ID: keys[QUERY_ID], QUERY: keys[QUERY_ID].map(topics[QUERY]),
                        CHUNK_ID: keys[CHUNK_ID], CHUNK: keys[CHUNK_ID].map(texts)})
    for field in TOPIC_FIELDS:
        if field in topics.columns:
            out[field] = keys[QUERY_ID].map(topics[field]).to_numpy()
    return out
