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

from labeler.schema import GAINS, IDEALS, Gain, Ideal
from labeler.cli import main
from labeler.cli.options import InputFormats, format_option
from labeler._lean import declare_lean

declare_lean(__name__)   # `labeler score` on plain files starts without pandas

if TYPE_CHECKING:
    from labeler.scoring.results import ScoreResult


@main.command("score", epilog="""\
\b
Examples:
  labeler score --qrels human.qrels --run bm25.run --run dense.run --k 5 --k 10
  labeler score --qrels human.qrels --run bm25=run.bm25.txt --measure nDCG@10 --measure AP --trec
""")
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
@click.option("-m", "--measure", "measures", multiple=True, metavar="M",
              help="Another measure, named as ir_measures writes it: nDCG@k, nDCG, P@k, "
                   "R@k, RR, RR@k, AP, AP@k, Rprec, Bpref, Success@k, Judged@k, with a "
                   "relevance level for the binary ones as in P(rel=2)@10; trec_eval names "
                   "(P.10, map, recip_rank, bpref) work too. Repeat for several. With "
                   "--measure and no --k, only the measures are printed.")
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
@click.option("--grade-map", default=None, metavar="MAP",
              help='Map raw grades of the qrels before scoring, e.g. "-1=0,4=3".')
@click.option("--per-query", is_flag=True,
              help="Also print each query's value (with --trec: trec_eval -q's lines).")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="Also write the JSON object to this file (atomically).")
@click.option("--engine", type=click.Choice(["auto", "memory", "duckdb"]), default="auto",
              show_default=True,
              help="memory: rank in memory (fastest up to a few 10^7 rows); duckdb: stream "
                   "the runs out of core with DuckDB (any size; TREC, TSV or Parquet runs); "
                   "auto: duckdb when the runs are large for this machine's memory.")
@click.option("--memory-limit", default=None, metavar="SIZE",
              help="DuckDB's memory limit, e.g. 2GB (default: DuckDB's own, 80% of RAM).")
@click.option("--temp-dir", type=click.Path(file_okay=False), default=None,
              help="Where DuckDB spills to disk (default: a temporary directory).")
def score_command(qrels: str, runs: tuple[str, ...], ks: tuple[int, ...],
                  measures: tuple[str, ...], as_json: bool, as_trec: bool, complete: bool,
                  gain: Gain, ideal: Ideal, include_empty: bool, fmt: tuple[str, ...],
                  grade_map: str | None, per_query: bool, out: str | None, engine: str,
                  memory_limit: str | None, temp_dir: str | None) -> None:
    """NDCG@k (and any --measure) of each run against the qrels: mean, median, queries,
    judged share."""
    from labeler._lean import allow_pandas, without_pandas
    from labeler.errors import ConfigError
    from labeler.io.arrow_read import split_run_spec
    from labeler.io.guard import check_outputs
    from labeler.scoring.results import evaluate_files

    check_outputs({"--qrels": qrels, "--run": [_run_path(r, split_run_spec) for r in runs]},
                  {"--out": out})
    if as_json and as_trec:
        raise ConfigError("give --json or --trec, not both")
    formats = InputFormats(fmt, {"qrels": qrels, "run": list(runs)})
    grades = _grade_map(grade_map)
    with formats, without_pandas():   # plain run files are scored without pandas
        result = evaluate_files(qrels, list(runs), k=list(ks) or None, gain=gain,
                                ideal=ideal, include_empty=include_empty,
                                qrels_fmt=formats["qrels"], run_fmt=formats["run"],
                                grade_map=grades, measures=list(measures),
                                complete=complete, engine=engine,
                                memory_limit=memory_limit, temp_dir=temp_dir)
        if out or as_json:  # the JSON object (with its intervals) only when asked for
            payload = result.to_dict()
            if out:
                with allow_pandas():
                    from labeler.io.writers import write_json

                    write_json(payload, out)
            if as_json:
                click.echo(json.dumps(payload, ensure_ascii=False, allow_nan=False))
                return
        if as_trec:
            click.echo(result.to_trec(per_query), nl=False)
            return
        _print_table(result, per_query)


def _run_path(spec: str, split: Any) -> str:
    path = split(spec)[1]
    if path is None:   # a bad NAME=PATH: io names it
        from labeler.io import parse_run_arg

        return str(parse_run_arg(spec)[1])
    return str(path)


def _grade_map(spec: str | None) -> dict[str, int] | None:
    if spec is None:
        return None
    from labeler.io import parse_grade_map

    return parse_grade_map(spec)


