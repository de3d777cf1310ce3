"""How far LLM labels agree with human labels: the statistics, on the pairs both judged.

Every statistic comes from a maintained library (scikit-learn, krippendorff, scipy; the
bootstrap intervals compute the same formulas on tables of grade counts, checked against them);
undefined values (e.g. kappa when every grade is the same) are ``None``. Label sets are
taken by keyword only (``llm=``, ``human=``), so they cannot be swapped by position.

Usage::

    from labeler.reconciliation.agreement import agreement
    report = agreement(llm="labels.jsonl", human="human.qrels", seed=0)
    print(report.to_text()); report.to_dict()["cohen_kappa_quadratic"]
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import krippendorff
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict
from scipy import stats
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_score, recall_score

from labeler import fmt, io
from labeler.errors import ConfigError, InputError
from labeler.io import PairsLike
from labeler.statistics import bootstrap as boot
from labeler.schema import GRADES, KEYS as _KEYS, STATUS, STATUS_OK

LabelsLike: TypeAlias = str | os.PathLike[str] | pd.DataFrame
QrelsLike: TypeAlias = str | os.PathLike[str] | pd.DataFrame | Mapping[str, Mapping[str, int]]

RELEVANT = 2
"""Binary relevance threshold: a grade >= 2 counts as relevant."""
KEYS = list(_KEYS)
_LABELS = list(GRADES)


# --------------------------------------------------------------------------- inputs

class CheckedLabels(pd.DataFrame):
    """LLM label records already read and checked by :func:`read_llm` (inside one stage
    call, so the functions it calls do not check them again). Never handed to users: pandas
    operations on it give plain DataFrames."""


class CheckedQrels(pd.DataFrame):
    """Human qrels already read and checked by :func:`read_human` (see
    :class:`CheckedLabels`)."""


def checked(llm: LabelsLike, human: QrelsLike) -> tuple[CheckedLabels, CheckedQrels]:
    """Both label sets read and checked once, for a stage that passes them on to several
    functions of this package (each of which would read and check them again).

    Usage: ``llm_df, human_df = checked(llm, human)``
    """
    llm_df, human_df = read_llm(llm), read_human(human)
    out_llm, out_human = CheckedLabels(llm_df), CheckedQrels(human_df)
    out_llm.attrs.update(llm_df.attrs)
    out_human.attrs.update(human_df.attrs)
    return out_llm, out_human


def read_llm(obj: LabelsLike, grade_map: io.GradeMap = None, *, fmt: str | None = None
             ) -> pd.DataFrame:
    """LLM label records from a path (records or any qrels form) or a DataFrame.

    Returns at least ``query_id, chunk_id, grade`` (nullable Int64) and ``status``; a pair
    given twice keeps its ``ok`` label (two different ``ok`` grades are an error).
    ``df.attrs["path"]`` names the source for error messages; ``fmt`` forces a file's format.

    Usage: ``llm = read_llm("labels.jsonl", grade_map={"4": 3})``
    """
    if isinstance(obj, CheckedLabels) and grade_map is None:
        return obj
    df = io.as_labels(obj, grade_map=grade_map, fmt=fmt)
    name = str(df.attrs.get("path", "<LLM labels>"))
    df = _one_label_per_pair(df, name)
    df.attrs["path"] = name
    return df


def read_human(obj: QrelsLike, grade_map: io.GradeMap = None, *, fmt: str | None = None
               ) -> pd.DataFrame:
    """Human qrels (``query_id, chunk_id, grade``) from a path, a DataFrame or a dict; ``fmt``
    forces a file's format.

    Usage: ``human = read_human("human.qrels")``
    """
    if isinstance(obj, CheckedQrels) and grade_map is None:
        return obj
    if isinstance(obj, (str, os.PathLike)):
        name = str(obj)
    elif isinstance(obj, pd.DataFrame):
        name = str(obj.attrs.get("path", "<human qrels DataFrame>"))
    else:
        name = "<human qrels dict>"
    df = io.as_qrels(obj, grade_map=grade_map, fmt=fmt)
    df.attrs["path"] = name
    return df


def _one_label_per_pair(df: pd.DataFrame, name: str) -> pd.DataFrame:
    if not df.duplicated(KEYS).any():
        return df.reset_index(drop=True)
    ok = df.loc[df[STATUS] == STATUS_OK]
    clash = ok.groupby(KEYS, sort=False)["grade"].nunique() > 1
    if clash.any():
        q, c = clash[clash].index[0]
        raise InputError(f"query {q!r}, chunk {c!r} has two 'ok' labels with different grades",
                         path=name)
    order = (df[STATUS] != STATUS_OK).astype(int)  # ok rows first, then keep the first
    keep = df.assign(_o=order).sort_values("_o", kind="stable").drop_duplicates(KEYS).index
    return df.loc[sorted(keep)].reset_index(drop=True)


def _pairs_frame(pairs: PairsLike | None) -> pd.DataFrame | None:
    if pairs is None:
        return None
    if isinstance(pairs, pd.DataFrame):
        return pairs[[c for c in ("query_id", "query", "chunk_id", "chunk") if c in pairs]]
    return io.as_pairs(pairs)[["query_id", "query", "chunk_id", "chunk"]]


def add_texts(df: pd.DataFrame, pairs: PairsLike | None) -> pd.DataFrame:
    """``df`` with ``query`` and ``chunk`` text columns from ``pairs`` (a path or DataFrame)."""
    texts = _pairs_frame(pairs)
    if texts is None:
        return df
    cols = [c for c in ("query", "chunk") if c in texts.columns and c not in df.columns]
    if not cols:
        return df
    return df.merge(texts[[*KEYS, *cols]].drop_duplicates(KEYS), on=KEYS, how="left")


def joined(*, llm: LabelsLike, human: QrelsLike) -> tuple[pd.DataFrame, dict[str, int]]:
    """The pairs judged by both (columns ``query_id, chunk_id, human, llm`` + LLM extras)
    and the counts around them. Raises InputError when nothing overlaps."""
    llm_df, human_df = read_llm(llm), read_human(human)
    ok = llm_df.loc[llm_df[STATUS] == STATUS_OK]
    both = ok.rename(columns={"grade": "llm"}).merge(
        human_df.rename(columns={"grade": "human"}), on=KEYS, how="inner")
    counts = {
        "n_llm": len(llm_df), "n_human": len(human_df),
        "n_llm_failed": int((llm_df[STATUS] != STATUS_OK).sum()),
        "n_only_llm": len(ok) - len(both), "n_only_human": len(human_df) - len(both),
    }
    if both.empty:
        raise _no_overlap(llm_df, human_df)
    both["llm"] = both["llm"].astype("int64")
    both["human"] = both["human"].astype("int64")
    return both, counts


def _no_overlap(llm: pd.DataFrame, human: pd.DataFrame) -> InputError:
    def looks(df: pd.DataFrame) -> str:
        few = df[KEYS].head(3).itertuples(index=False)
        return ", ".join(f"{q}/{c}" for q, c in few)

    failed_only = llm.merge(human[KEYS], on=KEYS).shape[0]
    why = (f"the {failed_only} pair(s) they share all have failed LLM labels" if failed_only
           else "no (query_id, chunk_id) pair is in both")
    shared_q = len(set(llm["query_id"]) & set(human["query_id"]))
    return InputError(
        f"LLM labels {llm.attrs.get('path')} and human labels {human.attrs.get('path')} have "
        f"nothing to compare: {why} ({shared_q} query id(s) in common). "
        f"LLM ids look like {looks(llm)}; human ids look like {looks(human)} (query/chunk).")


# --------------------------------------------------------------------------- statistics

_finite = fmt.finite


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> float | None:
    """Call a statistic; a degenerate input (one class, constant) gives None, not NaN."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return _finite(fn(*args, **kwargs))
        except (ValueError, ZeroDivisionError):
            return None


