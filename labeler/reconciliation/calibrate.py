"""Calibrate LLM grades to the human scale, judged only on held-out human labels.

A calibration never hurts: it is *applied* only where its k-fold held-out Krippendorff's
alpha (ordinal) beats the raw grades' — overall and in every fold. Otherwise the raw grades
are kept and the report says why (``applied``, ``reason``).

Methods (the first two keep the spread of grades: they cut the scale, they do not average):

- ``"thresholds"`` (default): three cut points on the LLM's grade (or ``expected_grade`` /
  ``vote_mean``) chosen on the fitting labels for the best Krippendorff's alpha; the grade is
  the number of cuts at or below the value.
- ``"distribution"``: cut points that give the human grade distribution of the fitting labels
  (quantile matching).
- ``"ordinal"``: the non-decreasing map of LLM grades 0–3 onto human grades 0–3 with the
  highest quadratic-weighted kappa on the fitting labels.
- ``"isotonic"``: scikit-learn's isotonic regression of the human grade on the feature,
  rounded (it tends to pull grades toward the mean; the gate keeps it from hurting).

The report's ``before``/``after`` figures are computed on k-fold held-out predictions whose
folds hold out whole queries (scikit-learn's ``GroupKFold`` by query): each human label is
predicted by a mapping fitted on other queries, never on a pair of its own query. The saved
mapping (fitted on every human label) is plain JSON, reusable on the next night's labels.

Usage::

    from labeler.reconciliation.calibrate import calibrate, Calibration
    cal = calibrate(llm="labels.jsonl", human="human.qrels", folds=5, seed=0)
    cal.report["after"]["cohen_kappa_quadratic"]; cal.save("calibration.json")
    Calibration.load("calibration.json").apply(next_night_labels)   # adds calibrated_grade
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import GroupKFold

from labeler import fmt, io
from labeler.reconciliation.agreement import (LabelsLike, QrelsLike, alpha, core_metrics, joined,
                                              read_llm)
from labeler.errors import ConfigError, InputError
from labeler.schema import GRADES, STATUS, STATUS_OK
from labeler.statistics import bootstrap as boot

Method = Literal["thresholds", "distribution", "ordinal", "isotonic"]
METHODS: tuple[str, ...] = ("thresholds", "distribution", "ordinal", "isotonic")
DEFAULT_METHOD: Method = "thresholds"
_CUT_METHODS = ("thresholds", "distribution")
_BELOW, _ABOVE = -0.5, 3.5
"""Cuts below / above every value of the 0–3 scale (JSON-safe stand-ins for ±inf)."""
EXPECTED = "expected_grade"
VOTE_MEAN = "vote_mean"
_MONOTONE_MAPS = list(itertools.combinations_with_replacement(GRADES, len(GRADES)))


class Calibration(BaseModel):
    """A fitted LLM-grade → human-grade mapping; JSON round-trips with save/load."""

    model_config = ConfigDict(frozen=True)

    method: Method
    feature: str
    """The label column the mapping reads: ``grade`` or ``expected_grade``."""
    mapping: dict[int, int] | None = None
    """ordinal: LLM grade → human grade."""
    x_thresholds: list[float] | None = None
    y_thresholds: list[float] | None = None
    """isotonic: the fitted step points; prediction = nearest grade of np.interp (clipped)."""
    cuts: list[float] | None = None
    """thresholds, distribution: three non-decreasing cuts; grade = cuts at or below value."""
    applied: bool = True
    """False when the held-out evaluation found no gain: :meth:`apply` keeps raw grades."""
    report: dict[str, Any] = {}

    @model_validator(mode="after")
    def _complete(self) -> Calibration:
        if self.method == "ordinal" and (self.mapping is None
                                         or sorted(self.mapping) != list(GRADES)):
            raise ValueError("an ordinal calibration maps every grade 0-3")
        if self.method == "isotonic" and not (self.x_thresholds and self.y_thresholds
                                              and len(self.x_thresholds)
                                              == len(self.y_thresholds)):
            raise ValueError("an isotonic calibration needs x_thresholds and y_thresholds")
        if self.method in _CUT_METHODS and not (self.cuts and len(self.cuts) == 3
                                                 and self.cuts == sorted(self.cuts)):
            raise ValueError(f"a {self.method} calibration needs three non-decreasing cuts")
        if self.mapping and any(v not in GRADES for v in self.mapping.values()):
            raise ValueError("calibrated grades must be 0-3")
        return self

    def predict(self, values: np.ndarray) -> np.ndarray:
        """Calibrated integer grades for an array of ``feature`` values (no missing values)."""
        x = np.asarray(values, dtype=float)
        if self.cuts is not None:
            return (x[:, None] >= np.asarray(self.cuts)[None, :]).sum(axis=1)
        if self.method == "ordinal":
            table = np.array([self.mapping[g] for g in GRADES])  # type: ignore[index]
            return table[np.clip(np.rint(x), 0, 3).astype(int)]
        y = np.interp(x, self.x_thresholds, self.y_thresholds)  # type: ignore[arg-type]
        return np.clip(np.floor(y + 0.5), 0, 3).astype(int)

    def apply(self, llm: LabelsLike) -> pd.DataFrame:
        """The label records with a ``calibrated_grade`` column (missing where the label failed;
        the raw grade when the calibration was not applied).

        Usage: ``Calibration.load("cal.json").apply("tonight.jsonl")``
        """
        df = read_llm(llm)
        if not self.applied:
            return df.assign(calibrated_grade=df["grade"].where(df[STATUS] == STATUS_OK)
                             .astype("Int64"))
        feature = _feature_values(df, self.feature)
        usable = (df[STATUS] == STATUS_OK).to_numpy() & feature.notna().to_numpy()
        out = df.copy()
        calibrated = pd.array([pd.NA] * len(df), dtype="Int64")
        calibrated[usable] = self.predict(feature.to_numpy()[usable].astype(float))
        out["calibrated_grade"] = calibrated
        return out

    def save(self, path: io.PathLike) -> Path:
        """Write the calibration as JSON, atomically."""
        return io.write_json(self.model_dump(mode="json"), path)

    @classmethod
    def load(cls, path: io.PathLike) -> Calibration:
        """Read a calibration written by :meth:`save`."""
        p = Path(path)
        if not p.is_file():
            raise InputError("no such calibration file", path=p)
        try:
            return cls.model_validate(json.loads(p.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, ValidationError) as exc:
            first = str(exc).strip().splitlines()
            raise InputError(f"not a labeler calibration file ({' '.join(first[:3])})",
                             path=p) from None


def _vote_mean(votes: object) -> float:
    if isinstance(votes, str):  # a list written to CSV
        try:
            votes = json.loads(votes)
        except json.JSONDecodeError:
            return float("nan")
    if isinstance(votes, (list, tuple, np.ndarray)) and len(votes):
        return float(np.mean([float(v) for v in votes]))
    return float("nan")


def _default_feature(df: pd.DataFrame, method: str) -> str:
    if method != "ordinal":
        if EXPECTED in df.columns and pd.to_numeric(df[EXPECTED], errors="coerce").notna().any():
            return EXPECTED
        if VOTE_MEAN in df.columns or "votes" in df.columns:
            return VOTE_MEAN
    return "grade"


def _feature_values(df: pd.DataFrame, feature: str) -> pd.Series:
    if feature == VOTE_MEAN and VOTE_MEAN not in df.columns and "votes" in df.columns:
        df = df.assign(**{VOTE_MEAN: df["votes"].map(_vote_mean)})
    if feature not in df.columns:
        raise InputError(f"the calibration reads the column '{feature}', which these label "
                         "records do not have", path=df.attrs.get("path"))
    values = pd.to_numeric(df[feature], errors="coerce").astype("float64")
    if feature != "grade":  # a label without an expected grade / votes: use its grade
        values = values.fillna(pd.to_numeric(df["grade"], errors="coerce").astype("float64"))
    bad = values.notna() & ((values < 0) | (values > 3))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(f"{feature} must lie in 0-3, got {values.iloc[i]}",
                         path=df.attrs.get("path"), row=i + 1)
    return values


# --------------------------------------------------------------------------- fitting

def _fit_ordinal(x: np.ndarray, human: np.ndarray) -> dict[str, Any]:
    """The monotone grade map with the best quadratic kappa; ties → closest to identity."""
    counts = boot.table_of(human, x)                 # human grade × LLM grade
    maps = np.array(_MONOTONE_MAPS)                  # candidates × LLM grade → grade
    tables = np.zeros((len(maps), len(GRADES), len(GRADES)))
    for g in GRADES:  # the LLM's grade g becomes maps[:, g]: move its column there
        tables[np.arange(len(maps))[:, None], np.arange(len(GRADES)), maps[:, [g]]] += \
            counts[:, g]
    scores = boot.kappa(tables, "quadratic")         # scikit-learn's formula (tested)
    distance = np.abs(maps - np.array(GRADES)).sum(axis=1)

    def key(i: int) -> tuple[float, int]:
        score = scores[i]
        return (round(float(score), 12) if np.isfinite(score) else -np.inf, -int(distance[i]))

    best = max(range(len(maps)), key=key)  # first of equals: lexicographic order
    return {"mapping": dict(zip(GRADES, (int(g) for g in maps[best])))}


def _fit_isotonic(x: np.ndarray, human: np.ndarray) -> dict[str, Any]:
    iso = IsotonicRegression(y_min=0, y_max=3, increasing=True, out_of_bounds="clip")
    iso.fit(x.astype(float), human.astype(float))
    return {"x_thresholds": iso.X_thresholds_.tolist(), "y_thresholds": iso.y_thresholds_.tolist()}


def alpha_from_counts(table: np.ndarray) -> float:
    """Krippendorff's ordinal alpha of two raters from their 4×4 table of counts (grades 0–3).

    The fitting objective (fast on a table); reported figures come from ``krippendorff``.
    """
    o = table + table.T  # coincidences: every pair counted in both orders
    n_c = o.sum(axis=1)
    n = n_c.sum()
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    c, k = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    lo, hi = np.minimum(c, k), np.maximum(c, k)
    delta = (cum[hi + 1] - cum[lo] - (n_c[c] + n_c[k]) / 2) ** 2
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if n <= 1 or expected == 0:
        return -np.inf
    return float(1 - (n - 1) * (o * delta).sum() / expected)


def _candidates(x: np.ndarray, most: int = 24) -> np.ndarray:
    values = np.unique(x)
    mids = (values[1:] + values[:-1]) / 2
    if len(mids) > most:
        mids = np.unique(np.quantile(mids, np.linspace(0, 1, most)))
    return np.concatenate([[_BELOW], mids, [_ABOVE]])


def _fit_thresholds(x: np.ndarray, human: np.ndarray) -> dict[str, Any]:
    """The three cuts (among midpoints of the values) with the best alpha; ties → the cuts
    closest to the identity (0.5, 1.5, 2.5)."""
    cands = _candidates(x)
    bins = np.searchsorted(cands, x, side="right")  # value >= cands[i]  <=>  bin > i
    table = np.zeros((len(cands) + 1, 4))
    np.add.at(table, (bins, human.astype(int)), 1)
    idx = np.arange(len(cands) + 1)
    best: tuple[tuple[float, float], tuple[int, ...]] = ((-np.inf, -np.inf), (0, 0, 0))
    for combo in itertools.combinations_with_replacement(range(len(cands)), 3):
        grade_of_bin = sum((idx > i).astype(int) for i in combo)
        conf = np.zeros((4, 4))
        np.add.at(conf, grade_of_bin, table)  # rows: predicted grade, columns: human grade
        cuts = cands[list(combo)]
        key = (round(alpha_from_counts(conf), 12),
               -float(np.abs(cuts - np.array([0.5, 1.5, 2.5])).sum()))
        if key > best[0]:
            best = (key, combo)
    return {"cuts": [float(c) for c in cands[list(best[1])]]}


def _fit_distribution(x: np.ndarray, human: np.ndarray) -> dict[str, Any]:
    """Cuts that give the fitting labels' human grade distribution (quantile matching)."""
    values, counts = np.unique(x, return_counts=True)
    n = len(x)
    mid = (np.cumsum(counts) - counts / 2) / n  # mid-rank share of each distinct value
    cum_h = np.cumsum(np.bincount(human.astype(int), minlength=4))[:3] / n
    grade = np.minimum(np.searchsorted(cum_h, mid, side="right"), 3)
    cuts = []
    for g in (1, 2, 3):
        at = np.flatnonzero(grade >= g)
        j = int(at[0]) if len(at) else len(values)
        cuts.append(_BELOW if j == 0 else _ABOVE if j == len(values)
                    else float((values[j - 1] + values[j]) / 2))
    return {"cuts": cuts}


