"""The whole job from one config: pool → label → reconcile → score → compare → report → drift.

:func:`run_pipeline` holds the output directory's lock, writes every output of the run into a
dated run directory (see :mod:`labeler.pipeline.rundir`), compares it with the previous run (drift)
and points ``latest`` at it. Only the name of the API key's variable is ever recorded.

Usage::

    from labeler.pipeline.config import load_config
    from labeler.pipeline.nightly import run_pipeline
    outcome = run_pipeline(load_config("nightly.toml"))
    outcome.run_dir, outcome.exit_code, outcome.drift.drifted
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import platform
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from labeler import __version__, io
from labeler.labelling.batchfile import BatchFileWritten, BatchNotReady
from labeler.pipeline.config import Config, config_hash
from labeler.redact import redact_data
from labeler.pipeline.drift import Drift, compute_drift
from labeler.errors import ConfigError, Interrupted
from labeler.schema import STATUS, STATUS_OK
from labeler.pipeline.check import check_run
from labeler.pipeline.inputs import (check_certify, check_judge, check_ppi, load_inputs,
                                     read_human_labels)
from labeler.pipeline.rundir import (INTERRUPTED, PARTIAL, finish_run_dir, hold_lock,
                                     latest_run, log_to_file, mark_killed, new_run_dir,
                                     set_latest)

if TYPE_CHECKING:
    from labeler.reconciliation.comparison import Comparison
    from labeler.labelling.result import LabelResult
    from labeler.reconciliation.stage import Reconciliation
    from labeler.scoring.results import ScoreResult

__all__ = ["RunOutcome", "check_run", "label_stage", "run_pipeline"]

log = logging.getLogger("labeler.run")

KEY_PACKAGES = ("openai", "pandas", "numpy", "pydantic", "diskcache", "tenacity",
                "scikit-learn", "scipy", "krippendorff", "pyarrow")


@dataclass
class RunOutcome:
    """What one run produced: where, which files, each stage's result, its exit status."""

    run_dir: Path
    files: dict[str, Path]
    manifest: dict[str, Any]
    drift: Drift
    labels: LabelResult
    reconciliation: Reconciliation | None = None
    comparison: Comparison | None = None
    scores: ScoreResult | None = None
    timings: dict[str, float] = field(default_factory=dict)
    certification: Any = None

    @property
    def label_summary(self) -> dict[str, Any]:
        """The labelling stage's summary as a dict (judged, cached, failed, tokens, cost)."""
        return self.labels.summary.model_dump()

    @property
    def agreement(self) -> dict[str, Any] | None:
        """The agreement report (with calibration and merged counts), when there was one."""
        rec = self.reconciliation
        return rec.to_dict() if rec is not None and rec.agreement is not None else None

    @property
    def n_failed(self) -> int:
        """Pairs the judge could not grade."""
        return self.labels.summary.failed

    @property
    def exit_code(self) -> int:
        """0; 3 when some pairs failed (the outputs still hold every pair); 4 when the judge
        changed since the accepted run (``latest`` not moved); 2 when the endpoint refused
        the key mid-job (every pair still recorded)."""
        code = self.labels.exit_code
        return 4 if code != 2 and self.drift.judge_changed else code

    @property
    def report_html(self) -> Path | None:
        """The HTML report, when the run had human labels and runs to compare."""
        return self.files.get("report.html")


# --------------------------------------------------------------------------- stages

@contextlib.contextmanager
def _stage(name: str, timings: dict[str, float]) -> Iterator[None]:
    t0 = time.perf_counter()
    log.info("%s …", name)
    yield
    timings[f"{name}_s"] = round(time.perf_counter() - t0, 3)
    log.info("%s done in %.2f s", name, timings[f"{name}_s"])


def label_stage(cfg: Config, pairs: pd.DataFrame, progress: Any = None) -> Any:
    """Label ``pairs`` with the configured judge; returns the stage's ``LabelResult``."""
    from labeler.labelling.stage import label

    check_judge(cfg)
    return label(pairs, judge=cfg.judge, api_key=os.environ.get(cfg.judge.api_key_env),
                 cache_dir=cfg.cache_dir, no_cache=not cfg.cache, prices=cfg.price_table(),
                 batch_prices=cfg.batch_price_table(), progress=progress)