def kappa(human: np.ndarray, llm: np.ndarray, weights: str | None = None,
          sample_weight: np.ndarray | None = None) -> float | None:
    """Cohen's kappa on the 0–3 scale (scikit-learn); ``None`` when undefined."""
    return _quiet(cohen_kappa_score, human, llm, labels=_LABELS, weights=weights,
                  sample_weight=sample_weight)


def alpha(human: np.ndarray, llm: np.ndarray) -> float | None:
    """Krippendorff's alpha, ordinal, value domain 0–3 (krippendorff); ``None`` when undefined."""
    data = np.vstack([human, llm]).astype(float)
    return _quiet(krippendorff.alpha, reliability_data=data, level_of_measurement="ordinal",
                  value_domain=_LABELS)


def core_metrics(human: np.ndarray, llm: np.ndarray) -> dict[str, Any]:
    """The headline agreement figures of two aligned grade arrays."""
    human, llm = np.asarray(human, dtype=int), np.asarray(llm, dtype=int)
    diff = llm - human
    return {
        "n": len(human),
        "exact_agreement": float(np.mean(diff == 0)),
        "cohen_kappa": kappa(human, llm),
        "cohen_kappa_linear": kappa(human, llm, "linear"),
        "cohen_kappa_quadratic": kappa(human, llm, "quadratic"),
        "krippendorff_alpha_ordinal": alpha(human, llm),
        "binary_agreement": float(np.mean((human >= RELEVANT) == (llm >= RELEVANT))),
        "mean_signed_difference": float(np.mean(diff)),
        "mean_absolute_difference": float(np.mean(np.abs(diff))),
    }


