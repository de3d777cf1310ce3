"""`labeler compare`: NDCG of runs under human vs LLM labels.

Usage::

    labeler compare --human h.qrels --llm labels.jsonl --run a.run --run b.run --json
    labeler compare --human h.qrels --llm l.qrels --run a.run --report out/ --agreement rec.json
"""

from __future__ import annotations

from typing import Any

import click

from labeler.schema import GAINS, Gain
from labeler.cli import main
from labeler.cli.options import (HUMAN_MANY, InputFormats, echo_result, format_option, read_humans,
                                 read_side, stats_options, stats_settings)
from labeler.cli.pair_progress import PairProgress

DEFAULT_TITLE = "Human vs LLM labels"


@main.command("compare", epilog="""\
\b
Examples:
  labeler compare --human human.qrels --llm labels.jsonl --run bm25.run --run dense.run \\
      --report report/
  # labels but no runs: measure the labels themselves
  labeler reconcile --llm labels.jsonl --human human.qrels --out merged.jsonl \\
      --report-json agreement.json
  labeler judges --human human.qrels --llm labels.jsonl --report judges/
""")
@click.option("--human", "human_paths", required=True, multiple=True, metavar="QRELS",
              help="Human labels: TREC qrels, CSV, JSONL, Parquet or irds:<id> (an "
                   "ir_datasets dataset's qrels)" + HUMAN_MANY)
@click.option("--llm", "llm_path", required=True, metavar="LABELS",
              help="LLM labels: label records (failed rows left out) or any qrels form.")
@click.option("--run", "run_paths", multiple=True, metavar="[NAME=]RUN",
              help="A run (TREC run, CSV, JSONL or Parquet; at least one); repeat for several "
                   "runs. NAME=PATH names the run (the name wins over the file's tag).")
@click.option("--k", "ks", type=click.IntRange(min=1), multiple=True,
              help="Cut-off of NDCG@k (and of the judged share). Default 10; one per "
                   "comparison.")
@click.option("-m", "--measure", default=None, metavar="M",
              help="Compare by this measure instead of NDCG@k, named as ir_measures writes "
                   "it: nDCG@k, P@k, R@k, RR, AP, AP@k, Judged@k, P(rel=2)@10 ...")
@format_option("human", "llm", "run", "queries")
@click.option("--gain", type=click.Choice(GAINS), default="linear",
              show_default=True, help="Gain of a grade: rel, or 2^rel − 1.")
@click.option("--include-empty", is_flag=True,
              help="Count queries without any relevant chunk as 0 (trec_eval's mean).")
@click.option("--grade-map-human", metavar="MAP", default=None,
              help="Map raw human grades, e.g. '-1=0,4=3'.")
@click.option("--grade-map-llm", metavar="MAP", default=None,
              help="Map raw LLM grades, e.g. '4=3'.")
@click.option("--queries", "queries_path", metavar="FILE", default=None,
              help="Query texts (TSV id<TAB>text, CSV, JSONL, or irds:<id>) for the "
                   "most-changed table.")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many of the most-changed queries to list.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--report", "report_dir", metavar="DIR", default=None,
              help="Write report.json, report.md and report.html into DIR.")
@click.option("--agreement", "agreement_path", metavar="REPORT.json", default=None,
              help="A `labeler reconcile --report-json` JSON: adds the confusion matrix to "
                   "the report.")
@click.option("--title", default=DEFAULT_TITLE, show_default=True, metavar="TITLE",
              help="Title of the report.")
@click.option("--complete", is_flag=True,
              help="Count, as 0, a query of a label set that a run lacks (trec_eval -c, as in "
                   "`labeler score --complete`). Without it, runs are ranked only on the "
                   "queries every run scores under both label sets.")
@stats_options()
def compare_cmd(human_paths: tuple[str, ...], llm_path: str, run_paths: tuple[str, ...],
                ks: tuple[int, ...], measure: str | None, fmt: tuple[str, ...], gain: Gain,
                include_empty: bool, grade_map_human: str | None, grade_map_llm: str | None,
                queries_path: str | None, top: int, as_json: bool, report_dir: str | None,
                agreement_path: str | None, title: str, complete: bool, **stats: Any) -> None:
    """How much NDCG and the order of the runs change between human and LLM labels, and
    which differences between runs are real under each."""
    if not run_paths:  # the label-only case: say where to go instead of "missing --run"
        raise click.UsageError(
            "compare ranks runs under both label sets: give at least one --run. With labels "
            "but no runs, measure the labels themselves: `labeler reconcile --llm LABELS "
            "--human QRELS --out merged.jsonl --report-json agreement.json` (agreement, confusion "
            "matrix) or `labeler judges --human QRELS --llm LABELS --report judges/` (several "
            "label sets side by side).")
    from labeler import io
    # imports scipy and the scorer: only when run
    from labeler.reconciliation.comparison import compare
    from labeler.errors import ConfigError
    from labeler.io import parse_run_arg
    from labeler.io.guard import check_outputs
    from labeler.report.comparison import load_agreement, write_report

    check_outputs({"--human": list(human_paths), "--llm": llm_path,
                   "--run": [parse_run_arg(r)[1] for r in run_paths],
                   "--queries": queries_path, "--agreement": agreement_path},
                  dirs={"--report": report_dir})
    if len(set(ks)) > 1:
        raise ConfigError(f"compare reports one cut-off at a time, got --k "
                          f"{' --k '.join(map(str, ks))}: run it once per k (labeler score "
                          "scores several k at once)")
    k = ks[0] if ks else 10

    def qrels(path: str, grade_map: object = None, fmt: str | None = None) -> object:
        return io.read_qrels(path, fmt, grade_map, any_grade=True)  # type: ignore[arg-type]

    formats = InputFormats(fmt, {"human": list(human_paths), "llm": llm_path,
                                 "run": list(run_paths),
                                 "queries": queries_path})
    with formats:   # any integer grade scores
        human = read_humans(qrels, human_paths, grade_map_human, formats["human"])
        llm = read_side(qrels, llm_path, grade_map_llm, "--grade-map-llm", formats["llm"])
        runs = io.read_runs(list(run_paths), formats["run"])
        queries = io.read_queries(queries_path, formats["queries"]) if queries_path else None
    agreement = load_agreement(agreement_path) if agreement_path else None
    options = stats_settings(stats)
    with PairProgress() as progress:
        result = compare(human=human, llm=llm, runs=runs, k=k, gain=gain,
                         include_empty=include_empty, top=top, queries=queries, stats=options,
                         measure=measure, complete=complete, progress=progress)
    echo_result(result, as_json)
    if report_dir:
        from labeler.pipeline.provenance import judge_summary
        judge = judge_summary(io.read_labels(llm_path, formats["llm"], any_grade=True),
                              source=llm_path)
        paths = write_report(result, report_dir, agreement=agreement, title=title, judge=judge)
        click.echo(str(paths["html"]), err=as_json)
