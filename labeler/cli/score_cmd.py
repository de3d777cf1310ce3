"""`labeler score`: NDCG@k and other measures per query and per run, a thin shell over
:func:`labeler.scoring.results.evaluate_files`.

Usage::

    labeler score --qrels human.qrels --run bm25.run --run dense.run --k 5 --k 10 --json
    labeler score --qrels qrels.txt --run bm25=run.a.txt --run rm3=run.b.txt \\
        --measure nDCG@10 --measure "P(rel=2)@10" --measure AP --trec
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from labeler.schema import GAINS, IDEALS
from labeler.cli import main
from labeler.cli.options import InputFormats, format_option

if TYPE_CHECKING:
    from labeler.scoring.results import ScoreResult


@main.command("score")
@click.option("--qrels", "qrels", required=True, type=click.Path(dir_okay=False),
              help="Relevance labels: TREC qrels, CSV, JSONL, Parquet or irds:<id> (an "
                   "ir_datasets dataset's qrels). Grades may be any "
                   "integer (gain g for g > 0, else 0, as trec_eval).")
@click.option("--run", "runs", required=True, multiple=True, metavar="[NAME=]PATH",
              help="A ranking (TREC run, CSV, JSONL, Parquet, or irds:<id>: its scored "
                   "documents); repeat for several runs. "
                   "NAME=PATH names the run (the name wins over the file's tag).")
@click.option("--k", "ks", type=click.IntRange(min=1), multiple=True,
              help="NDCG cut-off; repeat for several (--k 5 --k 10). Default 10.")
@click.option("--measure", "measures", multiple=True, metavar="M",
              help="Another measure, named as ir_measures writes it: nDCG@k, P@k, R@k, RR, "
                   "RR@k, AP, AP@k, Judged@k, with a relevance level for P, R, RR and AP "
                   "as in P(rel=2)@10; trec_eval names (P.10, map, recip_rank) work too. "
                   "Repeat for several.")
@click.option("--json", "as_json", is_flag=True,
              help="Print exactly one JSON object on stdout.")
@click.option("--trec", "as_trec", is_flag=True,
              help="Print trec_eval's text output for each run (runid, num_q, then "
                   "measure<TAB>all<TAB>value; trec_eval's mean, over every judged query).")
@click.option("--complete", is_flag=True,
              help="trec_eval -c: every query of the qrels with a relevant chunk counts; "
                   "one a run lacks counts 0.")
@click.option("--gain", type=click.Choice(GAINS), default="linear", show_default=True,
              help="Gain of the --k NDCG: linear (rel) or exponential (2^rel - 1).")
@click.option("--ideal", type=click.Choice(IDEALS), default="qrels", show_default=True,
              help="IDCG from every judged chunk (qrels, trec_eval) or the run's list re-sorted.")
@click.option("--include-empty", is_flag=True,
              help="Count judged queries with no relevant chunk (trec_eval's mean).")
@format_option("qrels", "run")
@click.option("--grade-map", default=None,
              help='Map raw grades of the qrels before scoring, e.g. "-1=0,4=3".')
@click.option("--per-query", is_flag=True,
              help="Also print each query's value (with --trec: trec_eval -q's lines).")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="Also write the JSON object to this file (atomically).")
def score_command(qrels: str, runs: tuple[str, ...], ks: tuple[int, ...],
                  measures: tuple[str, ...], as_json: bool, as_trec: bool, complete: bool,
                  gain: str, ideal: str, include_empty: bool, fmt: tuple[str, ...],
                  grade_map: str | None, per_query: bool, out: str | None) -> None:
    """NDCG@k (and any --measure) of each run against the qrels: mean, median, queries,
    judged share."""
    from labeler import io
    from labeler.errors import ConfigError
    from labeler.io import parse_run_arg
    from labeler.io.guard import check_outputs
    from labeler.scoring.results import evaluate_files

    check_outputs({"--qrels": qrels, "--run": [parse_run_arg(r)[1] for r in runs]},
                  {"--out": out})
    if as_json and as_trec:
        raise ConfigError("give --json or --trec, not both")
    formats = InputFormats(fmt, {"qrels": qrels, "run": list(runs)})
    with formats:
        result = evaluate_files(qrels, list(runs), k=list(ks) or [10], gain=gain,
                                ideal=ideal, include_empty=include_empty,
                                qrels_fmt=formats["qrels"], run_fmt=formats["run"],
                                grade_map=io.parse_grade_map(grade_map),
                                measures=list(measures), complete=complete)
    if out or as_json:  # the JSON object (with its intervals) only when asked for
        payload = result.to_dict()
        if out:
            io.write_json(payload, out)
        if as_json:
            click.echo(json.dumps(payload, ensure_ascii=False, allow_nan=False))
            return
    if as_trec:
        from labeler.report.trec_text import trec_eval_text

        click.echo(trec_eval_text(result, per_query, with_k=bool(ks) or not measures),
                   nl=False)
        return
    _print_table(result, per_query)


def _print_table(result: ScoreResult, per_query: bool) -> None:
    from rich.table import Table

    from labeler.fmt import num
    from labeler.cli.tables import cell, make_console

    console = make_console()
    table = Table(title="NDCG@k", title_justify="left")
    for col, justify in (("run", "left"), ("k", "right"), ("mean", "right"),
                         ("median", "right"), ("queries", "right"),
                         ("IDCG 0", "right"), ("judged share", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in result.summary.itertuples(index=False):
        table.add_row(cell(row.system), str(row.k), num(row.mean), num(row.median),
                      str(row.n_queries), str(row.n_empty), num(row.judged_share))
    console.print(table)
    if len(result.measure_summary):
        extra = Table(title="Measures", title_justify="left")
        for col, justify in (("run", "left"), ("measure", "left"), ("mean", "right"),
                             ("median", "right"), ("queries", "right"),
                             ("none relevant", "right")):
            extra.add_column(col, justify=justify)  # type: ignore[arg-type]
        for m in result.measure_summary.itertuples(index=False):
            extra.add_row(cell(m.system), cell(m.measure), num(m.mean), num(m.median),
                          str(m.n_queries), str(m.n_empty))
        console.print(extra)
    if result.include_empty:
        console.print("Judged queries with no relevant chunk are counted (trec_eval's mean).")
    else:
        console.print("Queries with no relevant judged chunk are left out of mean and median.")
    if result.complete:
        console.print("Queries of the qrels a run lacks count 0 (trec_eval -c).")
    if per_query:
        _print_per_query(console, result)


def _print_per_query(console: Any, result: ScoreResult) -> None:
    from rich.table import Table

    from labeler.fmt import num
    from labeler.cli.tables import cell

    pq = result.per_query.dropna(subset=["ndcg"])
    detail = Table(title="NDCG@k per query", title_justify="left")
    for col in ("run", "query", "k", "ndcg", "judged share"):
        detail.add_column(col)
    for row in pq.itertuples(index=False):
        detail.add_row(cell(row.system), cell(row.query_id), str(row.k), num(row.ndcg),
                       num(row.judged_at_k))
    console.print(detail)
    if result.measures:
        counted = result.values[result.counted()]
        counted = counted[counted["measure"].isin([m.key for m in result.measures])]
        table = Table(title="Measures per query", title_justify="left")
        for col in ("run", "query", "measure", "value"):
            table.add_column(col)
        for row in counted.itertuples(index=False):
            table.add_row(cell(row.system), cell(row.query_id), cell(row.measure),
                          num(row.value))
        console.print(table)
