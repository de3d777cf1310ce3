"""`labeler reconcile`: LLM vs human agreement, calibration, merged labels.

Usage::

    labeler reconcile --llm labels.jsonl --human human.qrels --out merged.jsonl \
        --report-json agreement.json --calibrate --calibration-out calibration.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from labeler.errors import ConfigError
from labeler.cli import main
from labeler.cli.sheet_texts import sheet_texts
from labeler.cli.options import (HUMAN_MANY, InputFormats, bootstrap_options, deprecated_alias,
                                 format_option,
                                 read_humans, read_side)

_FILE = click.Path(dir_okay=False, path_type=Path)  # existence is checked by labeler.io


@main.command("reconcile", epilog="""\
\b
Examples:
  labeler reconcile --llm labels.jsonl --human human.qrels --out merged.jsonl \\
      --report-json agreement.json --audit audit.csv --pairs pairs.jsonl
  # fit a calibration, judged on held-out human labels
  labeler reconcile --llm labels.jsonl --human human.qrels --out merged.jsonl \\
      --calibrate --calibration-out calibration.json
""")
@click.option("--llm", "llm_path", type=_FILE, required=True,
              help="LLM label records (JSONL/CSV/Parquet) or any qrels form.")
@click.option("--human", "human_paths", type=_FILE, required=True, multiple=True,
              help="Human qrels (TREC qrels, a table with query_id, chunk_id, grade, or "
                   "irds:<id>)" + HUMAN_MANY)
@click.option("--out", type=_FILE, required=True,
              help="Merged label records (human where present, else LLM; `source` column).")
@click.option("--report-json", "report", type=_FILE, metavar="FILE",
              help="Write the agreement report as JSON.")
@deprecated_alias("--report", "report", "--report-json", type=_FILE)
@click.option("--qrels-out", type=_FILE, help="Also write the merged labels as TREC qrels.")
@click.option("--calibrate", "do_calibrate", is_flag=True,
              help="Fit an LLM→human grade mapping (judged on k-fold held-out labels) and "
                   "apply it to the LLM-only pairs.")
@click.option("--method", type=click.Choice(["thresholds", "distribution", "ordinal",
                                            "isotonic"]), default="thresholds",
              show_default=True, help="Calibration method; applied only where its held-out "
              "Krippendorff's alpha beats the raw grades.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Folds for the held-out evaluation of --calibrate.")
@click.option("--calibration-in", type=_FILE, help="Apply a saved calibration (JSON).")
@click.option("--calibration-out", type=_FILE, help="Save the fitted calibration (JSON).")
@click.option("--audit", type=_FILE, help="Write the strongest disagreements (CSV/JSONL).")
@click.option("--min-gap", type=click.IntRange(1, 3), default=2, show_default=True,
              help="Smallest |LLM - human| listed in --audit.")
@click.option("--pairs", "pairs_path", type=_FILE, help="Pairs file: query and chunk texts "
              "for the audit.")
@click.option("--queries", "queries_path", type=_FILE,
              help="Query texts for the audit (instead of --pairs; a file or irds:<id>), with "
                   "--corpus.")
@click.option("--corpus", "corpus_path", type=_FILE,
              help="Chunk texts for the audit (instead of --pairs; a file, or irds:<id>: only "
                   "the audited documents are fetched), with --queries.")
@click.option("--grade-map-llm", metavar="MAP", help="Map raw LLM grades, e.g. '4=3,5=3'.")
@click.option("--grade-map-human", metavar="MAP", help="Map raw human grades, e.g. '-1=0'.")
@format_option("llm", "human", "pairs", "queries", "corpus")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed for the bootstrap and the calibration folds.")
@bootstrap_options()
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def reconcile_command(llm_path: Path, human_paths: tuple[Path, ...], out: Path, report: Path | None,
                      qrels_out: Path | None, do_calibrate: bool, method: str, folds: int,
                      calibration_in: Path | None, calibration_out: Path | None,
                      audit: Path | None, min_gap: int, pairs_path: Path | None,
                      queries_path: Path | None, corpus_path: Path | None,
                      grade_map_llm: str | None, grade_map_human: str | None,
                      fmt: tuple[str, ...], seed: int, bootstrap: int, bootstrap_unit: str,
                      as_json: bool) -> None:
    """How far LLM labels agree with human labels, and the merged label set."""
    from labeler.reconciliation.agreement import read_human, read_llm
    from labeler.reconciliation.calibrate import Calibration
    from labeler.io.guard import check_outputs
    from labeler.reconciliation.stage import reconcile

    check_outputs({"--llm": llm_path, "--human": list(human_paths), "--pairs": pairs_path,
                   "--queries": queries_path, "--corpus": corpus_path,
                   "--calibration-in": calibration_in},
                  {"--out": out, "--report-json": report, "--qrels-out": qrels_out,
                   "--calibration-out": calibration_out, "--audit": audit})
    if calibration_out and not do_calibrate:
        raise ConfigError("--calibration-out needs --calibrate")
    if do_calibrate and calibration_in:
        raise ConfigError("use either --calibrate (fit a new calibration) or --calibration-in "
                          "(apply a saved one), not both")
    formats = InputFormats(fmt, {"llm": llm_path, "human": list(human_paths),
                                 "pairs": pairs_path,
                                 "queries": queries_path, "corpus": corpus_path})
    with formats:
        llm = read_side(read_llm, llm_path, grade_map_llm, "--grade-map-llm", formats["llm"])
        human = read_humans(read_human, human_paths, grade_map_human, formats["human"])
        texts = sheet_texts(pairs_path, queries_path, corpus_path, llm if audit else None, formats)
        rec = reconcile(llm=llm, human=human,
                        calibrate=method if do_calibrate else False,  # type: ignore[arg-type]
                        calibration=Calibration.load(calibration_in) if calibration_in else None,
                        folds=folds, bootstrap=bootstrap, seed=seed,
                        unit=bootstrap_unit, audit=audit is not None,  # type: ignore[arg-type]
                        min_gap=min_gap, pairs=texts)
    if rec.agreement is None:
        from labeler.reconciliation.agreement import joined

        joined(llm=llm, human=human)  # raises the error that says why nothing overlaps
    extra: dict[str, Any] = {"llm": str(llm_path),
                             "human": " + ".join(str(p) for p in human_paths)}
    data: dict[str, Any] = rec.to_dict()
    if calibration_in and "calibration" in data:
        extra["calibration"] = {"loaded_from": str(calibration_in), **data["calibration"]}
    extra["merged"] = {"path": str(out), **data["merged"]}
    if audit and rec.audit is not None:
        extra["audit"] = {"path": str(audit), "min_gap": min_gap, "n": len(rec.audit)}
    data.update(extra)

    # Write everything only once every step has succeeded.
    rec.write(merged=out, qrels=qrels_out, audit=audit, calibration=calibration_out,
              report=report, report_extra=extra)

    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        click.echo(rec.to_text())
        click.echo(f"merged labels: {out} ({_counts_text(data['merged'])})")
        if audit:
            click.echo(f"audit: {audit} ({data['audit']['n']} pairs with |LLM - human| >= "
                       f"{min_gap})")
    if audit and texts is None:
        click.echo("labeler: warning: the audit has ids only, no query or chunk texts: give "
                   "--pairs, or --queries and --corpus", err=True)
    if data["merged"].get("failed"):
        click.echo(f"labeler: warning: {data['merged']['failed']} pair(s) have neither a human "
                   "grade nor a usable LLM grade (status failed in the merged labels)", err=True)


def _counts_text(merged: dict[str, Any]) -> str:
    parts = [f"{merged[k]} {k}" for k in ("human", "llm", "llm-calibrated", "failed")
             if merged.get(k)]
    return ", ".join(parts) or "empty"