def _binary(human: np.ndarray, llm: np.ndarray) -> dict[str, Any]:
    hb, lb = human >= RELEVANT, llm >= RELEVANT
    return {
        "binary_precision": _quiet(precision_score, hb, lb, zero_division=np.nan),
        "binary_recall": _quiet(recall_score, hb, lb, zero_division=np.nan),
        "binary_kappa": _quiet(cohen_kappa_score, hb, lb, labels=[False, True]),
    }


def _per_query(both: pd.DataFrame) -> dict[str, dict[str, float | int | None]]:
    codes, queries = pd.factorize(both["query_id"], sort=True)
    h, ll = both["human"].to_numpy(dtype=np.int64), both["llm"].to_numpy(dtype=np.int64)
    n = np.bincount(codes, minlength=len(queries))
    same = np.bincount(codes, weights=(h == ll), minlength=len(queries))
    signed = np.bincount(codes, weights=ll - h, minlength=len(queries))
    absolute = np.bincount(codes, weights=np.abs(ll - h), minlength=len(queries))
    # one 4x4 table per query: the same quadratic kappa as scikit-learn's, in one pass
    kappas = boot.kappa(boot.query_tables(h, ll, codes), "quadratic")
    return {str(q): {"n": int(n[i]),
                     "exact_agreement": float(same[i] / n[i]),
                     "cohen_kappa_quadratic": _finite(kappas[i]),
                     "mean_signed_difference": float(signed[i] / n[i]),
                     "mean_absolute_difference": float(absolute[i] / n[i])}
            for i, q in enumerate(queries)}


Unit = Literal["query", "pair"]
UNITS: tuple[str, ...] = ("query", "pair")
DEFAULT_UNIT: Unit = "query"
"""Bootstrap unit: whole queries (the pairs of one query are not independent) or pairs."""


def bootstrap_ci(both: pd.DataFrame, n_resamples: int, seed: int,
                 unit: Unit = DEFAULT_UNIT, level: float = 0.95) -> dict[str, Any]:
    """Bootstrap CIs of exact agreement, kappa (unweighted, linear, quadratic) and ordinal
    alpha.

    ``unit="query"`` (cluster bootstrap) draws as many queries as there are, with
    replacement, and keeps all pairs of each drawn query; the interval is studentized:
    the statistic ± t(n − 1) · the replicates' sd · sqrt(n/(n − 1)) for n queries, clipped to
    the statistic's range (it covers from 5 queries on; a percentile interval does not).
    ``unit="pair"`` draws pairs and keeps the percentile interval. Each replicate is a 4×4
    table of grade counts (:mod:`labeler.statistics.bootstrap`).

    Usage: ``bootstrap_ci(joined(llm=l, human=h)[0], 1000, seed=0)["cohen_kappa"]``
    """
    if unit not in UNITS:
        raise ConfigError(f"unknown bootstrap unit {unit!r} (use {' or '.join(UNITS)})",
                          setting="bootstrap_unit")
    h, ll = both["human"].to_numpy(), both["llm"].to_numpy()
    if unit == "query":
        codes, _ = pd.factorize(both["query_id"], sort=True)
        per_query = boot.query_tables(h, ll, codes)
        counts = boot.query_resample_counts(len(per_query), n_resamples, seed)
        tables = np.einsum("bq,qij->bij", counts, per_query)
        method = "studentized bootstrap"
    else:
        tables = boot.pair_resample_tables(h, ll, n_resamples, seed)
        method = "percentile bootstrap"
    out: dict[str, Any] = {"level": level, "method": method,
                           "n_resamples": n_resamples, "seed": seed, "unit": unit}
    whole = boot.statistics(boot.table_of(h, ll)) if unit == "query" else {}
    for name, values in boot.statistics(tables).items():
        out[name] = (boot.studentized_interval(float(whole[name]), values, len(per_query),
                                               level, boot.RANGES[name])
                     if unit == "query" else boot.percentile_interval(values, level))
    return out


