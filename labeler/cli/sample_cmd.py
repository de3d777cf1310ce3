"""`labeler sample`: which pairs (or whole queries) a person should label next.

Usage::

    labeler sample --labels labels.jsonl --n 200 --out to_annotate.csv --human human.qrels
    labeler sample --unit query --n 15 --labels labels.jsonl --pairs pairs.jsonl --out to_judge.csv
"""

from __future__ import annotations

from pathlib import Path

import click

from labeler.errors import ConfigError
from labeler.cli import main
from labeler.cli.sheet_texts import sheet_texts, warn_ids_only
from labeler.cli.options import FILE as _FILE
from labeler.cli.options import HUMAN_MANY, InputFormats, format_option, read_humans


@main.command("sample", epilog="""\
\b
Examples:
  labeler sample --labels labels.jsonl --n 200 --human human.qrels --pairs pairs.jsonl \\
      --out to_annotate.csv
  # whole random queries, for compare --ppi
  labeler sample --unit query --n 15 --labels labels.jsonl --pairs pairs.jsonl --out to_judge.csv
  # ten more queries of the same random order (to_judge-2.csv)
  labeler sample --more 10 --from to_judge.csv
  # anchors for a nightly job: 100 human-graded pairs, stratified by grade
  labeler sample --anchors 100 --human human.qrels --pairs pairs.jsonl --out anchors.jsonl
""")
@click.option("--labels", "labels_path", type=_FILE,
              help="LLM label records (or qrels) to sample from (with --more: the ones the "
                   "design names, unless given).")
@click.option("--n", "n", type=click.IntRange(min=1), default=200, show_default=True,
              help="How many pairs to propose (with --unit query: how many queries).")
@click.option("--unit", type=click.Choice(["pair", "query"]), default="pair", show_default=True,
              help="pair: a sample stratified by LLM grade and query (for agreement and "
                   "calibration). query: whole queries drawn uniformly at random, every "
                   "pooled pair of each (for `labeler compare --ppi`).")
@click.option("--out", type=_FILE, help="The sheet to annotate (CSV/JSONL/Parquet): query_id, "
              "query, chunk_id, chunk and an empty grade column. With --unit query, "
              "design.json (the random order, to draw more) goes next to it. With --more the "
              "default is the first sheet's name numbered, e.g. to_annotate-2.csv.")
@click.option("--more", "more", type=click.IntRange(min=1),
              help="Draw this many more queries of the same random order as an earlier "
                   "--unit query sample (given with --from): all of them together stay a "
                   "simple random sample, none drawn twice.")
@click.option("--from", "from_path", type=_FILE,
              help="With --more: the earlier sheet, or its design.json.")
@click.option("--human", "human_paths", type=_FILE, multiple=True,
              help="Human qrels (a file or irds:<id>): pairs already labelled are skipped"
                   + HUMAN_MANY)
@click.option("--pairs", "pairs_path", type=_FILE, help="Pairs file for the query/chunk texts.")
@click.option("--queries", "queries_path", type=_FILE,
              help="Query texts (instead of --pairs; a file or irds:<id>), with --corpus.")
@click.option("--corpus", "corpus_path", type=_FILE,
              help="Chunk texts (instead of --pairs; a file, or irds:<id>: only the sampled "
                   "documents are fetched), with --queries.")
@format_option("labels", "human", "pairs", "queries", "corpus")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Random seed of the draw: the same seed and labels give the same sheet.")
@click.option("--by", default="grade,query_id", show_default=True, metavar="COLUMNS",
              help="Stratify equally over the first column, spread over the others.")
@click.option("--anchors", "anchors", type=click.IntRange(min=1), metavar="N",
              help="Draw N anchors for `labeler run` ([drift] anchors) from the --human "
                   "labels: equal shares of each human grade, spread over queries, with their "
                   "texts (--pairs, or --queries and --corpus). --labels is not needed.")
@click.option("--show-llm-grade", is_flag=True,
              help="Include the LLM's grade in the sheet (hidden by default: it anchors "
                   "annotators).")
