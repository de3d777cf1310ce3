"""`labeler judges`: several judges against the same human labels, in one table and report.

Usage::

    labeler judges --human human.qrels --llm gpt4o=a.jsonl --llm llama=b.qrels --run x.run \
        --report judges/
"""

from __future__ import annotations


import click

from labeler.cli import main
from labeler.cli.options import (HUMAN_MANY, InputFormats, bootstrap_options, echo_result,
                                 format_option, read_humans, read_label_sets)


@main.command("judges", epilog="""\
\b
Examples:
  labeler judges --human human.qrels --llm gpt4o=gpt4o.jsonl --llm llama=llama.jsonl \\
      --run bm25.run --run dense.run --report judges/
""")
@click.option("--human", "human_paths", required=True, multiple=True, metavar="QRELS",
              help="Human labels: TREC qrels, CSV, JSONL, Parquet or irds:<id> (an "
                   "ir_datasets dataset's qrels)" + HUMAN_MANY)
@click.option("--llm", "llm_specs", required=True, multiple=True, metavar="[NAME=]LABELS",
              help="A judge's labels (records or qrels); repeat for every judge. NAME= names "
                   "it (default: the file name).")
@click.option("--run", "run_paths", multiple=True, metavar="[NAME=]RUN",
              help="Runs: adds each judge's Kendall's tau of the run order vs the humans'. "
                   "NAME=PATH names a run.")
@click.option("--k", "k", type=click.IntRange(min=1), default=10, show_default=True,
              help="Cut-off of the NDCG@k that orders the runs.")
@click.option("--grade-map-human", metavar="MAP", help="Map raw human grades, e.g. '-1=0'.")
@click.option("--grade-map-llm", metavar="MAP", help="Map raw LLM grades, e.g. '5=3'.")
@format_option("human", "llm", "run")
@bootstrap_options()
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the bootstrap.")
@click.option("--alpha", "alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Significance level of the paired tests of the best judge against each "
                   "other judge (Holm-adjusted over the comparisons).")
@click.option("--top", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many of the most disputed pairs to list.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--report", "report_dir", metavar="DIR",
              help="Write report.json, report.md and report.html into DIR.")
def judges_cmd(human_paths: tuple[str, ...], llm_specs: tuple[str, ...],
               run_paths: tuple[str, ...], k: int,
               grade_map_human: str | None, grade_map_llm: str | None,
               fmt: tuple[str, ...], bootstrap: int, bootstrap_unit: str,
               seed: int, alpha: float, top: int, as_json: bool, report_dir: str | None
               ) -> None:
    """Several judges' labels against the same human labels, ranked by Krippendorff's alpha.

    Every judge is measured on the pairs that all of them and the humans judged. The best
    judge is compared with each other judge on those pairs (the difference of alpha, a paired
    bootstrap interval, Holm over the comparisons): the output says which judges are not shown
    worse than the best.
    """
    from labeler import io
    from labeler.reconciliation.agreement import read_human
    from labeler.io.guard import check_outputs
    from labeler.report.judges import write_judges_report
    from labeler.reconciliation.leaderboard import leaderboard, named_sets

    check_outputs({"--human": list(human_paths),
                   "--llm": list(named_sets(list(llm_specs)).values()),
                   "--run": list(run_paths)}, dirs={"--report": report_dir})

    llm_paths = list(named_sets(list(llm_specs)).values())
    formats = InputFormats(fmt, {"human": list(human_paths), "llm": llm_paths,
                                 "run": list(run_paths)})
    with formats:
        human = read_humans(read_human, human_paths, grade_map_human, formats["human"])
        sets = read_label_sets(llm_specs, grade_map_llm, formats["llm"])
        runs = io.read_runs(list(run_paths), formats["run"]) if run_paths else None
    board = leaderboard(human=human, llm=sets, runs=runs, k=k, bootstrap=bootstrap, seed=seed,
                        unit=bootstrap_unit, top=top,  # type: ignore[arg-type]
                        progress=None, alpha=alpha)
    echo_result(board, as_json)
    if report_dir:
        paths = write_judges_report(board, report_dir)
        click.echo(str(paths["html"]), err=as_json)
