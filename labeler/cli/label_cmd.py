"""`labeler label`: judge (query, chunk) pairs with an LLM (or the offline lexical baseline).

Usage::

    OPENAI_API_KEY=... labeler label --pairs pairs.jsonl --model gpt-4o-mini --out labels.jsonl
    labeler label --queries q.tsv --corpus corpus.jsonl --run bm25.run --run dense.run \
        --depth 10 --model qwen2.5:7b --base-url http://localhost:11434/v1 --out labels.jsonl \
        --qrels-out labels.qrels
    labeler label --pairs pairs.csv --model lexical --out labels.csv     # offline baseline
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from labeler.errors import ConfigError, InputError
from labeler.cli import as_flags, main
from labeler.cli.options import InputFormats, format_option, judge_options, judge_settings

if TYPE_CHECKING:
    import pandas as pd

_FILE = click.Path(dir_okay=False, path_type=Path)  # existence is checked by labeler.io
_OUT_FORMATS = ("jsonl", "csv", "parquet")
INTERRUPTED_EXITS = (130, 143)  # SIGINT, SIGTERM


@main.command("label", epilog="""\
\b
Examples:
  # pairs you already have, an OpenAI model (the key from OPENAI_API_KEY)
  labeler label --pairs pairs.jsonl --model gpt-4o-mini --out labels.jsonl
  # pool the top 10 of two runs; the offline lexical baseline judge
  labeler label --queries queries.tsv --corpus corpus.jsonl --run bm25.run \\
      --run dense.run --depth 10 --model lexical --out labels.jsonl
