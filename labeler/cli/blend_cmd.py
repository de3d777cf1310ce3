"""`labeler blend`: one label set from several judges (mean, median or vote per pair).

Usage::

    labeler blend --llm a.jsonl --llm b.qrels --llm c.qrels --method mean --out blend.jsonl
"""

from __future__ import annotations

from pathlib import Path

import click

from labeler.cli import main
from labeler.cli.options import InputFormats, format_option, read_label_sets

_FILE = click.Path(dir_okay=False, path_type=Path)  # existence is checked by labeler.io


@main.command("blend", epilog="""\
\b
Examples:
  labeler blend --llm gpt4o.jsonl --llm llama.jsonl --llm qwen.jsonl --method mean \\
      --out blend.jsonl
""")
@click.option("--llm", "llm_specs", required=True, multiple=True, metavar="[NAME=]LABELS",
              help="A judge's labels (records or qrels); repeat for every judge.")
@click.option("--method", type=click.Choice(["mean", "median", "vote"]), default="mean",
              show_default=True, help="Per pair: the mean rounded half up, the lower median, "
              "or the most frequent grade (ties to the lower).")
@click.option("--out", type=_FILE, required=True,
              help="Blended label records: .jsonl, .csv or .parquet (`source` names the sets).")
@click.option("--qrels-out", type=_FILE, help="Also write the blended labels as TREC qrels.")
@click.option("--grade-map-llm", metavar="MAP", help="Map raw LLM grades, e.g. '5=3'.")
@format_option("llm")
def blend_cmd(llm_specs: tuple[str, ...], method: str, out: Path, qrels_out: Path | None,
              grade_map_llm: str | None, fmt: tuple[str, ...]) -> None:
    """One label set from several judges; a pair one set lacks is decided by the others."""
    from labeler import io
    from labeler.reconciliation.blend import blend
    from labeler.io.guard import check_outputs
    from labeler.reconciliation.leaderboard import named_sets
    from labeler.schema import STATUS, STATUS_OK

    llm_paths = list(named_sets(list(llm_specs)).values())
    check_outputs({"--llm": llm_paths}, {"--out": out, "--qrels-out": qrels_out})
    with InputFormats(fmt, {"llm": llm_paths}) as formats:
        sets = read_label_sets(llm_specs, grade_map_llm, formats["llm"])
    records = blend(sets, method=method)  # type: ignore[arg-type]
    io.write_labels(records, out)
    if qrels_out is not None:
        io.write_qrels(records, qrels_out)
    failed = int((records[STATUS] != STATUS_OK).sum())
    click.echo(f"labeler: blended {len(records)} pairs from {len(llm_specs)} label sets "
               f"({method}); {failed} pairs graded by no set -> {out}", err=True)
    if failed:
        click.get_current_context().exit(3)
