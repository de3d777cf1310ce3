"""`labeler reconcile` (LLM vs human agreement, calibration, merged labels) and `labeler sample`.

Usage::

    labeler reconcile --llm labels.jsonl --human human.qrels --out merged.jsonl \
        --report agreement.json --calibrate --calibration-out calibration.json
    labeler sample --labels labels.jsonl --n 200 --out to_annotate.csv --human human.qrels
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from labeler.errors import ConfigError
from labeler.cli import main
from labeler.cli.sheet_texts import _texts, _warn_ids_only
from labeler.cli.options import (HUMAN_MANY, InputFormats, bootstrap_options, format_option,
                                 read_humans, read_side)

_FILE = click.Path(dir_okay=False, path_type=Path)  # existence is checked by labeler.io


@main.command("reconcile", epilog="""\
\b
Examples:
  labeler reconcile --llm labels.jsonl --human human.qrels --out merged.jsonl \\
      --report agreement.json --audit audit.csv --pairs pairs.jsonl
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
@click.option("--report", type=_FILE, help="Write the agreement report as JSON.")
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
                  {"--out": out, "--report": report, "--qrels-out": qrels_out,
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
        texts = _texts(pairs_path, queries_path, corpus_path, llm if audit else None, formats)
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


@main.command("sample", epilog="""\
\b
Examples:
  labeler sample --labels labels.jsonl --n 200 --human human.qrels --pairs pairs.jsonl \\
      --out to_annotate.csv
  # whole random queries, for compare --ppi
  labeler sample --unit query --n 15 --labels labels.jsonl --pairs pairs.jsonl --out to_judge.csv
  # ten more queries of the same random order (to_judge-2.csv)
  labeler sample --more 10 --from to_judge.csv
  # anchors for a nightly job: 100 human-graded pairs, stratified by grade
  labeler sample --anchors 100 --human human.qrels --pairs pairs.jsonl --out anchors.jsonl
""")
@click.option("--labels", "labels_path", type=_FILE,
              help="LLM label records (or qrels) to sample from (with --more: the ones the "
                   "design names, unless given).")
@click.option("--n", "n", type=click.IntRange(min=1), default=200, show_default=True,
              help="How many pairs to propose (with --unit query: how many queries).")
@click.option("--unit", type=click.Choice(["pair", "query"]), default="pair", show_default=True,
              help="pair: a sample stratified by LLM grade and query (for agreement and "
                   "calibration). query: whole queries drawn uniformly at random, every "
                   "pooled pair of each (for `labeler compare --ppi`).")
@click.option("--out", type=_FILE, help="The sheet to annotate (CSV/JSONL/Parquet): query_id, "
              "query, chunk_id, chunk and an empty grade column. With --unit query, "
              "design.json (the random order, to draw more) goes next to it. With --more the "
              "default is the first sheet's name numbered, e.g. to_annotate-2.csv.")
@click.option("--more", "more", type=click.IntRange(min=1),
              help="Draw this many more queries of the same random order as an earlier "
                   "--unit query sample (given with --from): all of them together stay a "
                   "simple random sample, none drawn twice.")
@click.option("--from", "from_path", type=_FILE,
              help="With --more: the earlier sheet, or its design.json.")
@click.option("--human", "human_paths", type=_FILE, multiple=True,
              help="Human qrels (a file or irds:<id>): pairs already labelled are skipped"
                   + HUMAN_MANY)
@click.option("--pairs", "pairs_path", type=_FILE, help="Pairs file for the query/chunk texts.")
@click.option("--queries", "queries_path", type=_FILE,
              help="Query texts (instead of --pairs; a file or irds:<id>), with --corpus.")
@click.option("--corpus", "corpus_path", type=_FILE,
              help="Chunk texts (instead of --pairs; a file, or irds:<id>: only the sampled "
                   "documents are fetched), with --queries.")
@format_option("labels", "human", "pairs", "queries", "corpus")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Random seed of the draw: the same seed and labels give the same sheet.")
@click.option("--by", default="grade,query_id", show_default=True, metavar="COLUMNS",
              help="Stratify equally over the first column, spread over the others.")
@click.option("--anchors", "anchors", type=click.IntRange(min=1), metavar="N",
              help="Draw N anchors for `labeler run` ([drift] anchors) from the --human "
                   "labels: equal shares of each human grade, spread over queries, with their "
                   "texts (--pairs, or --queries and --corpus). --labels is not needed.")
@click.option("--show-llm-grade", is_flag=True,
              help="Include the LLM's grade in the sheet (hidden by default: it anchors "
                   "annotators).")
@click.pass_context
def sample_command(ctx: click.Context, labels_path: Path | None, n: int, unit: str,
                   out: Path | None, more: int | None, from_path: Path | None,
                   human_paths: tuple[Path, ...], pairs_path: Path | None,
                   queries_path: Path | None, corpus_path: Path | None,
                   fmt: tuple[str, ...], seed: int, by: str, anchors: int | None,
                   show_llm_grade: bool) -> None:
    """Which pairs a human should label next (stratified by LLM grade and query, or whole
    random queries; --more draws more of the same random queries; --anchors draws a nightly
    job's anchors from human labels)."""
    if anchors is not None:
        from labeler.cli.sample_anchors import sample_anchors

        sample_anchors(anchors, human_paths, out, {"pairs": pairs_path, "queries": queries_path,
                                                  "corpus": corpus_path}, fmt, seed)
        return
    if more is not None or from_path is not None:
        from labeler.cli.sample_more import sample_more

        sample_more(ctx, more, from_path, labels_path, out, human_paths,
                    {"pairs": pairs_path, "queries": queries_path, "corpus": corpus_path},
                    fmt, show_llm_grade)
        return
    if labels_path is None or out is None:
        raise ConfigError("give --labels and --out (or --more with --from to extend a sample)")
    from labeler import io
    from labeler.reconciliation.agreement import read_human, read_llm
    from labeler.io.guard import check_outputs
    from labeler.reconciliation.sample import annotation_sheet, propose_sample

    check_outputs({"--labels": labels_path, "--human": list(human_paths), "--pairs": pairs_path,
                   "--queries": queries_path, "--corpus": corpus_path}, {"--out": out})
    formats = InputFormats(fmt, {"labels": labels_path, "human": list(human_paths),
                                 "pairs": pairs_path,
                                 "queries": queries_path, "corpus": corpus_path})
    with formats:
        labels = read_llm(labels_path, fmt=formats["labels"])
        texts = _texts(pairs_path, queries_path, corpus_path, labels, formats)
        done = (read_humans(read_human, human_paths, None, formats["human"])
                if human_paths else None)
    if unit == "query":
        from labeler.reconciliation.design import (DESIGN_FILE, Draw, draw_queries,
                                                   write_design)

        design_file = out.parent / DESIGN_FILE
        check_outputs({"--labels": labels_path}, {"--out": out, "design": design_file})
        sources = {k: v for k, v in (("pairs", pairs_path), ("queries", queries_path),
                                     ("corpus", corpus_path)) if v is not None}
        got = draw_queries(labels, n=n, seed=seed, exclude=done, pairs=texts,
                           labels_path=_relative(labels_path, out.parent),
                           texts_paths={k: _relative(v, out.parent) for k, v in
                                        sources.items()})
        drawn = got.pairs
        _warn_ids_only(drawn)
        io.write_table(annotation_sheet(drawn, show_llm_grade), out)
        design = got.design.model_copy(update={"draws": [Draw(n=n, sheet=out.name)]})
        write_design(design, design_file)
        click.echo(f"{len(drawn)} pairs of {drawn['query_id'].nunique()} randomly drawn "
                   f"queries to label -> {out}")
        click.echo(f"the random order ({len(design.permutation)} queries, {design.left} left "
                   f"to draw with --more) -> {design_file}")
        return
    picked = propose_sample(labels, n=n, seed=seed, exclude=done,
                            by=[c.strip() for c in by.split(",") if c.strip()],
                            pairs=texts)
    _warn_ids_only(picked)
    io.write_table(annotation_sheet(picked, show_llm_grade), out)
    per_grade = picked["llm_grade"].value_counts().sort_index()
    spread = ", ".join(f"{int(g)}: {int(c)}" for g, c in per_grade.items())
    click.echo(f"{len(picked)} pairs from {picked['query_id'].nunique()} queries to label "
               f"-> {out}  (by LLM grade {spread})")


def _relative(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when it is near (a design stays valid when its folder
    moves with its inputs), else absolute; an ``irds:<id>`` as it is."""
    import os

    if str(path).startswith("irds:"):
        return str(path)
    try:
        rel = os.path.relpath(path.resolve(), base.resolve())
    except ValueError:  # another drive
        return str(path.resolve())
    return rel if Path(rel).parts[:3].count("..") < 3 else str(path.resolve())