def _previous(out_dir: Path) -> tuple[str | None, pd.DataFrame | None, dict[str, Any] | None,
                                       dict[str, Any] | None]:
    """The previous finished run: its id, label records, scores and manifest (or Nones)."""
    prev = latest_run(out_dir)
    if prev is None or not (prev / "labels.jsonl").is_file():
        return None, None, None, None
    labels = io.read_labels(prev / "labels.jsonl")
    scores = _read_json(prev / "scores.json")
    manifest = _read_json(prev / "manifest.json")
    return prev.name, labels, scores, manifest


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()[:16]


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in KEY_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _input_files(cfg: Config) -> dict[str, Any]:
    files: dict[str, Any] = {}
    for name in ("pairs", "queries", "corpus"):
        p = getattr(cfg.inputs, name)
        if p is not None:
            files[name] = {"path": str(p), "digest": _file_digest(p)}
    files["runs"] = [{"path": r, "digest": _file_digest(Path(io.parse_run_arg(r)[1]))}
                     for r in cfg.inputs.runs]
    if cfg.human is not None:
        human_files = [{"path": str(p), "digest": _file_digest(p)} for p in cfg.human.paths]
        files["human"] = human_files[0] if len(human_files) == 1 else human_files
    if cfg.drift.anchors is not None:
        files["anchors"] = {"path": str(cfg.drift.anchors),
                            "digest": _file_digest(cfg.drift.anchors)}
    return files


# --------------------------------------------------------------------------- the job

def run_pipeline(cfg: Config, *, config_path: str | Path | None = None,
                 progress: Any = None, now: datetime | None = None) -> RunOutcome:
    """Run the whole job of ``cfg`` (paths already absolute, see ``load_config``).

    Raises :class:`~labeler.pipeline.rundir.LockedError` when another run holds the output
    directory.
    Every input and output location is checked first (:func:`check_run`); a run that fails
    before it has written any label leaves no run directory behind.
    """
    check_run(cfg)
    out_dir = Path(cfg.out_dir)
    with hold_lock(out_dir):
        mark_killed(out_dir)  # a .partial now is a run that died: kept, renamed, reported
        prev_id, prev_labels, prev_scores, prev_manifest = _previous(out_dir)
        run_dir = new_run_dir(out_dir, now)
        failed: BaseException | None = None
        with log_to_file(run_dir / "run.log"):
            try:
                outcome = _run_in(cfg, run_dir, config_path, progress, prev_id, prev_labels,
                                  prev_scores, prev_manifest)
            except (BatchNotReady, BatchFileWritten) as exc:  # not a failure: not done yet
                log.info("%s left unfinished: %s", run_dir.name, exc)
                raise
            except BaseException as exc:  # recorded in run.log, then handled by the caller
                failed = exc
                log.error("run failed, %s left unfinished: %s: %s", run_dir.name,
                          type(exc).__name__, exc)
        if failed is not None:
            if not (run_dir / "labels.jsonl").exists():  # it never started: nothing to keep
                shutil.rmtree(run_dir, ignore_errors=True)
                with contextlib.suppress(OSError):
                    run_dir.parent.rmdir()  # runs/, when this was to be the first run
                kept = None
            elif isinstance(failed, KeyboardInterrupt):  # stopped by a signal: no .partial
                kept = run_dir.with_name(run_dir.name.removesuffix(PARTIAL) + INTERRUPTED)
                os.replace(run_dir, kept)
            if isinstance(failed, KeyboardInterrupt):
                raise _resume_hint(failed, kept) from None
            raise failed
        final = finish_run_dir(run_dir)
        if outcome.drift.judge_changed:  # held back until `labeler run --accept`
            log.warning("the judge changed since the accepted run %s: latest stays on it; "
                        "accept this run with `labeler run --accept %s`", prev_id, final)
        else:
            set_latest(out_dir, final)
    outcome.files = {k: final / p.relative_to(run_dir) for k, p in outcome.files.items()}
    outcome.run_dir = final
    log.info("run %s finished: %s", final.name, final)
    return outcome