""")
@click.option("--pairs", "pairs_path", type=_FILE,
              help="Pairs to judge: query_id, query, chunk_id, chunk (CSV/JSONL/Parquet), or "
                   "irds:<id> (an ir_datasets dataset's judged pairs).")
@click.option("--queries", "queries_path", type=_FILE,
              help="Queries (query_id, query; TSV id<TAB>text; or irds:<id>, with its "
                   "description/narrative) — with --corpus and --run.")
@click.option("--corpus", "corpus_path", type=_FILE,
              help="Corpus (chunk_id, chunk; TSV id<TAB>text; or irds:<id>: only the pooled "
                   "documents are fetched) — with --queries and --run.")
@click.option("--run", "run_paths", multiple=True, metavar="[NAME=]PATH",
              help="A run to pool from (TREC run, table, or irds:<id>: its scored documents); "
                   "repeat for several runs. "
                   "NAME=PATH names the run.")
@click.option("--depth", type=click.IntRange(min=1), default=10, show_default=True,
              help="Pool the top K chunks of each run per query.")
@click.option("--skip-missing", is_flag=True,
              help="With --run: leave out pooled chunks (and queries) that have no text in "
                   "--corpus (--queries), and say how many, instead of stopping at the first.")
@format_option("pairs", "queries", "corpus", "run")
@click.option("--input-format", "input_fmt", multiple=True, hidden=True, metavar="[INPUT=]FORMAT",
              help="Older spelling of --format (hidden; says so when used).")
@judge_options()
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Cache directory [env LABELER_CACHE_DIR; default ~/.cache/labeler].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--out", type=_FILE,
              help="Label records: .jsonl (default), .csv or .parquet (required unless "
                   "--batch-file-out).")
@click.option("--out-format", "out_format", type=click.Choice(_OUT_FORMATS),
              help="Format of --out when its extension does not say.")
@click.option("--qrels-out", type=_FILE, help="Also write the judged pairs as TREC qrels.")
@click.option("--prices", type=_FILE,
              help='Price table JSON {"model": {"input": usd_per_1M, "output": usd_per_1M}}; '
                   'optional "batch_input"/"batch_output" (else half, with --batch).')
def label_command(pairs_path: Path | None, queries_path: Path | None,
                  corpus_path: Path | None, run_paths: tuple[str, ...], depth: int,
                  skip_missing: bool, fmt: tuple[str, ...], input_fmt: tuple[str, ...],
                  cache_dir: Path | None,
                  no_cache: bool, out: Path | None, out_format: str | None,
                  qrels_out: Path | None, prices: Path | None, **options: Any) -> None:
    """Judge (query, chunk) pairs 0-3 with an LLM; one label record per pair.

    Exit status: 0 every pair judged, 3 some pairs failed (the output still holds every
    pair), 5 batches submitted but not finished (--batch-wait; nothing written: run the same
    command again to collect them), 2 bad input, configuration, key or endpoint, 130/143
    stopped by SIGINT/SIGTERM (every pair's record written; run it again to resume).
    """
    from labeler import io
    from labeler.labelling.batchfile import BatchFileWritten, BatchNotReady, load_batch_prices
    from labeler.io import parse_run_arg
    from labeler.io.guard import check_outputs
    from labeler.labelling.stage import label
    from labeler.labelling.limits import load_prices

    fmt, out_format = _formats(fmt, input_fmt, out_format)
    settings = judge_settings(options)
    if out is None and not settings.get("batch_file_out"):
        raise ConfigError("Missing option '--out' (where the label records go)")
    out_fmt = (out_format or _out_format(out)) if out is not None else "jsonl"
    failed_out = _failed_path(out) if out is not None and out_fmt == "trec" else None
    check_outputs({"--pairs": pairs_path, "--queries": queries_path, "--corpus": corpus_path,
                   "--run": [parse_run_arg(r)[1] for r in run_paths], "--prices": prices,
                   "--batch-file-in": settings.get("batch_file_in")},
                  {"--out": out, "--qrels-out": qrels_out, "the failed pairs' file": failed_out,
                   "--batch-file-out": settings.get("batch_file_out")},
                  # an existing cache may be read-only: it is then only read
                  dirs={"--cache-dir": None if cache_dir and cache_dir.is_dir() else cache_dir})
    paths = {"pairs": pairs_path, "queries": queries_path, "corpus": corpus_path,
             "run": list(run_paths)}
    formats = InputFormats(fmt, paths)
    with formats:   # also for the few-shot examples: a hint to force theirs is left out
        pairs = _read_input(pairs_path, queries_path, corpus_path, run_paths, depth, formats,
                            skip_missing)
        try:
            result = label(pairs, cache_dir=cache_dir, no_cache=no_cache,
                           prices=load_prices(prices) if prices else None,
                           batch_prices=load_batch_prices(prices) if prices else None,
                           **settings)
        except (BatchFileWritten, BatchNotReady) as exc:
            ctx = click.get_current_context()
            click.echo(f"labeler: {as_flags(ctx.find_root(), exc)}", err=True)
            ctx.exit(exc.exit_code)
    if out is None:  # unreachable (--batch-file-out stops above); narrows the type for mypy
        raise ConfigError("Missing option '--out' (where the label records go)")
    io.write_labels(result.records, out, out_fmt)
    if qrels_out is not None:
        io.write_qrels(result.records, qrels_out)
    where = "in 'error'"
    if failed_out is not None and result.summary.failed:
        # qrels hold judged pairs only: the failed ones and their reasons go beside them
        failed = result.records[result.records["status"] != "ok"]
        io.write_labels(failed, failed_out, "jsonl")
        where = f"in {failed_out}"
    for line in result.summary.render().splitlines():
        click.echo(f"labeler: {line}", err=True)
    if result.exit_code in INTERRUPTED_EXITS:
        judged = result.summary.n_pairs - result.summary.failed
        click.echo(f"labeler: interrupted: {judged} of {result.summary.n_pairs} pairs judged, "
                   f"every record written to {out} (the rest 'failed', reason interrupted); "
                   "run the same command again to resume — judged pairs come from the cache",
                   err=True)
    elif result.exit_code:
        click.echo(f"labeler: {result.summary.failed} pairs failed (status 'failed', reason "
                   f"{where}); re-run the same command to retry only those", err=True)
    click.get_current_context().exit(result.exit_code)


def _formats(fmt: tuple[str, ...], input_fmt: tuple[str, ...], out_format: str | None
             ) -> tuple[tuple[str, ...], str | None]:
    """The input formats and the output format, from ``--format`` (the input's, like every
    command's), ``--out-format`` and the older spellings: ``--input-format`` (now
    ``--format``) and a bare ``--format jsonl|csv|parquet`` (then the output's, now
    ``--out-format``), which still work with a note on stderr."""
    from labeler.cli.options import deprecation_note

    if input_fmt:
        deprecation_note("--input-format", "--format")
    inputs = []
    for value in fmt:
        if value.strip().lower() in _OUT_FORMATS and out_format is None:
            deprecation_note(f"--format {value} (the format of --out)",
                             f"--out-format {value.strip().lower()}")
            out_format = value.strip().lower()
        else:
            inputs.append(value)
    return (*inputs, *input_fmt), out_format


def _failed_path(out: Path) -> Path:
    """Where the failed pairs of a TREC ``--out`` go: ``labels.qrels`` → ``labels.failed.jsonl``."""
    return out.with_name(out.name.split(".")[0] + ".failed.jsonl")


def _out_format(out: Path) -> str:
    from labeler import io
    if not out.suffix:
        return "jsonl"  # no extension at all: JSONL, the default
    try:
        fmt = io.detect_format(out, content=False)  # an output's old content says nothing
    except InputError:
        fmt = ""
    if fmt not in (*_OUT_FORMATS, "trec"):
        raise ConfigError(f"--out {out.name}: unknown output format '{out.suffix}'; use .jsonl, "
                          ".csv, .parquet or .qrels, or give --out-format")
    return fmt


def _read_input(pairs_path: Path | None, queries_path: Path | None, corpus_path: Path | None,
                run_paths: tuple[str, ...], depth: int, formats: InputFormats,
                skip_missing: bool = False) -> pd.DataFrame:
    from labeler import io
    from labeler.labelling.pooling import pool_files, skipped_text

    pooled = queries_path or corpus_path or run_paths
    if pairs_path is not None:
        if pooled:
            raise ConfigError("give either --pairs, or --queries --corpus --run, not both")
        return io.read_pairs(pairs_path, formats["pairs"])
    if not (queries_path and corpus_path and run_paths):
        raise ConfigError("give --pairs FILE, or --queries FILE --corpus FILE --run FILE "
                          "[--run FILE ...] --depth K to pool the pairs from runs")
    pairs = pool_files(queries_path, corpus_path, list(run_paths), depth=depth,
                       fmt=formats["run"], queries_fmt=formats["queries"],
                       corpus_fmt=formats["corpus"], skip_missing=skip_missing)
    if (skipped := skipped_text(pairs)) is not None:
        click.echo(skipped, err=True)
    return pairs
