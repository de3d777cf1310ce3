"""`labeler plan`: how many queries must people label for intervals of at most ±W?

Usage::

    labeler plan --human human.qrels --llm labels.jsonl --run a.run --run b.run \\
        --half-width 0.05 --minutes-per-query 20
    labeler plan ... --half-width 0.03 --per-pair --json
"""

from __future__ import annotations

import click

from labeler.cli import main
from labeler.cli.options import (HUMAN_MANY, InputFormats, deprecated_alias, echo_result,
                                 format_option,
                                 read_humans, read_side)
from labeler.schema import GAINS, Gain


@main.command("plan", epilog="""\
\b
Examples:
  # 15 random queries judged so far (labeler sample --unit query); how many for ±0.05?
  labeler plan --human to_judge.csv --llm labels.jsonl --run bm25.run --run dense.run \\
      --half-width 0.05 --minutes-per-query 20
  labeler plan --human to_judge.csv --llm labels.jsonl --run bm25.run --run dense.run \\
      --half-width 0.03 --per-pair --json
""")
@click.option("--human", "human_paths", required=True, multiple=True, metavar="QRELS",
              help="Human labels of the queries labelled so far (a random sample of whole "
                   "queries, `labeler sample --unit query`; at least 5)" + HUMAN_MANY)
@click.option("--llm", "llm_path", required=True, metavar="LABELS",
              help="LLM labels of every query: label records (failed rows left out) or qrels.")
@click.option("--run", "run_paths", required=True, multiple=True, metavar="[NAME=]RUN",
              help="A run; repeat for several runs. NAME=PATH names the run.")
@click.option("--half-width", "half_width", required=True, metavar="W",
              type=click.FloatRange(0, 1, min_open=True),
              help="The ± wanted on each run's mean NDCG@k (95% interval), e.g. 0.05.")
@click.option("--per-pair", "pairs", is_flag=True,
              help="Plan for every difference between two runs too (usually needs more).")
@deprecated_alias("--pairs", "pairs", "--per-pair", is_flag=True)
@click.option("--design", "design_path", metavar="DESIGN", default=None,
              help="The sample's design.json (or a sheet next to it): more queries are "
                   "counted in its random order, and the command to draw them named. "
                   "Default: the design.json next to a --human sheet, if there is one.")
@click.option("--minutes-per-query", "minutes", metavar="M",
              type=click.FloatRange(0, min_open=True),
              help="How long a person takes to label one query's pairs: adds hours.")
@click.option("-k", "--k", "k", type=click.IntRange(min=1), default=10, show_default=True,
              help="Cut-off of NDCG@k.")
@click.option("--gain", type=click.Choice(GAINS), default="linear", show_default=True,
              help="Gain of a grade: rel, or 2^rel − 1.")
@click.option("--grade-map-human", metavar="MAP", default=None,
              help="Map raw human grades, e.g. '-1=0,4=3'.")
@click.option("--grade-map-llm", metavar="MAP", default=None,
              help="Map raw LLM grades, e.g. '4=3'.")
@format_option("human", "llm", "run")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def plan_cmd(human_paths: tuple[str, ...], llm_path: str, run_paths: tuple[str, ...],
             half_width: float,
             pairs: bool, design_path: str | None, minutes: float | None, k: int, gain: Gain,
             grade_map_human: str | None, grade_map_llm: str | None, fmt: tuple[str, ...],
             as_json: bool) -> None:
    """How many queries people must label so that every run's prediction-powered interval
    (with --per-pair: every difference's) is at most ±W, and how many without the LLM labels.

    Plans from the spread of human − LLM NDCG on the queries labelled so far, with a
    margin for how little a few queries say about it: labelling the number named reaches
    ±W in at least 80% of cases.
    """
    from labeler import io
    from labeler.io import parse_run_arg
    from labeler.io.guard import check_outputs
    from labeler.reconciliation.plan import plan

    check_outputs({"--human": list(human_paths), "--llm": llm_path,
                   "--run": [parse_run_arg(r)[1] for r in run_paths]})

    def qrels(path: str, grade_map: object = None, fmt: str | None = None) -> object:
        return io.read_qrels(path, fmt, grade_map, any_grade=True)  # type: ignore[arg-type]

    formats = InputFormats(fmt, {"human": list(human_paths), "llm": llm_path,
                                 "run": list(run_paths)})
    with formats:
        human = read_humans(qrels, human_paths, grade_map_human, formats["human"])
        llm = read_side(qrels, llm_path, grade_map_llm, "--grade-map-llm", formats["llm"])
        runs = io.read_runs(list(run_paths), formats["run"])
    result = plan(human=human, llm=llm, runs=runs, half_width=half_width, k=k, pairs=pairs,
                  minutes_per_query=minutes, gain=gain,
                  design=design_path or _design_next_to(human_paths))
    echo_result(result, as_json)


def _design_next_to(paths: tuple[str, ...]) -> str | None:
    """The design.json next to the first --human sheet that has one (the sheets of
    ``labeler sample --unit query``)."""
    from pathlib import Path

    from labeler.reconciliation.design import DESIGN_FILE

    for p in paths:
        if str(p).startswith("irds:"):
            continue
        d = Path(p).parent / DESIGN_FILE
        if d.is_file():
            return str(d)
    return None