def _resume_hint(exc: KeyboardInterrupt, kept: Path | None) -> Interrupted:
    """The one line an interrupted run ends with: what was kept and how to resume."""
    signum = getattr(exc, "signum", 2)
    done = str(exc) if isinstance(exc, Interrupted) and str(exc) else ""
    where = (f"; every pair's record is in {kept / 'labels.jsonl'}" if kept is not None
             else "; no run directory was kept")
    return Interrupted(signum, f"interrupted ({signal.Signals(signum).name})"
                       + (f": {done}" if done and not done.startswith("interrupted") else "")
                       + where + "; run the same command again to resume (judged pairs come "
                       "from the cache)")


def _run_in(cfg: Config, run_dir: Path, config_path: str | Path | None, progress: Any,
            prev_id: str | None, prev_labels: pd.DataFrame | None,
            prev_scores: dict[str, Any] | None, prev_manifest: dict[str, Any] | None
            ) -> RunOutcome:
    started = datetime.now(timezone.utc)
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    files: dict[str, Path] = {}
    log.info("run %s: judge %s, output %s", run_dir.name.removesuffix(".partial"),
             cfg.judge.model, run_dir.parent.parent)

    with _stage("load", timings):
        pairs, runs = load_inputs(cfg)
        human = read_human_labels(cfg)   # read before any paid call
        log.info("%d pairs over %d queries; %d runs", len(pairs), pairs["query_id"].nunique(),
                 0 if runs is None else runs["system"].nunique())
        check_ppi(cfg, pairs, human)
        check_certify(cfg, runs)
        anchors = None
        if cfg.drift.anchors is not None:
            from labeler.pipeline.anchors import read_anchors

            anchors = read_anchors(cfg)
            log.info("%d anchors, re-judged every run", len(anchors))

    with _stage("label", timings):
        result = label_stage(cfg, pairs, progress)
        records = result.records
        summary = result.summary.model_dump()
        files["labels.jsonl"] = io.write_labels(records, run_dir / "labels.jsonl")
        files["labels.qrels"] = io.write_qrels(records, run_dir / "labels.qrels")
        log.info("labels: %s", ", ".join(f"{k} {v}" for k, v in summary.items()))
        if result.summary.stop_exit in (130, 143):  # SIGINT / SIGTERM: keep the labels only
            raise Interrupted(result.summary.stop_exit - 128, (
                f"{result.summary.n_pairs - result.summary.failed} of "
                f"{result.summary.n_pairs} pairs judged"))

    rec: Reconciliation | None = None
    if cfg.human is not None and human is not None:
        with _stage("reconcile", timings):
            rec = _reconcile(cfg, records, pairs, human, run_dir, files)
    agreement_dict = rec.to_dict() if rec is not None and rec.agreement is not None else None

    scores, comparison = None, None
    if runs is not None:
        with _stage("score", timings):
            scores, comparison = _score(cfg, records, rec.merged if rec else None, human,
                                        runs, pairs, run_dir, files)
    score_dict = scores.to_dict() if scores is not None else None
    stats = cfg.statistics.options()
    drift = compute_drift(prev_labels, records, prev_scores, score_dict,
                          max_changed_share=cfg.drift.max_changed_share,
                          max_ndcg_delta=cfg.drift.max_ndcg_delta, previous=prev_id,
                          alpha=stats.alpha, test=stats.test,
                          permutations=stats.permutations, seed=stats.seed,
                          notes=_drift_notes(prev_manifest, summary))
    if anchors is not None and result.summary.stop_exit == 2:
        log.warning("anchors not judged: the endpoint refused the job (%s)",
                    result.summary.stopped)
    elif anchors is not None:
        with _stage("anchors", timings):
            from labeler.pipeline.guard import guard_stage

            check = guard_stage(cfg, anchors, records, runs, run_dir,
                                run_dir.parent / prev_id if prev_id else None, prev_labels)
            files["anchors.jsonl"] = run_dir / "anchors.jsonl"
            drift = dataclasses.replace(drift, judge=check)
            log.info("anchors: %s", "judge changed: " + "; ".join(check.changes)
                     if check.judge_changed else "judge unchanged")
    files["drift.json"] = io.write_json(drift.to_dict(), run_dir / "drift.json")
    if prev_id is not None:
        log.info("drift vs %s: %d of %d grades changed, %d threshold(s) crossed (drift.json)",
                 prev_id, drift.n_changed, drift.n_compared, len(drift.reasons))
    certification = None
    if cfg.statistics.certify and runs is not None and human is not None and cfg.human:
        with _stage("certify", timings):
            from labeler.reconciliation.certification import certify
            from labeler.reconciliation.design import design_path

            ok = records.loc[records[STATUS] == STATUS_OK, ["query_id", "chunk_id", "grade"]]
            certification = certify(human=human, llm=ok, runs=runs,
                                    design=design_path(cfg.human.paths[0]), alpha=stats.alpha,
                                    k=cfg.k[0], gain=cfg.gain)
            files["certify.json"] = io.write_json(certification.to_dict(),
                                                  run_dir / "certify.json")
    if comparison is not None:
        with _stage("report", timings):
            from labeler.report.comparison import write_report

            from labeler.pipeline.provenance import judge_summary

            judge = {**judge_summary(records, source=files["labels.jsonl"],
                                     prices=cfg.price_table()),
                     "source": "labels.jsonl of this run"}
            paths = write_report(comparison, run_dir / "report", agreement=agreement_dict,
                                 title=cfg.title or "labeler run", judge=judge,
                                 drift=drift.to_dict() if prev_id is not None
                                 or drift.judge is not None else None,
                                 certify=certification.to_dict()
                                 if certification is not None else None)
            files.update({f"report.{kind}": p for kind, p in paths.items()})

    timings["total_s"] = round(time.perf_counter() - t_start, 3)
    outcome = RunOutcome(run_dir=run_dir, files=files, manifest={}, drift=drift,
                         labels=result, reconciliation=rec, comparison=comparison,
                         scores=scores, timings=timings, certification=certification)
    manifest = _manifest(cfg, config_path, run_dir, started, outcome, pairs, runs, result,
                         human)
    files["manifest.json"] = io.write_json(manifest, run_dir / "manifest.json")
    outcome.manifest = manifest
    return outcome


