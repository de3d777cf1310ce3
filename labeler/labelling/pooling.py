"""Pooling: the pairs to judge are the union of each run's top ``depth`` (how TREC builds
test sets).

Each run is ranked the trec_eval way (score descending, then chunk id descending) before
its top ``depth`` per query is taken. Pairs come out grouped by query (in the order the
queries first appear in the runs), then by their best rank in any run, then chunk id.

Usage::

    from labeler import io
    from labeler.labelling.pooling import pool_pairs
    pairs = pool_pairs(io.read_queries("q.tsv"), io.read_corpus("corpus.jsonl"),
                       io.read_runs(["bm25.run", "dense.run"]), depth=10)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from labeler import io
from labeler.errors import ConfigError, InputError
from labeler.io.readers import RunSpec


def pool_pairs(queries: Any, corpus: Any, runs: Any, depth: int,
               *, run_paths: Mapping[str, str | os.PathLike[str]] | None = None,
               skip_missing: bool = False, corpus_fmt: str | None = None) -> pd.DataFrame:
    """Pairs ``query_id, query, chunk_id, chunk`` pooled from the top ``depth`` of each run.

    ``run_paths`` maps a run tag (``system``) to its file, to name it in error messages.
    A query or chunk of a pooled pair missing from ``queries``/``corpus`` is an InputError;
    with ``skip_missing`` such pairs are left out instead and counted in
    ``attrs["skipped"]`` (``{"pairs", "queries", "chunks"}``: pairs left out, distinct
    queries and chunks that were missing). The corpus is asked for the pooled chunks only
    where it can be (an ir_datasets corpus: ``docs_store().get_many``), never exported.
    """
    if depth < 1:
        raise ConfigError(f"`depth` must be at least 1, got {depth}", setting="depth")
    queries, runs = io.as_queries(queries), io.as_runs(runs)
    if runs.empty:
        raise InputError("there are no runs to pool from")
    run = runs[["query_id", "chunk_id", "score"]].astype({"query_id": str, "chunk_id": str})
    run["system"] = runs["system"].astype(str) if "system" in runs.columns else "run"
    run["order"] = range(len(run))
    ranked = run.sort_values(["system", "query_id", "score", "chunk_id"],
                             ascending=[True, True, False, False], kind="stable")
    ranked["rank"] = ranked.groupby(["system", "query_id"], sort=False).cumcount() + 1
    top = ranked.loc[ranked["rank"] <= depth]

    texts_q = dict(zip(queries["query_id"].astype(str), queries["query"].astype(str)))
    texts_c = io.chunk_texts(corpus, pd.unique(top["chunk_id"]), corpus_fmt)
    skipped = {"pairs": 0, "queries": 0, "chunks": 0}
    if skip_missing:
        no_q, no_c = ~top["query_id"].isin(texts_q.keys()), ~top["chunk_id"].isin(texts_c.keys())
        skipped = {"pairs": int(top.loc[no_q | no_c, ["query_id", "chunk_id"]]
                                .drop_duplicates().shape[0]),
                   "queries": int(top.loc[no_q, "query_id"].nunique()),
                   "chunks": int(top.loc[no_c, "chunk_id"].nunique())}
        top = top.loc[~(no_q | no_c)]
    _check_known(top, "query_id", texts_q, "queries", run_paths)
    _check_known(top, "chunk_id", texts_c, "corpus", run_paths)

    first_seen = run.groupby("query_id", sort=False)["order"].min()
    pooled = (top.groupby(["query_id", "chunk_id"], sort=False)["rank"].min()
              .reset_index())
    pooled["q_order"] = pooled["query_id"].map(first_seen)
    pooled = pooled.sort_values(["q_order", "rank", "chunk_id"], kind="stable")
    out = pd.DataFrame({
        "query_id": pooled["query_id"].to_numpy(),
        "query": pooled["query_id"].map(texts_q).to_numpy(),
        "chunk_id": pooled["chunk_id"].to_numpy(),
        "chunk": pooled["chunk_id"].map(texts_c).to_numpy(),
    })
    for col in ("description", "narrative"):  # TREC topic fields, for prompts that use them
        if col in queries.columns:
            field = dict(zip(queries["query_id"].astype(str), queries[col]))
            out[col] = out["query_id"].map(field).to_numpy()
    out.attrs["skipped"] = skipped
    return out


def _check_known(top: pd.DataFrame, col: str, known: Mapping[str, str], what: str,
                 run_paths: Mapping[str, str | os.PathLike[str]] | None) -> None:
    unknown = ~top[col].isin(known.keys())
    if not unknown.any():
        return
    row = top.loc[unknown].sort_values("order").iloc[0]
    system = str(row["system"])
    path = (run_paths or {}).get(system, f"run {system!r}")
    n = int(top.loc[unknown, col].nunique())
    more = f" ({n - 1} more such ids)" if n > 1 else ""
    which = (f"query {row[col]!r}" if col == "query_id"
             else f"chunk {row[col]!r} (query {row['query_id']!r})")
    raise InputError(f"{which} is ranked in the run but missing from the {what} file{more}"
                     " (--skip-missing leaves such pairs out)", path=path)


def pool(queries: Any, corpus: Any, runs: Any, *, depth: int = 10,
         skip_missing: bool = False) -> pd.DataFrame:
    """The pairs to judge: the union of each run's top ``depth`` per query, with texts.

    ``queries``/``corpus``/``runs`` may be paths, ``irds:<id>`` or ir_datasets datasets
    (documents fetched by id, never exported), DataFrames in any of the field's column
    conventions (PyTerrier ``qid, query``; ir_datasets ``doc_id, text`` ...), records,
    dicts, or ranx Runs. With
    ``skip_missing``, a pooled chunk or query without a text is left out (counted in
    ``attrs["skipped"]``) instead of being an error.

    Usage: ``pairs = labeler.pool("queries.tsv", "corpus.jsonl", ["a.run", "b.run"], depth=10)``
    """
    return pool_pairs(io.as_queries(queries), corpus, io.as_runs(runs), depth,
                      skip_missing=skip_missing)


def pool_files(queries: str | os.PathLike[str], corpus: str | os.PathLike[str],
               runs: Sequence[RunSpec], *, depth: int, fmt: str | None = None,
               queries_fmt: str | None = None, corpus_fmt: str | None = None,
               skip_missing: bool = False) -> pd.DataFrame:
    """:func:`pool_pairs` on files, as ``labeler pool`` and ``labeler label`` read them: each
    run is ``PATH`` or ``NAME=PATH`` (named runs); an error names the run's file. ``fmt``
    forces the runs' format, ``queries_fmt``/``corpus_fmt`` that of the texts.

    Usage: ``pairs = pool_files("q.tsv", "corpus.jsonl", ["bm25=a.run", "b.run"], depth=10)``
    """
    if not runs:
        raise ConfigError("give at least one run to pool from")
    frames: list[pd.DataFrame] = []
    paths: dict[str, str] = {}
    for spec in runs:
        name, path = io.parse_run_arg(spec)
        frame = io.read_run(path, fmt, name=name)
        for tag in frame["system"].unique():
            if tag in paths:
                raise InputError(f"run name {tag!r} is used by {paths[tag]} too; name each "
                                 f"run as NAME=PATH, e.g. other={path}", path=path)
            paths[str(tag)] = str(path)
        frames.append(frame)
    return pool_pairs(io.read_queries(queries, queries_fmt), corpus,
                      pd.concat(frames, ignore_index=True), depth, run_paths=paths,
                      skip_missing=skip_missing, corpus_fmt=corpus_fmt)


def skipped_text(pairs: pd.DataFrame) -> str | None:
    """A line saying what ``skip_missing`` left out of ``pairs``, or None when nothing was.

    Usage: ``print(skipped_text(pool(q, c, runs, skip_missing=True)))``
    """
    s = pairs.attrs.get("skipped") or {}
    if not s.get("pairs"):
        return None
    return (f"skipped {s['pairs']} pooled pairs without a text: {s['chunks']} chunks missing "
            f"from the corpus, {s['queries']} queries missing from the queries")


def with_texts(keys: pd.DataFrame, queries: Any = None, corpus: Any = None, *,
               queries_fmt: str | None = None, corpus_fmt: str | None = None) -> pd.DataFrame:
    """``keys`` (``query_id, chunk_id``, other columns kept) with ``query``/``chunk`` texts
    from ``queries``/``corpus`` (paths or frames; ``queries_fmt``/``corpus_fmt`` force a
    file's format); an id either lacks is an InputError that counts them, so that no sheet
    goes out with holes.

    Usage: ``sheet = with_texts(sample, "queries.tsv", "corpus.jsonl")``
    """
    out = keys
    for source, id_col, text_col, what in ((queries, "query_id", "query", "queries"),
                                           (corpus, "chunk_id", "chunk", "corpus")):
        if source is None:
            continue
        ids = out[id_col].astype(str)
        if what == "queries":
            table = io.as_queries(source, fmt=queries_fmt)
            texts = dict(zip(table[id_col].astype(str), table[text_col].astype(str)))
        else:
            texts = io.chunk_texts(source, pd.unique(ids), corpus_fmt)
        missing = sorted(set(ids) - texts.keys())
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise InputError(f"{id_col} {missing[0]!r}{more} missing from the {what} file",
                             path=source if isinstance(source, (str, os.PathLike)) else None)
        out = out.assign(**{text_col: ids.map(texts).to_numpy()})
    return out