@click.pass_context
def sample_command(ctx: click.Context, labels_path: Path | None, n: int, unit: str,
                   out: Path | None, more: int | None, from_path: Path | None,
                   human_paths: tuple[Path, ...], pairs_path: Path | None,
                   queries_path: Path | None, corpus_path: Path | None,
                   fmt: tuple[str, ...], seed: int, by: str, anchors: int | None,
                   show_llm_grade: bool) -> None:
    """Which pairs a human should label next (stratified by LLM grade and query, or whole
    random queries; --more draws more of the same random queries; --anchors draws a nightly
    job's anchors from human labels)."""
    if anchors is not None:
        from labeler.cli.sample_anchors import sample_anchors

        sample_anchors(anchors, human_paths, out, {"pairs": pairs_path, "queries": queries_path,
                                                  "corpus": corpus_path}, fmt, seed)
        return
    if more is not None or from_path is not None:
        from labeler.cli.sample_more import sample_more

        sample_more(ctx, more, from_path, labels_path, out, human_paths,
                    {"pairs": pairs_path, "queries": queries_path, "corpus": corpus_path},
                    fmt, show_llm_grade)
        return
    if labels_path is None or out is None:
        raise ConfigError("give --labels and --out (or --more with --from to extend a sample)")
    from labeler import io
    from labeler.reconciliation.agreement import read_human, read_llm
    from labeler.io.guard import check_outputs
    from labeler.reconciliation.sample import annotation_sheet, propose_sample

    check_outputs({"--labels": labels_path, "--human": list(human_paths), "--pairs": pairs_path,
                   "--queries": queries_path, "--corpus": corpus_path}, {"--out": out})
    formats = InputFormats(fmt, {"labels": labels_path, "human": list(human_paths),
                                 "pairs": pairs_path,
                                 "queries": queries_path, "corpus": corpus_path})
    with formats:
        labels = read_llm(labels_path, fmt=formats["labels"])
        texts = sheet_texts(pairs_path, queries_path, corpus_path, labels, formats)
        done = (read_humans(read_human, human_paths, None, formats["human"])
                if human_paths else None)
    if unit == "query":
        from labeler.reconciliation.design import (DESIGN_FILE, Draw, draw_queries,
                                                   write_design)

        design_file = out.parent / DESIGN_FILE
        check_outputs({"--labels": labels_path}, {"--out": out, "design": design_file})
        sources = {k: v for k, v in (("pairs", pairs_path), ("queries", queries_path),
                                     ("corpus", corpus_path)) if v is not None}
        got = draw_queries(labels, n=n, seed=seed, exclude=done, pairs=texts,
                           labels_path=_relative(labels_path, out.parent),
                           texts_paths={k: _relative(v, out.parent) for k, v in
                                        sources.items()})
        drawn = got.pairs
        warn_ids_only(drawn)
        io.write_table(annotation_sheet(drawn, show_llm_grade), out)
        design = got.design.model_copy(update={"draws": [Draw(n=n, sheet=out.name)]})
        write_design(design, design_file)
        click.echo(f"{len(drawn)} pairs of {drawn['query_id'].nunique()} randomly drawn "
                   f"queries to label -> {out}")
        click.echo(f"the random order ({len(design.permutation)} queries, {design.left} left "
                   f"to draw with --more) -> {design_file}")
        return
    picked = propose_sample(labels, n=n, seed=seed, exclude=done,
                            by=[c.strip() for c in by.split(",") if c.strip()],
                            pairs=texts)
    warn_ids_only(picked)
    io.write_table(annotation_sheet(picked, show_llm_grade), out)
    per_grade = picked["llm_grade"].value_counts().sort_index()
    spread = ", ".join(f"{int(g)}: {int(c)}" for g, c in per_grade.items())
    click.echo(f"{len(picked)} pairs from {picked['query_id'].nunique()} queries to label "
               f"-> {out}  (by LLM grade {spread})")


def _relative(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when it is near (a design stays valid when its folder
    moves with its inputs), else absolute; an ``irds:<id>`` as it is."""
    import os

    if str(path).startswith("irds:"):
        return str(path)
    try:
        rel = os.path.relpath(path.resolve(), base.resolve())
    except ValueError:  # another drive
        return str(path.resolve())
    return rel if Path(rel).parts[:3].count("..") < 3 else str(path.resolve())
