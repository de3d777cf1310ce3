"""`labeler certify`: label in the design's order until the leaderboard's top is proven.

Usage::

    labeler certify --human sheet1.csv --human sheet2.csv --llm labels.jsonl \\
        --run a.run --run b.run --design sheets/design.json
    labeler certify ... --top 3 --json
"""

from __future__ import annotations

import click

from labeler.cli import main
from labeler.cli.options import InputFormats, echo_result, format_option
from labeler.schema import GAINS


@main.command("certify", epilog="""\
\b
Examples:
  # the queries of the design's first sheets are labelled; is the best run proven?
  labeler certify --human to_judge.csv --llm labels.jsonl --run bm25.run --run dense.run
  labeler certify --human sheet1.csv --human sheet2.csv --llm labels.jsonl \\
      --run bm25.run --run dense.run --run hybrid.run --design design.json --top 2 --json
""")
@click.option("--human", "human_paths", required=True, multiple=True, metavar="QRELS",
              help="Human labels of the queries labelled so far, a front of the design's "
                   "order; repeat for several sheets of one design.")
@click.option("--llm", "llm_path", required=True, metavar="LABELS",
              help="LLM labels of every query of the design: label records or qrels.")
@click.option("--run", "run_paths", required=True, multiple=True, metavar="[NAME=]RUN",
              help="A run; repeat for several runs. NAME=PATH names the run.")
@click.option("--design", "design_path", metavar="design.json", default=None,
              help="The sample design (`labeler sample --unit query` writes it next to the "
                   "sheet). Default: design.json next to the first --human file.")
@click.option("--top", type=click.IntRange(min=1), default=1, show_default=True,
              help="Certify the order of this many best runs.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="1 − level of the sequences, split over all runs and pairs.")
@click.option("-k", "--k", "k", type=click.IntRange(min=1), default=10, show_default=True,
              help="Cut-off of NDCG@k.")
@click.option("--gain", type=click.Choice(GAINS), default="linear", show_default=True,
              help="Gain of a grade: rel, or 2^rel − 1.")
@format_option("human", "llm", "run")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--report", "report_dir", metavar="DIR", default=None,
              help="Write report.json, report.md and report.html into DIR.")
def certify_cmd(human_paths: tuple[str, ...], llm_path: str, run_paths: tuple[str, ...],
                design_path: str | None, top: int, alpha: float, k: int, gain: str,
                fmt: tuple[str, ...], as_json: bool, report_dir: str | None) -> None:
    """Which runs are proven better, however often you look: confidence sequences of
    every run's mean NDCG@k and every pair's difference that hold at every look.

    Label the design's queries in its random order and run this after each batch; it
    says which pairs are certified, whether the order of the best --top runs is, and
    which queries to label next.
    """
    from labeler import io
    from labeler.io import parse_run_arg
    from labeler.io.guard import check_outputs
    from labeler.reconciliation.certification import certify

    check_outputs({"--human": list(human_paths), "--llm": llm_path,
                   "--run": [parse_run_arg(r)[1] for r in run_paths], "--design": design_path},
                  dirs={"--report": report_dir})
    formats = InputFormats(fmt, {"human": list(human_paths), "llm": llm_path,
                                 "run": list(run_paths)})
    with formats:
        humans = [io.read_qrels(p, formats["human"], any_grade=True) for p in human_paths]
        for frame, path in zip(humans, human_paths):
            frame.attrs["path"] = path
        llm = io.read_qrels(llm_path, formats["llm"], any_grade=True)
        runs = io.read_runs(list(run_paths), formats["run"])
    from labeler.reconciliation.design import design_path as beside

    design = design_path if design_path is not None else str(beside(human_paths[0]))
    result = certify(human=humans, llm=llm, runs=runs, design=design, top=top, alpha=alpha,
                     k=k, gain=gain)
    echo_result(result, as_json)
    if report_dir:
        from labeler.report.certify import write_report

        paths = write_report(result.details(), report_dir)
        click.echo(str(paths["html"]), err=as_json)