_FITTERS = {"thresholds": _fit_thresholds, "distribution": _fit_distribution,
            "ordinal": _fit_ordinal, "isotonic": _fit_isotonic}


def calibrate(*, llm: LabelsLike, human: QrelsLike, folds: int = 5, seed: int = 0,
              method: Method = DEFAULT_METHOD, feature: str | None = None) -> Calibration:
    """Fit an LLM → human grade mapping on the human sample; report k-fold held-out agreement.

    ``feature`` defaults, except for ``ordinal``, to ``expected_grade`` when the records have
    it, else to ``vote_mean`` (the mean of ``votes``) when they have votes, else ``grade``. The
    returned mapping is fitted on every human label; it is ``applied`` only if its held-out
    alpha beats the raw grades' overall and in every fold.

    Usage: ``cal = calibrate(llm="labels.jsonl", human="human.qrels"); cal.report["after"]``
    """
    if method not in _FITTERS:
        raise ConfigError(f"unknown calibration method '{method}' (use "
                          f"{', '.join(METHODS)})", setting="method")
    both, _ = joined(llm=llm, human=human)
    feature = feature or _default_feature(both, method)
    if method == "ordinal" and feature != "grade":
        raise ConfigError("the ordinal calibration maps integer grades; use method='isotonic' "
                          f"for '{feature}'")
    x_all = _feature_values(both.rename(columns={"llm": "grade"}), feature)
    usable = x_all.notna().to_numpy()
    x, h, raw = (x_all.to_numpy()[usable].astype(float), both["human"].to_numpy()[usable],
                 both["llm"].to_numpy()[usable])
    groups = both["query_id"].astype(str).to_numpy()[usable]
    n_queries = len(np.unique(groups))
    if not 2 <= folds <= n_queries:
        raise ConfigError(f"folds must be between 2 and the {n_queries} queries judged by both "
                          f"(the calibration is judged on whole held-out queries), got {folds}",
                          setting="folds")
    fit = _FITTERS[method]

    def model(xs: np.ndarray, hs: np.ndarray) -> Calibration:
        return Calibration(method=method, feature=feature, **fit(xs, hs))

    held_out = np.empty(len(h), dtype=int)
    fold_maps = []
    fold_alpha = []
    for train, test in query_folds(groups, folds, seed):
        m = model(x[train], h[train])
        held_out[test] = m.predict(x[test])
        fold_maps.append(m.mapping if method == "ordinal" else None)
        fold_alpha.append({"raw": alpha(h[test], raw[test]),
                           "calibrated": alpha(h[test], held_out[test])})
    before, after = core_metrics(h, raw), core_metrics(h, held_out)
    applied, reason = _gate(before["krippendorff_alpha_ordinal"],
                            after["krippendorff_alpha_ordinal"], fold_alpha)
    final = model(x, h).model_copy(update={"applied": applied})
    report = {"applied": applied, "reason": reason, "fold_alpha": fold_alpha,
        "method": method, "feature": feature, "folds": folds, "seed": seed, "n": len(h),
        "n_queries": n_queries, "held_out": "query",
        "evaluation": "k-fold held out by query: every human label is predicted by a "
                      "mapping fitted on other queries, never on a pair of its own query",
        "mapping": final.mapping if method == "ordinal" else _grade_table(final),
        "cuts": final.cuts,
        "fold_mappings": fold_maps if method == "ordinal" else None,
        "before": before, "after": after,
    }
    return final.model_copy(update={"report": report})


