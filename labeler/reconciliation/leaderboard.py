"""Several judges against the same human labels: one table, ranked by Krippendorff's alpha.

Every judge is measured on the same pairs — those that every label set graded (``ok``) and
the humans judged — with :func:`labeler.reconciliation.agreement.agreement`, so each judge's
figures carry
the keys of ``labeler reconcile``'s report. With runs, each judge also gets Kendall's tau
between the order of the runs under its labels and under the human labels
(:func:`labeler.reconciliation.comparison.compare`). The pairs on which the judges disagree most
are listed
for an audit.

Usage::

    from labeler.reconciliation.leaderboard import leaderboard
    board = leaderboard(human="human.qrels", llm={"gpt4o": "a.qrels", "llama": "b.jsonl"})
    board.to_frame()          # one row per judge, best alpha first
    board.to_dict()           # {"n": n, "judges": {"gpt4o": {...}, ...}, ...}
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from labeler import io
from labeler.errors import ConfigError, InputError
from labeler.schema import STATUS, STATUS_OK
from labeler.reconciliation.agreement import (DEFAULT_UNIT, KEYS, AgreementReport,
                                              CheckedLabels, CheckedQrels, LabelsLike,
                                              QrelsLike, Unit, agreement, read_human, read_llm)
from labeler.reconciliation.versus_best import DEFAULT_ALPHA, method, versus_best
from labeler.statistics.inference import check_alpha

if TYPE_CHECKING:
    from labeler.report.progress import Progress

JudgesLike = Mapping[str, LabelsLike] | Sequence[LabelsLike]
HEADLINE = ("krippendorff_alpha_ordinal", "cohen_kappa", "cohen_kappa_linear",
            "cohen_kappa_quadratic", "exact_agreement", "binary_agreement",
            "mean_signed_difference")
"""The per-judge figures of the table (all of reconcile's keys are in ``to_dict``)."""


@dataclass(frozen=True, eq=False)
class Leaderboard:
    """The judges' agreement with the human labels on their common pairs.

    - ``n``: pairs graded by every judge and by the humans (the statistics' sample).
    - ``judges``: name → :class:`~labeler.reconciliation.agreement.AgreementReport`, best alpha
    first.
    - ``kendall_tau``: name → tau of the run order (None without runs or below two runs).
    - ``disagreements``: the common pairs with the widest spread of judge grades:
      ``query_id, chunk_id, human, <one column per judge>, spread, mean_gap``.

    Usage::

        print(leaderboard(human=h, llm=sets).to_text())
    """

    n: int
    judges: dict[str, AgreementReport]
    kendall_tau: dict[str, float | None]
    disagreements: pd.DataFrame
    k: int | None = None
    bootstrap_unit: str | None = None
    """What the judges' intervals resample (``query`` or ``pair``); None without intervals."""
    versus_best: list[dict[str, Any]] = field(default_factory=list)
    """The best judge against each other judge (:func:`~labeler.reconciliation.versus_best.
    versus_best`): ``judge, delta_alpha, ci, p, p_adjusted, worse, kappa_quadratic``."""
    versus_method: dict[str, Any] | None = None
    """How :attr:`versus_best` was tested (bootstrap, seed, unit, alpha, adjustment)."""

    @property
    def order(self) -> list[str]:
        """Judge names, best Krippendorff's alpha first."""
        return list(self.judges)

    @property
    def not_shown_worse(self) -> list[str]:
        """The best judge and every judge the paired tests do not show worse than it (all of
        them without a bootstrap)."""
        worse = {v["judge"] for v in self.versus_best if v["worse"]}
        return [name for name in self.judges if name not in worse]

    def to_frame(self) -> pd.DataFrame:
        """One row per judge (rank 1 = best alpha): the headline figures, tau, and against
        the best judge the gap of alpha, its Holm-adjusted p and the verdict."""
        versus = {v["judge"]: v for v in self.versus_best}
        rows = []
        for rank, (name, rep) in enumerate(self.judges.items(), 1):
            row: dict[str, Any] = {"rank": rank, "judge": name}
            row.update({key: getattr(rep, key) for key in HEADLINE})
            row["kendall_tau"] = self.kendall_tau.get(name)
            v = versus.get(name)
            row["alpha_gap_to_best"] = v["delta_alpha"] if v else None
            row["p_adjusted"] = v["p_adjusted"] if v else None
            row["versus_best"] = ("best" if rank == 1 else "not tested" if not v or
                                  v["worse"] is None else "worse" if v["worse"]
                                  else "not shown worse")
            rows.append(row)
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        """``{"n": n, "judges": {name: {rank, reconcile's keys, kendall_tau}}, ...}``."""
        judges = {}
        for rank, (name, rep) in enumerate(self.judges.items(), 1):
            judges[name] = {"rank": rank, **rep.to_dict(),
                            "kendall_tau": self.kendall_tau.get(name)}
        disputed = [{"query_id": str(d["query_id"]), "chunk_id": str(d["chunk_id"]),
                     "human": int(d["human"]),
                     "grades": {name: int(d[_col(name)]) for name in self.judges},
                     "spread": int(d["spread"]), "mean_gap": float(d["mean_gap"])}
                    for d in self.disagreements.to_dict(orient="records")]
        return {"n": self.n, "judges": judges, "k": self.k,
                "ranked_by": "krippendorff_alpha_ordinal", "bootstrap_unit": self.bootstrap_unit,
                "best": self.order[0] if self.judges else None,
                "versus_best": self.versus_best, "versus_best_test": self.versus_method,
                "not_shown_worse": self.not_shown_worse, "disagreements": disputed}

    def _repr_html_(self) -> str:
        from labeler.report.notebook import table

        frame = self.to_frame()
        return table(frame.itertuples(index=False), [str(c) for c in frame.columns],
                     f"{len(frame)} judges on {self.n} common pairs, best alpha first")

    def to_text(self) -> str:
        """The table for a terminal (lines under 160 characters), which judges are not shown
        worse than the best, then the most disputed pairs."""
        from labeler.report.judges_text import leaderboard_text

        return leaderboard_text(self.to_dict())


def _col(name: str) -> str:
    return f"grade:{name}"


def named_sets(llm: JudgesLike) -> dict[str, LabelsLike]:
    """Judge name → label set: a mapping as is; paths named by their file stem
    (``NAME=PATH`` strings name themselves); DataFrames ``judge1``, ``judge2``, ...

    Usage: ``named_sets(["a.qrels", "gpt=b.jsonl"])  # {"a": "a.qrels", "gpt": "b.jsonl"}``
    """
    if isinstance(llm, Mapping):
        out = {str(k): v for k, v in llm.items()}
    else:
        out = {}
        for i, item in enumerate(llm, 1):
            name, value = _name_of(item, i)
            if name in out:
                raise ConfigError(f"two label sets are named {name!r}: name them with "
                                  "NAME=PATH")
            out[name] = value
    if not out:
        raise ConfigError("no label sets given")
    return out


def _name_of(item: LabelsLike, i: int) -> tuple[str, LabelsLike]:
    if isinstance(item, pd.DataFrame):
        return str(item.attrs.get("name", f"judge{i}")), item
    name, path = io.parse_named(item, "label set")
    if name is not None:
        return name, path
    return io.run_stem(os.fspath(item)), item


def common_pairs(human: pd.DataFrame, sets: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The (query_id, chunk_id) pairs the humans judged and every set graded ``ok``."""
    common = human[KEYS].drop_duplicates()
    for name, df in sets.items():
        ok = df.loc[df[STATUS] == STATUS_OK, KEYS]
        narrowed = common.merge(ok, on=KEYS, how="inner")
        if narrowed.empty:
            raise InputError(f"label set {name!r} ({df.attrs.get('path')}) has no graded pair "
                             "in common with the human labels and the other sets")
        common = narrowed
    return common.reset_index(drop=True)


def leaderboard(*, human: QrelsLike, llm: JudgesLike, runs: Any = None, k: int = 10,
                bootstrap: int = 0, seed: int = 0, unit: Unit = DEFAULT_UNIT, top: int = 20,
                grade_map: io.GradeMap = None, progress: bool | None = False,
                alpha: float = DEFAULT_ALPHA) -> Leaderboard:
    """Agreement of several label sets with the same human labels, best alpha first.

    ``llm``: ``{name: labels}`` or a list of paths (``NAME=PATH`` names one). ``runs`` (any
    form :func:`labeler.reconciliation.comparison.compare` takes) adds each judge's Kendall's tau.
    ``bootstrap`` resamples of whole queries (``unit="query"``) or of pairs (``unit="pair"``)
    give CIs (0: none), and the paired tests of the best judge against each other one
    (``versus_best``; Holm over the comparisons, significant below ``alpha``). ``grade_map``
    maps raw LLM grades (e.g. ``{"5": 3}``).
    ``progress``: None shows it where it can (a bar, a notebook line, log lines).

    Usage::

        leaderboard(human="human.qrels", llm=["a.qrels", "b.qrels"], runs=["x.run", "y.run"])
    """
    named = named_sets(llm)
    sets = {name: read_llm(obj, grade_map=grade_map) for name, obj in named.items()}
    human_df = read_human(human)
    common = common_pairs(human_df, sets)
    human_common = human_df.merge(common, on=KEYS, how="inner")
    human_common.attrs["path"] = human_df.attrs.get("path")
    from labeler.report.progress import Progress

    shown = Progress("judges", len(sets) * (2 if runs is not None else 1), enabled=progress)
    reports = {}
    for name, df in sets.items():   # each set read and checked once, above
        llm_df, human_df_checked = CheckedLabels(df), CheckedQrels(human_common)
        llm_df.attrs.update(df.attrs)
        human_df_checked.attrs.update(human_common.attrs)
        reports[name] = agreement(llm=llm_df, human=human_df_checked, bootstrap=bootstrap,
                                  seed=seed, unit=unit)
        shown.advance(1, name)
    taus = (_taus(human_common, sets, common, runs, k, shown) if runs is not None
            else dict.fromkeys(sets))
    shown.close()
    ranked = sorted(reports, key=lambda name: _rank_key(reports[name], name))
    grades = _grade_table(human_common, sets, ranked)
    versus = versus_best(grades.rename(columns={_col(n): n for n in ranked}), ranked,
                         bootstrap=bootstrap, seed=seed, unit=unit, alpha=check_alpha(alpha))
    return Leaderboard(n=len(common), judges={name: reports[name] for name in ranked},
                       kendall_tau={name: taus[name] for name in ranked},
                       disagreements=_disputed(grades, ranked, top),
                       k=k if runs is not None else None,
                       bootstrap_unit=unit if bootstrap else None, versus_best=versus,
                       versus_method=method(bootstrap=bootstrap, seed=seed, unit=unit,
                                            alpha=alpha) if versus else None)


def _rank_key(rep: AgreementReport, name: str) -> tuple[float, str]:
    a = rep.krippendorff_alpha_ordinal
    return (-a if a is not None else np.inf, name)


def _graded(df: pd.DataFrame, common: pd.DataFrame) -> pd.DataFrame:
    ok = df.loc[df[STATUS] == STATUS_OK, [*KEYS, "grade"]]
    out = common.merge(ok, on=KEYS, how="inner")
    return out.astype({"grade": "int64"})


def _taus(human: pd.DataFrame, sets: Mapping[str, pd.DataFrame], common: pd.DataFrame,
          runs: Any, k: int, shown: Progress) -> dict[str, float | None]:
    from labeler.reconciliation.comparison import compare  # scipy and the scorer: only with runs

    taus = {}
    for name, df in sets.items():
        taus[name] = compare(human=human[[*KEYS, "grade"]], llm=_graded(df, common), runs=runs,
                             k=k).kendall_tau
        shown.advance(1, f"{name}: run order")
    return taus


def _grade_table(human: pd.DataFrame, sets: Mapping[str, pd.DataFrame], order: list[str]
                 ) -> pd.DataFrame:
    """One row per common pair: ``query_id, chunk_id, human`` and ``grade:<judge>`` per judge."""
    table = human[[*KEYS, "grade"]].rename(columns={"grade": "human"}).astype({"human": "int64"})
    for name in order:
        g = _graded(sets[name], table[KEYS]).rename(columns={"grade": _col(name)})
        table = table.merge(g, on=KEYS, how="left")
    return table


def _disputed(table: pd.DataFrame, order: list[str], top: int) -> pd.DataFrame:
    """The common pairs with the widest spread of judge grades (then farthest from human)."""
    table = table.copy()
    grades = table[[_col(n) for n in order]].to_numpy(dtype="int64")
    table["spread"] = grades.max(axis=1) - grades.min(axis=1)
    table["mean_gap"] = grades.mean(axis=1) - table["human"].to_numpy()
    table = table.assign(_gap=table["mean_gap"].abs()).sort_values(
        ["spread", "_gap", "query_id", "chunk_id"], ascending=[False, False, True, True],
        kind="stable")
    return table.drop(columns="_gap").head(max(int(top), 0)).reset_index(drop=True)
