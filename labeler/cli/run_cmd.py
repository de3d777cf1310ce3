"""`labeler run CONFIG.toml`: a scheduled job (label, reconcile, score, compare, drift).

Logging is configured here, for the command's duration only: records of the ``labeler``
loggers go to stderr (and, from the pipeline, to ``<run dir>/run.log``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from labeler.errors import DriftError
from labeler.cli import as_flags, main

if TYPE_CHECKING:
    from labeler.pipeline.config import Config
    from labeler.pipeline.nightly import RunOutcome

LEVELS = ("debug", "info", "warning", "error")


@contextlib.contextmanager
def stderr_logging(level: str) -> Iterator[None]:
    """Records of the ``labeler`` loggers at ``level`` or above go to stderr meanwhile."""
    logger = logging.getLogger("labeler")
    from labeler.redact import RedactingFilter

    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s",
                                           "%H:%M:%S"))
    handler.setLevel(level.upper())
    old = logger.level
    logger.setLevel(level.upper())
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def shown(path: Path) -> str:
    """``path`` relative to the working directory when inside it, else absolute."""
    try:
        return os.path.relpath(path) if path.resolve().is_relative_to(Path.cwd()) else str(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def summary_text(outcome: RunOutcome) -> str:
    """The short summary both commands print: labels, agreement, runs × human/llm/delta.

    Run tags come from the input files: control characters are stripped from every line."""
    from labeler.fmt import num as fmt_num
    from labeler.report.escape import plain

    lines = [f"run {outcome.run_dir.name}: " + outcome.labels.summary.render()]
    a = outcome.agreement
    if a:
        lines.append(f"agreement with the human labels on {a['n']} pairs: exact "
                     f"{fmt_num(a['exact_agreement'])}, Cohen's kappa {fmt_num(a['cohen_kappa'])} "
                     f"(quadratic {fmt_num(a['cohen_kappa_quadratic'])}), Krippendorff's alpha "
                     f"{fmt_num(a['krippendorff_alpha_ordinal'])}, LLM − human "
                     f"{fmt_num(a['mean_signed_difference'], signed=True)}")
    c = outcome.comparison
    if c is not None:
        d = c.to_dict()
        ppi = bool(c.significance.options.ppi)  # the PPI estimate; delta on the labelled queries
        width = max([len("run"), *map(len, d["runs"])])
        lines.append(f"{'run':<{width}}  {'NDCG@' + str(d['k']) + ' human':>16}  "
                     f"{'llm':>7}  {'delta':>8}" + ("  (human: PPI estimate; delta: LLM − "
                                                   "human on the labelled queries)" if ppi else ""))
        for tag, r in d["runs"].items():
            human = (r.get("ppi") or {}).get("estimate") if ppi else r["human"]
            delta = (r.get("labelled") or {}).get("delta") if ppi else r["delta"]
            lines.append(f"{tag:<{width}}  {fmt_num(human):>16}  {fmt_num(r['llm']):>7}  "
                         f"{fmt_num(delta, signed=True):>8}")
        lines.append(f"order of the runs, human vs LLM labels: Kendall's tau "
                     f"{fmt_num(d['kendall_tau'])}, Spearman's rho {fmt_num(d['spearman_rho'])}")
        if ppi:
            from labeler.report.text import ppi_verdicts_line
            lines.append(f"{ppi_verdicts_line(d, c.significance.options.alpha)}: {d['headline']}")
        else:
            lines.append(f"verdicts {c.significance.counts_line()}: {d['headline']}")
        planning = getattr(c, "planning_line", None)
        if planning:
            lines.append(planning)
    elif outcome.scores:
        for tag, measures in outcome.scores.to_dict().get("runs", {}).items():
            lines.append(f"{tag}: " + ", ".join(f"{m} {fmt_num(v.get('mean'))}"
                                                for m, v in measures.items()))
    if outcome.certification is not None:
        lines.extend(outcome.certification.to_text().rstrip("\n").splitlines())
    drift = outcome.drift
    if drift.previous is not None or drift.judge is not None:
        lines.extend(drift.to_text().splitlines())
    if outcome.report_html is not None:
        lines.append(f"report: {shown(outcome.report_html)}")
    lines.append(f"run directory: {shown(outcome.run_dir)}")
    return "\n".join(plain(line) for line in lines)


def finish(ctx: click.Context, outcome: RunOutcome, fail_on_drift: bool) -> None:
    """Print a run's summary and warnings, and exit with its status."""
    click.echo(summary_text(outcome))
    if outcome.n_failed:
        click.echo(f"labeler: {outcome.n_failed} pairs failed (status 'failed' in "
                   f"labels.jsonl, reason in 'error')", err=True)
    if outcome.drift.judge_changed and outcome.exit_code == 4:
        accepted = outcome.drift.judge.accepted if outcome.drift.judge else None
        click.echo(f"labeler: the judge changed since the accepted run {accepted}: latest "
                   f"stays on it; read the report, then accept this run with: labeler run "
                   f"--accept {shown(outcome.run_dir)}", err=True)
        ctx.exit(4)
    if fail_on_drift and outcome.drift.drifted:
        raise DriftError(f"drift past the thresholds ({len(outcome.drift.reasons)} crossed): "
                         f"see the table above and {shown(outcome.run_dir / 'drift.json')}")
    ctx.exit(outcome.exit_code)