def query_folds(groups: np.ndarray, folds: int, seed: int
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (fit, test) index arrays of k-fold cross-validation that holds out whole queries:
    scikit-learn's ``GroupKFold`` (shuffled with ``seed``) with the query ids as groups, so a
    query's pairs are all in the fit or all in the test of a fold.

    Usage: ``for fit, test in query_folds(query_ids, 5, seed=0): ...``
    """
    splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(groups)), groups=np.asarray(groups)))


def _gate(raw: float | None, calibrated: float | None,
          folds: list[dict[str, float | None]]) -> tuple[bool, str]:
    """Apply only a held-out gain in Krippendorff's alpha, overall and in every fold."""
    better = sum(f["raw"] is not None and f["calibrated"] is not None
                 and f["calibrated"] > f["raw"] for f in folds)
    gain = calibrated is not None and (raw is None or calibrated > raw)
    figures = (f"held-out Krippendorff's alpha {fmt.num(calibrated)} calibrated vs "
               f"{fmt.num(raw)} raw, better in {better} of {len(folds)} folds")
    if gain and better == len(folds):
        return True, f"applied: {figures}"
    return False, f"not applied, the raw grades are kept: {figures}"


def _grade_table(cal: Calibration) -> dict[int, int]:
    """What a calibration does to each integer grade (for reading the report)."""
    return dict(zip(GRADES, cal.predict(np.array(GRADES, dtype=float)).tolist()))


def evaluate(calibration: Calibration, *, llm: LabelsLike, human: QrelsLike) -> dict[str, Any]:
    """Agreement before/after applying a saved calibration, on the pairs both judged.

    Not held out: meaningful only when these human labels were not used to fit it.

    Usage: ``evaluate(Calibration.load("cal.json"), llm="tonight.jsonl", human="new.qrels")``
    """
    both, _ = joined(llm=calibration.apply(llm), human=human)
    usable = both["calibrated_grade"].notna().to_numpy()
    h = both["human"].to_numpy()[usable]
    return {
        "evaluation": "in sample: every pair judged by both (held out only if these human "
                      "labels were not used to fit the calibration)",
        "before": core_metrics(h, both["llm"].to_numpy()[usable]),
        "after": core_metrics(h, both["calibrated_grade"].to_numpy()[usable].astype(int)),
    }
