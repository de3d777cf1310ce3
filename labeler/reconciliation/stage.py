"""The reconcile stage: agreement with a human sample, optional calibration, the disagreement
audit and the merged label set — computed once, in one result object.

``labeler reconcile`` and ``labeler run`` both call :func:`reconcile` and only write what it
returns. The statistics live in :mod:`labeler.reconciliation.agreement`, the grade mapping in
:mod:`labeler.reconciliation.calibrate`.

Usage::

    import labeler
    rec = labeler.reconcile(llm="labels.jsonl", human="human.qrels", calibrate=True)
    rec.agreement.cohen_kappa_quadratic, rec.merged, rec.audit.head()
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from labeler import fmt
from labeler.reconciliation.agreement import (DEFAULT_UNIT, KEYS, AgreementReport, LabelsLike,
                                              PairsLike, QrelsLike, Unit, add_texts, agreement,
                                              checked, joined)
from labeler.errors import ConfigError
from labeler.io.convert import QrelsExport
from labeler.io import PathLike
from labeler.schema import LABEL_COLUMNS, STATUS, STATUS_FAILED, STATUS_OK

if TYPE_CHECKING:
    from labeler.reconciliation.calibrate import Calibration, Method

__all__ = ["Reconciliation", "disagreements", "merge", "reconcile"]


# --------------------------------------------------------------------------- audit, merge

def disagreements(*, llm: LabelsLike, human: QrelsLike, min_gap: int = 2,
                  pairs: PairsLike | None = None) -> pd.DataFrame:
    """Pairs where |LLM − human| >= ``min_gap``, largest gap first, for a human audit.

    Columns: ``query_id, chunk_id, human, llm, gap`` (LLM − human), then ``query, chunk``
    when ``pairs`` is given and the LLM's ``rationale`` when the records have one.

    Usage: ``disagreements(llm="labels.jsonl", human="human.qrels", pairs="pairs.csv")``
    """
    both, _ = joined(llm=llm, human=human)
    both["gap"] = both["llm"] - both["human"]
    out = both.loc[both["gap"].abs() >= min_gap]
    out = out.assign(_abs=out["gap"].abs()).sort_values(
        ["_abs", "query_id", "chunk_id"], ascending=[False, True, True], kind="stable")
    cols = [*KEYS, "human", "llm", "gap"]
    out = add_texts(out[cols + [c for c in ("query", "chunk", "rationale") if c in out]],
                    pairs)
    extra = [c for c in ("query", "chunk", "rationale") if c in out.columns]
    return out[cols + extra].reset_index(drop=True)


def merge(*, llm: LabelsLike, human: QrelsLike, calibration: Calibration | None = None
          ) -> pd.DataFrame:
    """Label records for every pair of either side: the human grade where present, else the
    (calibrated) LLM grade; ``source`` says which (human | llm | llm-calibrated).

    LLM pairs that failed and have no human grade stay ``failed`` with no grade. Extra columns:
    ``llm_grade`` (the raw LLM grade) and ``human_grade``.

    Usage: ``merge(llm="labels.jsonl", human="human.qrels", calibration=cal)``
    """
    llm_df, human_df = checked(llm, human)
    if calibration is not None and not calibration.applied:
        calibration = None  # no held-out gain: the raw grades are kept
    base = calibration.apply(llm_df) if calibration is not None else llm_df.copy()
    base = base.rename(columns={"grade": "llm_grade"})
    out = base.merge(human_df.rename(columns={"grade": "human_grade"}), on=KEYS, how="outer")
    has_human = out["human_grade"].notna()
    llm_ok = out[STATUS].eq(STATUS_OK).fillna(False).astype(bool)
    machine = (out["calibrated_grade"] if calibration is not None else out["llm_grade"])
    out["grade"] = out["human_grade"].astype("Int64").where(has_human, machine.astype("Int64"))
    out.loc[~has_human & ~llm_ok, "grade"] = pd.NA
    out[STATUS] = np.where(out["grade"].notna(), STATUS_OK, STATUS_FAILED)
    out["source"] = np.where(has_human, "human",
                             "llm-calibrated" if calibration is not None else "llm")
    out["human_grade"] = out["human_grade"].astype("Int64")
    out["llm_grade"] = out["llm_grade"].astype("Int64")
    lead = [c for c in LABEL_COLUMNS if c in out.columns] + ["source", "llm_grade",
                                                              "human_grade"]
    out = out[lead + [c for c in out.columns if c not in lead]]
    return out.sort_values(KEYS, kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Reconciliation(QrelsExport):
    """What the reconcile stage computed: agreement, calibration, audit and merged labels.

    ``agreement`` is None when no pair was judged by both (then nothing is calibrated and
    the merged labels are the LLM's plus the human ones). The merged labels convert to
    ``to_ir_measures()``, ``to_pytrec_eval()``, ``to_ranx()``, ``to_pyterrier()``.
    """

    agreement: AgreementReport | None
    calibration: Calibration | None
    calibration_report: dict[str, Any] | None
    merged: pd.DataFrame
    audit: pd.DataFrame | None

    def _label_records(self) -> pd.DataFrame:
        return self.merged

    @property
    def merged_counts(self) -> dict[str, int]:
        """Merged pairs by source (human, llm, llm-calibrated) and ``failed``."""
        m = self.merged
        counts = m["source"].where(m[STATUS] == STATUS_OK, STATUS_FAILED).value_counts()
        return {"n": len(m), **{str(k): int(v) for k, v in counts.items()}}

    def to_dict(self) -> dict[str, Any]:
        """The agreement report's keys, plus ``calibration`` and ``merged`` counts."""
        out: dict[str, Any] = self.agreement.to_dict() if self.agreement is not None else {}
        if self.calibration_report is not None:
            out["calibration"] = self.calibration_report
        out["merged"] = self.merged_counts
        return out

    def to_text(self) -> str:
        """What ``labeler reconcile`` prints."""
        parts = [self.agreement.to_text() if self.agreement is not None
                 else "no pair is judged by both the LLM and the humans: no agreement"]
        if self.calibration_report is not None and "before" in self.calibration_report:
            parts.append(calibration_text(self.calibration_report))
        return "\n".join(parts)

    def write(self, *, merged: PathLike, qrels: PathLike | None = None,
              audit: PathLike | None = None, calibration: PathLike | None = None,
              report: PathLike | None = None, report_extra: dict[str, Any] | None = None
              ) -> dict[str, Path]:
        """Write the result's files — the one place that does, for ``labeler reconcile`` and
        ``labeler run`` alike: the ``merged`` labels (and as TREC ``qrels``), the disagreement
        ``audit``, the fitted ``calibration`` and the JSON ``report`` (:meth:`to_dict` updated
        with ``report_extra``; written only when there is an agreement or extra to report).
        Each is written only where a path is given and the result has it. Returns
        {kind: path written}.

        Usage: ``rec.write(merged="merged.jsonl", qrels="merged.qrels", report="rec.json")``
        """
        from labeler import io

        written: dict[str, Path] = {}
        if report is not None and (self.agreement is not None or report_extra):
            written["report"] = io.write_json({**self.to_dict(), **(report_extra or {})},
                                              report)
        if audit is not None and self.audit is not None:
            written["audit"] = io.write_table(self.audit, audit)
        if calibration is not None and self.calibration is not None:
            written["calibration"] = self.calibration.save(calibration)
        written["merged"] = io.write_labels(self.merged, merged)
        if qrels is not None:
            written["qrels"] = io.write_qrels(self.merged, qrels)
        return written

    def _repr_html_(self) -> str:
        from labeler.report.notebook import reconciliation_html

        return reconciliation_html(self.to_dict())


def reconcile(*, llm: LabelsLike, human: QrelsLike,
              calibrate: bool | Method = False,
              calibration: Calibration | None = None, folds: int = 5, bootstrap: int = 1000,
              seed: int = 0, unit: Unit = DEFAULT_UNIT, audit: bool = True,
              min_gap: int = 2, pairs: PairsLike | None = None) -> Reconciliation:
    """Agreement of ``llm`` with ``human`` labels, an optional calibration (fitted with
    ``calibrate=True`` or a method name and judged on k-fold held-out labels, or a saved
    ``calibration`` applied), the disagreement audit and the merged label set.

    Usage::

        rec = labeler.reconcile(llm="labels.jsonl", human="human.qrels", calibrate=True)
        rec.agreement.krippendorff_alpha_ordinal; rec.merged; rec.audit
    """
    from labeler.reconciliation.calibrate import DEFAULT_METHOD
    from labeler.reconciliation.calibrate import calibrate as fit_calibration
    from labeler.reconciliation.calibrate import evaluate

    if calibrate and calibration is not None:
        raise ConfigError("give either calibrate (fit a new calibration) or calibration (apply "
                          "a saved one), not both", setting="calibrate")
    llm_df, human_df = checked(llm, human)
    ok = llm_df.loc[llm_df[STATUS] == STATUS_OK, KEYS]
    overlap = len(ok.merge(human_df[KEYS], on=KEYS))
    report = (agreement(llm=llm_df, human=human_df, bootstrap=bootstrap, seed=seed, unit=unit)
              if overlap else None)
    cal_report: dict[str, Any] | None = None
    if calibrate and report is not None:
        method = calibrate if isinstance(calibrate, str) else DEFAULT_METHOD
        calibration = fit_calibration(llm=llm_df, human=human_df, folds=folds, seed=seed,
                                      method=method)
        cal_report = calibration.report
    elif calibration is not None and report is not None:
        cal_report = {"method": calibration.method, "feature": calibration.feature,
                      "mapping": calibration.mapping,
                      **evaluate(calibration, llm=llm_df, human=human_df)}
    table = (disagreements(llm=llm_df, human=human_df, min_gap=min_gap, pairs=pairs)
             if audit and report is not None else None)
    merged = merge(llm=llm_df, human=human_df, calibration=calibration)
    return Reconciliation(agreement=report, calibration=calibration,
                          calibration_report=cal_report, merged=merged, audit=table)


def calibration_text(cal: dict[str, Any]) -> str:
    """Agreement before → after calibration, as ``labeler reconcile`` prints it."""
    b, a = cal["before"], cal["after"]
    rows = [f"calibration ({cal['method']}, mapping {cal['mapping']}; {cal['evaluation']}):"]
    for key, name in (("exact_agreement", "exact agreement"),
                      ("cohen_kappa_quadratic", "quadratic kappa"),
                      ("krippendorff_alpha_ordinal", "Krippendorff alpha"),
                      ("mean_signed_difference", "mean signed difference")):
        signed = key == "mean_signed_difference"
        rows.append(f"  {name:<24} {fmt.num(b[key], signed=signed)} -> "
                    f"{fmt.num(a[key], signed=signed)}")
    if cal.get("reason"):
        rows.append(f"  {cal['reason']}")
    return "\n".join(rows)