class AgreementReport(BaseModel):
    """Agreement of LLM grades with human grades on the pairs both judged."""

    model_config = ConfigDict(frozen=True)

    n: int
    exact_agreement: float
    cohen_kappa: float | None
    cohen_kappa_linear: float | None
    cohen_kappa_quadratic: float | None
    krippendorff_alpha_ordinal: float | None
    binary_agreement: float
    binary_precision: float | None
    binary_recall: float | None
    binary_kappa: float | None
    spearman: float | None
    mean_signed_difference: float
    mean_absolute_difference: float
    confusion_matrix: list[list[int]]
    grade_counts: dict[str, list[int]]
    n_llm: int
    n_human: int
    n_llm_failed: int
    n_only_llm: int
    n_only_human: int
    per_query: dict[str, dict[str, float | int | None]]
    ci: dict[str, Any] | None
    bootstrap_unit: Unit | None = None
    """What the intervals resample: ``query`` (whole queries) or ``pair``; None without."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (undefined statistics are ``None``)."""
        return self.model_dump(mode="json")

    def to_text(self) -> str:
        """A short human-readable summary (what `labeler reconcile` prints)."""
        return render_text(self)

    def _repr_html_(self) -> str:
        from labeler.report.notebook import agreement_html

        return agreement_html(self.to_dict())


def agreement(*, llm: LabelsLike, human: QrelsLike, bootstrap: int = 1000, seed: int = 0,
              unit: Unit = DEFAULT_UNIT) -> AgreementReport:
    """Agreement of LLM labels with human labels on the pairs both judged.

    Failed LLM labels are left out and counted (``n_llm_failed``). ``bootstrap`` resamples
    (0 for none) of whole queries (``unit="query"``, the default) or of pairs
    (``unit="pair"``) give 95% CIs with the explicit ``seed``.

    Usage: ``agreement(llm="labels.jsonl", human="human.qrels").cohen_kappa_quadratic``
    """
    if bootstrap < 0:
        raise ConfigError(f"bootstrap must be >= 0, got {bootstrap}", setting="bootstrap")
    if unit not in UNITS:
        raise ConfigError(f"unknown bootstrap unit {unit!r} (use {' or '.join(UNITS)})",
                          setting="bootstrap_unit")
    both, counts = joined(llm=llm, human=human)
    h, ll = both["human"].to_numpy(), both["llm"].to_numpy()
    spearman = _quiet(lambda: stats.spearmanr(h, ll).statistic)
    return AgreementReport(
        **core_metrics(h, ll), **_binary(h, ll), spearman=spearman,
        confusion_matrix=confusion_matrix(h, ll, labels=_LABELS).tolist(),
        grade_counts={"human": np.bincount(h, minlength=4).tolist(),
                      "llm": np.bincount(ll, minlength=4).tolist()},
        **counts, per_query=_per_query(both),
        ci=bootstrap_ci(both, bootstrap, seed, unit) if bootstrap else None,
        bootstrap_unit=unit if bootstrap else None,
    )


def render_text(r: AgreementReport) -> str:
    """The report as a few readable lines and the confusion matrix."""
    ci = r.ci or {}

    def with_ci(name: str) -> str:
        band = ci.get(name)
        return fmt.num(getattr(r, name)) + (f"  {fmt.interval(band)}" if band else "")

    lean = ("LLM more lenient" if r.mean_signed_difference > 0 else
            "LLM stricter" if r.mean_signed_difference < 0 else "no lean")
    lines = [
        f"pairs judged by both: {r.n}  (LLM labels {r.n_llm}, {r.n_llm_failed} failed; "
        f"human {r.n_human}; LLM only {r.n_only_llm}; human only {r.n_only_human})",
        f"exact agreement          {with_ci('exact_agreement')}",
        f"Cohen's kappa            {with_ci('cohen_kappa')}",
        f"  linear weighted        {with_ci('cohen_kappa_linear')}",
        f"  quadratic weighted     {with_ci('cohen_kappa_quadratic')}",
        f"Krippendorff alpha (ord) {with_ci('krippendorff_alpha_ordinal')}",
        f"binary (grade >= {RELEVANT})      agreement {fmt.num(r.binary_agreement)}, precision "
        f"{fmt.num(r.binary_precision)}, recall {fmt.num(r.binary_recall)}, "
        f"kappa {fmt.num(r.binary_kappa)}",
        f"mean signed difference   {fmt.num(r.mean_signed_difference, signed=True)} "
        f"(LLM - human: {lean})",
    ]
    if ci:
        what = "whole queries" if ci["unit"] == "query" else "pairs"
        lines.append(f"(95% CIs: {ci['n_resamples']} bootstrap resamples of {what}, "
                     f"seed {ci['seed']})")
    lines.append("confusion matrix (rows human, columns LLM):")
    lines.append("         " + "".join(f"{'LLM ' + str(g):>8}" for g in GRADES))
    for g, row in zip(GRADES, r.confusion_matrix):
        lines.append(f"human {g}  " + "".join(f"{v:>8}" for v in row))
    return "\n".join(lines)