def _reconcile(cfg: Config, records: pd.DataFrame, pairs: pd.DataFrame, human: pd.DataFrame,
               run_dir: Path, files: dict[str, Path]) -> Reconciliation:
    from labeler.reconciliation.stage import reconcile

    if cfg.human is None:
        raise ConfigError("human: no human sample configured")
    rec = reconcile(llm=records, human=human,
                    calibrate=cfg.human.calibration_method if cfg.human.calibrate else False,
                    bootstrap=cfg.human.bootstrap, unit=cfg.human.bootstrap_unit, pairs=pairs)
    if rec.agreement is None:
        log.warning("no pair is judged by both the LLM and the human sample: no agreement")
    written = rec.write(merged=run_dir / "merged.jsonl", qrels=run_dir / "merged.qrels",
                        audit=run_dir / "disagreements.jsonl",
                        calibration=run_dir / "calibration.json",
                        report=run_dir / "agreement.json")
    names = {"report": "agreement.json", "audit": "disagreements.jsonl",
             "calibration": "calibration.json", "merged": "merged.jsonl",
             "qrels": "merged.qrels"}
    files.update({names[kind]: path for kind, path in written.items()})
    if rec.calibration is not None:
        log.info("calibration (held out): %s", (rec.calibration_report or {}).get("after"))
    return rec


