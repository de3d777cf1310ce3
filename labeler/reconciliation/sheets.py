"""Draw a random sample of whole queries for people to label, and grow it, from Python: what
``labeler sample --unit query`` and ``labeler sample --more`` do.

The first draw takes the first ``n`` queries of one seeded random order; with ``out`` it
writes the sheet to fill in and ``design.json`` next to it (the seed, the order, how far it is
drawn, the label records and the text sources). Each later draw takes the next ``m`` queries
of the same order, so the queries drawn so far, together, stay a simple random sample — what
``labeler.plan`` and ``labeler.compare(..., stats=StatsOptions(ppi=True))`` assume.

Usage::

    import labeler
    first = labeler.sample_queries("labels.jsonl", n=10, seed=0, pairs="pairs.csv",
                                   out="sheets/todo.csv")      # + sheets/design.json
    # ... people label sheets/todo.csv; labeler.plan(...) says how many more ...
    more = labeler.more_queries("sheets/todo.csv", m=15)       # -> sheets/todo-2.csv
    more.new_queries, more.design.drawn, more.sheet
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from labeler.errors import ConfigError
from labeler.reconciliation.design import (DESIGN_FILE, Draw, QueryDesign, QuerySample,
                                           design_path, draw_queries, from_design, next_sheet,
                                           read_design, relative_name, write_design)
from labeler.reconciliation.design import more_queries as _more

PathLike = str | os.PathLike[str]


def _texts(pairs: Any, queries: Any, corpus: Any, labels: Any) -> Any:
    """The texts of the sheet: ``pairs``, or ``queries`` + ``corpus`` joined on the pairs."""
    if pairs is not None and (queries is not None or corpus is not None):
        raise ConfigError("give the texts as pairs, or as queries and corpus, not both")
    if queries is None and corpus is None:
        return pairs
    if queries is None or corpus is None:
        raise ConfigError("queries and corpus go together (query and chunk texts)")
    from labeler.labelling.pooling import with_texts

    return with_texts(labels[["query_id", "chunk_id"]].drop_duplicates(), queries, corpus)


def _sources(base: Path, **given: Any) -> dict[str, str]:
    """The text sources given as paths, as the design records them."""
    return {k: _near(Path(v), base) for k, v in given.items()
            if isinstance(v, (str, os.PathLike))}


def _near(path: Path, base: Path) -> str:
    if str(path).startswith("irds:"):
        return str(path)
    try:
        rel = os.path.relpath(path.resolve(), base.resolve())
    except ValueError:
        return str(path.resolve())
    return rel if Path(rel).parts[:3].count("..") < 3 else str(path.resolve())


def _write(got: QuerySample, out: Path, design_file: Path, show_llm_grade: bool,
           first: bool) -> QuerySample:
    from labeler import io
    from labeler.reconciliation.sample import annotation_sheet

    io.write_table(annotation_sheet(got.pairs, show_llm_grade), out)
    draws = [*got.design.draws[:-1], Draw(n=got.design.draws[-1].n,
                                          sheet=out.name if first else
                                          relative_name(out, design_file.parent))]
    design = got.design.model_copy(update={"draws": draws})
    write_design(design, design_file)
    return QuerySample(got.pairs, design, sheet=out, design_file=design_file)


def sample_queries(labels: Any, *, n: int, seed: int = 0, exclude: Any = None,
                   pairs: Any = None, queries: Any = None, corpus: Any = None,
                   out: PathLike | None = None, show_llm_grade: bool = False) -> QuerySample:
    """A simple random sample of ``n`` whole queries of the ``labels`` (label records or
    qrels: a path or a frame) and every pooled pair of them, with the design that grows it
    (:func:`more_queries`). Queries of ``exclude`` (human labels so far) are not drawn. Texts
    come from ``pairs``, or ``queries`` + ``corpus``. With ``out`` the sheet to fill in is
    written there and ``design.json`` next to it, recording the label records and text
    sources (when given as paths) for the next draws.

    Usage: ``labeler.sample_queries("labels.jsonl", n=10, pairs="pairs.csv",
    out="sheets/todo.csv")``
    """
    from labeler.reconciliation.agreement import read_llm

    df = read_llm(labels)
    texts = _texts(pairs, queries, corpus, df)
    if out is None:
        return draw_queries(df, n=n, seed=seed, exclude=exclude, pairs=texts)
    from labeler.io.guard import check_outputs

    sheet = Path(out)
    design_file = sheet.parent / DESIGN_FILE
    inputs = {"labels": labels, "exclude": exclude, "pairs": pairs, "queries": queries,
              "corpus": corpus}
    check_outputs({k: v for k, v in inputs.items() if isinstance(v, (str, os.PathLike))},
                  {"out": sheet, "design": design_file})
    got = draw_queries(df, n=n, seed=seed, exclude=exclude, pairs=texts,
                       labels_path=(_near(Path(labels), sheet.parent)
                                    if isinstance(labels, (str, os.PathLike)) else None),
                       texts_paths=_sources(sheet.parent, pairs=pairs, queries=queries,
                                            corpus=corpus))
    return _write(got, sheet, design_file, show_llm_grade, first=True)


def more_queries(source: PathLike | QuerySample | QueryDesign, *, m: int,
                 labels: Any = None, pairs: Any = None, queries: Any = None,
                 corpus: Any = None, human: Any = None, out: PathLike | None = None,
                 show_llm_grade: bool = False) -> QuerySample:
    """The next ``m`` queries of an earlier sample's random order, and every pooled pair of
    them. ``source``: the earlier sheet or its ``design.json`` (then the label records and
    texts the design recorded are used unless given, the new sheet goes next to the first,
    numbered — ``todo-2.csv`` — or to ``out``, and ``design.json`` is updated), a
    :class:`~labeler.reconciliation.design.QuerySample` from :func:`sample_queries`, or a
    ``QueryDesign`` (then give ``labels``; nothing is written without ``out``). ``human``:
    the labels so far, which may cover no query the design has not drawn.

    Usage: ``labeler.more_queries("sheets/todo.csv", m=15).sheet``
    """
    from labeler.reconciliation.agreement import read_llm

    if isinstance(source, QuerySample):
        source = source.design_file if source.design_file is not None else source.design
    design_file: Path | None = None
    if isinstance(source, QueryDesign):
        design = source
        if out is not None:
            design_file = Path(out).parent / DESIGN_FILE
    else:
        design_file = design_path(source)
        design = read_design(design_file)
    base = design_file.parent if design_file is not None else Path(".")
    if labels is None:
        if design.labels is None or design_file is None:
            raise ConfigError("the design does not name its label records: give labels")
        labels = from_design(design.labels, base)
    if pairs is None and queries is None and corpus is None and design_file is not None:
        recorded = {k: from_design(v, base) for k, v in design.texts.items()}
        pairs, queries, corpus = (recorded.get(k) for k in ("pairs", "queries", "corpus"))
    df = read_llm(labels)
    texts = _texts(pairs, queries, corpus, df)
    got = _more(df, design, m=m, pairs=texts, human=human,
                source=design_file if design_file is not None else DESIGN_FILE)
    if design_file is None:
        return got
    sheet = Path(out) if out is not None else next_sheet(
        design_file, design.draws[0].sheet if design.draws else None, len(design.draws) + 1)
    from labeler.io.guard import check_outputs

    inputs = {"labels": labels, "human": human, "pairs": pairs, "queries": queries,
              "corpus": corpus}
    check_outputs({k: v for k, v in inputs.items() if isinstance(v, (str, os.PathLike))},
                  {"out": sheet})
    if sheet.resolve() == design_file.resolve():
        raise ConfigError(f"out {sheet} is the design file; choose another path")
    return _write(got, sheet, design_file, show_llm_grade, first=False)