@contextlib.contextmanager
def _format_keys(cfg: Config) -> Iterator[None]:
    """A library hint to give a file's format names the config key that does it."""
    from labeler.errors import InputError
    from labeler.io import parse_run_arg
    from labeler.io._base import FORMAT_HINT

    keys = {str(Path(getattr(cfg.inputs, name))): f"format = {{{name} = FORMAT}} in [inputs]"
            for name in ("pairs", "queries", "corpus") if getattr(cfg.inputs, name)}
    keys.update({str(Path(parse_run_arg(r)[1])): "format = {runs = FORMAT} in [inputs]"
                 for r in cfg.inputs.runs})
    if cfg.human is not None:
        for p in cfg.human.paths:
            keys[str(Path(p))] = "format = FORMAT in [human]"
    try:
        yield
    except InputError as exc:
        key = keys.get(str(Path(exc.path))) if exc.path else None
        if key is None or FORMAT_HINT not in exc.message:
            raise
        raise InputError(exc.message.replace(FORMAT_HINT, f", or give it in the config: {key}"),
                         path=exc.path, line=exc.line, row=exc.row) from None


@main.command("run", epilog="""\
\b
Examples:
  labeler run --check nightly.toml     # check the config and inputs; no judge call
  labeler run nightly.toml --fail-on-drift
  labeler run --accept labeler-runs/runs/20261121T023000Z   # latest -> that run
""")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (overrides out_dir in the config).")
@click.option("--fail-on-drift", is_flag=True,
              help="Exit 4 when the run drifted past the thresholds from the previous one.")
@click.option("--drift-threshold", type=click.FloatRange(min=0), metavar="X",
              help="Largest allowed |change| of a run's mean NDCG@k (overrides "
                   "drift.max_ndcg_delta).")
@click.option("--log-level", type=click.Choice(LEVELS), default="info", show_default=True,
              help="Log level on stderr (the run's run.log always records info and above).")
@click.option("--check", is_flag=True,
              help="Only check the config, its input files, output locations and judge "
                   "settings (the judge is not called); exit 0 when all is well, else 2.")
@click.option("--accept", "accept", type=click.Path(file_okay=False, path_type=Path),
              metavar="RUN_DIR",
              help="Accept a finished run whose judge changed (exit 4): point latest at it, "
                   "so later runs compare with it. Calls no judge; CONFIG is optional.")
@click.pass_context
def run_command(ctx: click.Context, config: Path | None, out_dir: Path | None,
                fail_on_drift: bool, drift_threshold: float | None, log_level: str,
                check: bool, accept: Path | None) -> None:
    """Run the whole pipeline from one TOML config (for scheduled jobs).

    Writes OUT/runs/<UTC timestamp>/ (labels, merged labels, agreement, scores, comparison,
    report/, drift.json, manifest.json, run.log) and points OUT/latest at it. Exit 0 ok,
    2 bad config or another run holds the lock, 3 some pairs failed, 4 the judge changed
    since the accepted run (anchors; latest stays until --accept) or drift (with
    --fail-on-drift), 5 batches still running (judge.batch_wait; run it again to collect).
    """
    from labeler.labelling.batchfile import BatchFileWritten, BatchNotReady
    from labeler.pipeline.config import load_config
    from labeler.pipeline.check import check_run
    from labeler.pipeline.nightly import run_pipeline

    if accept is not None:
        _accept(config, out_dir, accept)
        return
    if config is None:
        raise click.UsageError("give the CONFIG file (or --accept RUN_DIR)")
    cfg = load_config(config)
    updates: dict[str, Any] = {}
    if out_dir is not None:
        updates["out_dir"] = out_dir.resolve()
    if drift_threshold is not None:
        updates["drift"] = cfg.drift.model_copy(update={"max_ndcg_delta": drift_threshold})
    cfg = cfg.model_copy(update=updates)
    if check:
        from labeler.pipeline.check import check_config

        checked = check_run(cfg)                  # inputs, outputs, lock, judge settings
        with _format_keys(cfg):
            click.echo(check_config(cfg).render())   # every input read as the job would
        for line in checked:
            click.echo(line)
        click.echo(f"{shown(config)}: ready to run")
        return
    with stderr_logging(log_level), _format_keys(cfg):
        try:
            outcome = run_pipeline(cfg, config_path=config.resolve(), progress=None)
        except (BatchNotReady, BatchFileWritten) as exc:  # exit 5 / 0: not finished yet
            click.echo(f"labeler: {as_flags(ctx.find_root(), exc)}", err=True)
            ctx.exit(exc.exit_code)
    finish(ctx, outcome, fail_on_drift)


def _accept(config: Path | None, out_dir: Path | None, run_dir: Path) -> None:
    """``--accept RUN_DIR``: point latest at the run (in CONFIG's output directory, if given)."""
    from labeler.pipeline.rundir import accept_run

    out = out_dir
    if out is None and config is not None:
        from labeler.pipeline.config import load_config

        out = load_config(config).out_dir
    run, before = accept_run(run_dir, out)
    was = f" (was {before.name})" if before is not None else ""
    click.echo(f"accepted {run.name}: latest -> {shown(run)}{was}; later runs compare with "
               "its labels, anchors and judge")
