"""`labeler sample --anchors N --human QRELS (--pairs FILE | --queries Q --corpus C) --out FILE`:
a nightly job's anchors, drawn from human labels (stratified by the human grade).

Usage::

    labeler sample --anchors 100 --human human.qrels --queries q.tsv --corpus c.jsonl \\
        --out anchors.jsonl      # then [drift] anchors = "anchors.jsonl"
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import click

from labeler.cli.options import InputFormats
from labeler.errors import ConfigError


def sample_anchors(n: int, human_paths: tuple[Path, ...], out: Path | None,
                   texts: Mapping[str, Path | None], fmt: tuple[str, ...], seed: int) -> None:
    """Draw ``n`` anchors from the ``human_paths`` labels (read together) with texts from
    ``texts`` and write them."""
    from labeler import io
    from labeler.io.guard import check_outputs
    from labeler.reconciliation.agreement import read_human
    from labeler.reconciliation.labelled import combine_human
    from labeler.reconciliation.sample import anchor_sample

    if not human_paths or out is None:
        raise ConfigError("--anchors needs --human (the human-labelled set to draw from) and "
                          "--out (the anchors file)")
    pairs, queries, corpus = texts.get("pairs"), texts.get("queries"), texts.get("corpus")
    if pairs is None and (queries is None or corpus is None):
        raise ConfigError("--anchors needs the pairs' texts: --pairs, or --queries and --corpus")
    if pairs is not None and (queries or corpus):
        raise ConfigError("give the texts as --pairs, or as --queries and --corpus, not both")
    check_outputs({"--human": list(human_paths), **{f"--{k}": v for k, v in texts.items()}},
                  {"--out": out})
    formats = InputFormats(fmt, {"human": list(human_paths), **texts})
    with formats:
        human = combine_human({str(p): read_human(p, fmt=formats["human"])
                               for p in human_paths})
        if pairs is not None:
            table = io.read_pairs(pairs, formats["pairs"])
        else:
            q = io.read_queries(queries, formats["queries"])
            chunks = io.chunk_texts(corpus, human["chunk_id"].astype(str).unique(),
                                    formats["corpus"])
            keys = human[["query_id", "chunk_id"]].astype(str)
            keys = keys.loc[keys["chunk_id"].isin(chunks.keys())]
            qtext = dict(zip(q["query_id"].astype(str), q["query"].astype(str)))
            keys = keys.loc[keys["query_id"].isin(qtext.keys())]
            table = keys.assign(query=keys["query_id"].map(qtext),
                                chunk=keys["chunk_id"].map(chunks))
    anchors = anchor_sample(human, table, n=n, seed=seed)
    io.write_table(anchors, out)
    per_grade = anchors["grade"].value_counts().sort_index()
    spread = ", ".join(f"{int(g)}: {int(c)}" for g, c in per_grade.items())
    click.echo(f"{len(anchors)} anchors from {anchors['query_id'].nunique()} queries -> {out}  "
               f"(by human grade {spread}); use them with [drift] anchors = \"{out.name}\"")
    if len(anchors) < n:
        click.echo(f"labeler: warning: only {len(anchors)} human-graded pairs have texts, "
                   f"fewer than the {n} asked for", err=True)