def _print_table(result: ScoreResult, per_query: bool) -> None:
    from labeler.fmt import num

    out = _Tables()
    f = result.figures
    if f.summary_rows and result.show_k:
        out.table("NDCG@k", [("run", "l"), ("k", "r"), ("mean", "r"), ("median", "r"),
                             ("queries", "r"), ("IDCG 0", "r"), ("judged share", "r")],
                  [[system, str(k), num(mean), num(median), str(n), str(n_empty), num(judged)]
                   for system, k, mean, median, n, n_empty, judged, _ in f.summary_rows])
    if f.measure_rows:
        out.table("Measures", [("run", "l"), ("measure", "l"), ("mean", "r"), ("median", "r"),
                               ("queries", "r"), ("none relevant", "r")],
                  [[system, key, num(mean), num(median), str(n), str(n_empty)]
                   for system, key, mean, median, n, n_empty in f.measure_rows])
    if result.include_empty:
        out.text("Judged queries with no relevant chunk are counted (trec_eval's mean).")
    else:
        out.text("Queries with no relevant judged chunk are left out of mean and median.")
    if result.complete:
        out.text("Queries of the qrels a run lacks count 0 (trec_eval -c).")
    if per_query:
        _print_per_query(out, result)


class _Tables:
    """Tables as ``rich`` draws them: on a terminal through rich itself; in a pipe, when
    every cell is plain ASCII, drawn here in the same characters (rich's start-up is then
    not paid for the same text)."""

    def __init__(self) -> None:
        import sys

        self.plain = not sys.stdout.isatty()
        self.console: Any = None

    def _rich(self) -> Any:
        if self.console is None:
            from labeler.cli.tables import make_console

            self.console = make_console()
        return self.console

    def text(self, line: str) -> None:
        if self.plain:
            click.echo(line)
        else:
            self._rich().print(line)

    def table(self, title: str, columns: list[tuple[str, str]], rows: list[list[str]]
              ) -> None:
        from labeler.cli.tables import CONTROL, cell

        rows = [[CONTROL.sub("", str(c)) for c in row] for row in rows]
        if self.plain and all(c.isascii() and c.isprintable() for row in rows for c in row):
            click.echo(_draw(title, columns, rows))
            return
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for name, justify in columns:
            table.add_column(name, justify="left" if justify == "l" else "right")
        for row in rows:
            table.add_row(*(cell(c) for c in row))
        self._rich().print(table)


def _draw(title: str, columns: list[tuple[str, str]], rows: list[list[str]]) -> str:
    """A table in rich's ``HEAVY_HEAD`` box, as rich prints it without a terminal."""
    widths = [max([len(name), *(len(r[i]) for r in rows)]) for i, (name, _) in
              enumerate(columns)]

    def line(cells: list[str], bar: str) -> str:
        parts = [c.ljust(w) if j == "l" else c.rjust(w)
                 for c, w, (_, j) in zip(cells, widths, columns)]
        return bar + " " + f" {bar} ".join(parts) + " " + bar

    def rule(left: str, mid: str, right: str, fill: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    width = sum(widths) + 3 * len(widths) + 1
    lines = [title.ljust(width), rule("┏", "┳", "┓", "━"),
             line([name for name, _ in columns], "┃"), rule("┡", "╇", "┩", "━")]
    lines += [line(row, "│") for row in rows]
    lines.append(rule("└", "┴", "┘", "─"))
    return "\n".join(lines)


def _print_per_query(out: _Tables, result: ScoreResult) -> None:
    import numpy as np
    import pyarrow as pa

    from labeler.fmt import num

    f = result.figures
    if result.show_k:
        rows = np.flatnonzero(~np.isnan(f.pq_ndcg))
        qids = f.pq_query.take(pa.array(rows)).to_pylist()
        out.table("NDCG@k per query", [(c, "l") for c in ("run", "query", "k", "ndcg",
                                                            "judged share")],
                  [[f.systems[f.pq_system[i]], qid, str(f.pq_k[i]), num(f.pq_ndcg[i]),
                    num(f.pq_judged[i])] for i, qid in zip(rows.tolist(), qids)])
    if result.measures:
        wanted = [f.keys.index(m.key) for m in result.measures]
        rows = np.flatnonzero(f.counted(result.include_empty, result.complete)
                              & np.isin(f.v_measure, wanted))
        qids = f.v_query.take(pa.array(rows)).to_pylist()
        out.table("Measures per query", [(c, "l") for c in ("run", "query", "measure",
                                                              "value")],
                  [[f.systems[f.v_system[i]], qid, f.keys[f.v_measure[i]], num(f.v_value[i])]
                   for i, qid in zip(rows.tolist(), qids)])