def _score(cfg: Config, records: pd.DataFrame, merged: pd.DataFrame | None,
           human: pd.DataFrame | None, runs: pd.DataFrame, pairs: pd.DataFrame,
           run_dir: Path, files: dict[str, Path]) -> tuple[ScoreResult | None,
                                                           Comparison | None]:
    from labeler.reconciliation.comparison import compare
    from labeler.scoring.results import score

    llm_qrels = records.loc[records[STATUS] == STATUS_OK, ["query_id", "chunk_id", "grade"]]
    if llm_qrels.empty:
        log.warning("no pair was judged: nothing to score")
        return None, None
    opts = {"gain": cfg.gain, "include_empty": cfg.include_empty}
    scores = score(llm_qrels, runs, k=list(cfg.k), **opts)  # type: ignore[arg-type]
    files["scores.json"] = io.write_json(scores.to_dict(), run_dir / "scores.json")
    if merged is not None:
        merged_q = merged.loc[merged[STATUS] == STATUS_OK, ["query_id", "chunk_id", "grade"]]
        files["scores-merged.json"] = io.write_json(
            score(merged_q, runs, k=list(cfg.k), **opts).to_dict(),  # type: ignore[arg-type]
            run_dir / "scores-merged.json")
    if human is None:
        return scores, None
    queries = pairs[["query_id", "query"]].drop_duplicates("query_id")
    comparison = compare(human=human, llm=llm_qrels, runs=runs, k=cfg.k[0], queries=queries,
                         llm_scores=scores, stats=cfg.statistics.options(),
                         **opts)  # type: ignore[arg-type]
    files["comparison.json"] = io.write_json(comparison.to_dict(),
                                             run_dir / "comparison.json")
    return scores, comparison


def _drift_notes(prev_manifest: dict[str, Any] | None, summary: dict[str, Any]
                 ) -> tuple[str, ...]:
    """Why grades may have moved: the judge's model or prompt changed since the last run."""
    if not prev_manifest:
        return ()
    notes = []
    prev_judge = prev_manifest.get("judge", {})
    for key, recorded in (("model", "model_recorded"), ("prompt_id", "prompt_id")):
        before, now = prev_judge.get(recorded), summary.get(key)
        if before and now and before != now:
            notes.append(f"{key} changed: {before} → {now}")
    return tuple(notes)


def _manifest(cfg: Config, config_path: str | Path | None, run_dir: Path, started: datetime,
              outcome: RunOutcome, pairs: pd.DataFrame, runs: pd.DataFrame | None,
              result: Any, human: pd.DataFrame | None) -> dict[str, Any]:
    records = result.records
    summary = outcome.label_summary
    prompt_ids = sorted(set(records["prompt_id"].dropna().astype(str))) if len(records) else []
    models = sorted(set(records["model"].dropna().astype(str))) if len(records) else []
    judge = cfg.judge.model_dump(mode="json")
    judge.update({"prompt_id": prompt_ids[0] if len(prompt_ids) == 1 else prompt_ids,
                  "model_recorded": models[0] if len(models) == 1 else models})
    return redact_data({  # a base URL's user and password never reach the manifest
        "run_id": run_dir.name.removesuffix(".partial"),
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "labeler": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": _versions(),
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "config": {"path": str(config_path) if config_path else None,
                   "hash": config_hash(cfg), "resolved": cfg.model_dump(mode="json")},
        "judge": {**judge, "model": cfg.judge.model},
        "inputs": _input_files(cfg),
        "counts": {
            "pairs": len(pairs), "queries": int(pairs["query_id"].nunique()),
            "runs": 0 if runs is None else int(runs["system"].nunique()),
            "human_labels": 0 if human is None else len(human),
            **{k: summary.get(k) for k in ("judged", "cached", "failed", "calls")},
        },
        "usage": {k: summary.get(k) for k in ("input_tokens", "output_tokens", "cost_usd")},
        "timings": {**outcome.timings, "label_wall_s": summary.get("wall_s")},
        "drift": {"previous": outcome.drift.previous, "drifted": outcome.drift.drifted,
                  "n_changed": outcome.drift.n_changed, "reasons": outcome.drift.reasons},
        **_guard_manifest(outcome),
        "exit_code": outcome.exit_code,
        "files": sorted([*(p.relative_to(run_dir).as_posix() for p in outcome.files.values()),
                         "manifest.json", "run.log"]),
    })


def _guard_manifest(outcome: RunOutcome) -> dict[str, Any]:
    """``judge_changed`` and, with anchors, the guard's findings and the anchors' identity
    and cost."""
    check = outcome.drift.judge
    if check is None:
        return {"judge_changed": False}
    anchors = check.anchors or {}
    return {"judge_changed": check.judge_changed,
            "guard": {"changes": list(check.changes), "accepted": check.accepted,
                      "latest_moved": not check.judge_changed},
            "anchors": {"n": anchors.get("n"), "identity": anchors.get("identity"),
                        "cost": anchors.get("cost")}}
