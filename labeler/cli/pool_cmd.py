"""`labeler pool`: the pairs to judge — each run's top K per query, with their texts.

Usage::

    labeler pool --queries q.tsv --corpus corpus.jsonl --run bm25=a.run --run b.run \\
        --depth 10 --out pairs.jsonl
"""

from __future__ import annotations

from pathlib import Path

import click

from labeler.cli import main
from labeler.cli.options import FILE as _FILE
from labeler.cli.options import InputFormats, format_option


@main.command("pool", epilog="""\
\b
Examples:
  labeler pool --queries queries.tsv --corpus corpus.jsonl --run bm25.run \\
      --run dense=dense.run --depth 10 --out pairs.jsonl
""")
@click.option("--queries", "queries_path", type=_FILE, required=True,
              help="Queries (query_id, query; TSV id<TAB>text; or irds:<id>, an ir_datasets "
                   "dataset's queries).")
@click.option("--corpus", "corpus_path", type=_FILE, required=True,
              help="Corpus (chunk_id, chunk; TSV id<TAB>text; or irds:<id>: only the pooled "
                   "documents are fetched, by id).")
@click.option("--run", "run_paths", multiple=True, required=True, metavar="[NAME=]PATH",
              help="A run to pool from (TREC run, table, or irds:<id>: its scored documents); "
                   "repeat for several runs. "
                   "NAME=PATH names the run.")
@click.option("--depth", type=click.IntRange(min=1), default=10, show_default=True,
              help="Pool the top K chunks of each run per query.")
@click.option("--skip-missing", is_flag=True,
              help="Leave out pooled chunks (and queries) that have no text in --corpus "
                   "(--queries), and say how many, instead of stopping at the first.")
@format_option("queries", "corpus", "run")
@click.option("--out", type=_FILE, required=True,
              help="The pooled pairs with texts: query_id, query, chunk_id, chunk "
                   "(.jsonl, .csv or .parquet) — for annotators, or `labeler label --pairs`.")
def pool_command(queries_path: Path, corpus_path: Path, run_paths: tuple[str, ...],
                 depth: int, skip_missing: bool, fmt: tuple[str, ...], out: Path) -> None:
    """Pool the top K of each run per query into pairs with texts (how TREC builds pools)."""
    from labeler import io
    from labeler.labelling.pooling import pool_files, skipped_text

    with InputFormats(fmt, {"queries": queries_path, "corpus": corpus_path,
                            "run": list(run_paths)}) as formats:
        pairs = pool_files(queries_path, corpus_path, list(run_paths), depth=depth,
                           fmt=formats["run"], queries_fmt=formats["queries"],
                           corpus_fmt=formats["corpus"], skip_missing=skip_missing)
    io.write_table(pairs, out)
    if (skipped := skipped_text(pairs)) is not None:
        click.echo(skipped, err=True)
    click.echo(f"{len(pairs)} pairs over {pairs['query_id'].nunique()} queries -> {out}")
