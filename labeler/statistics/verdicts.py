"""Which differences between runs are real, under which labels, and how sure that is.

From per-query NDCG of every run under human and under LLM labels: each run's 95% interval
under each label set; every unordered pair of runs tested under each label set (paired test,
Holm-corrected over the pairs) and given a verdict; optionally prediction-powered estimates
(PPI++) when the human labels cover a random sample of the queries; and a headline in words.

Usage::

    from labeler.statistics.verdicts import StatsOptions, significance
    sig = significance(per_query, ["bm25", "bert"], options=StatsOptions(test="t"))
    sig.counts                # {"confirmed": 1, "reversed": 0, "lost": 0, ...}
    sig.pairs_to_dicts()      # the `pairs` list of `labeler compare --json`
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from labeler.statistics import inference as stats
from labeler.errors import ConfigError
from labeler.statistics.options import StatsOptions

LABEL_SETS = ("human", "llm")


@dataclass(frozen=True, eq=False)
class Significance:
    """Intervals, pair verdicts and PPI estimates of a comparison.

    - ``runs``: ``system, human_lo, human_hi, llm_lo, llm_hi`` (NaN: no interval), plus
      ``ppi_estimate, ppi_lo, ppi_hi, ppi_n_labelled, ppi_n_unlabelled, ppi_more_to_halve``
      with ``ppi``.
    - ``pairs``: ``a, b``, for each label set ``<set>_delta, <set>_p, <set>_p_adjusted,
      <set>_n``, ``verdict``, plus ``ppi_delta, ppi_lo, ppi_hi, ppi_p`` with ``ppi``.
    """

    options: StatsOptions
    runs: pd.DataFrame
    pairs: pd.DataFrame
    notes: tuple[str, ...] = field(default=())

    @property
    def counts(self) -> dict[str, int]:
        """How many pairs got each verdict (every verdict listed, in a fixed order)."""
        got = self.pairs["verdict"].value_counts() if len(self.pairs) else pd.Series(dtype=int)
        return {v: int(got.get(v, 0)) for v in stats.VERDICTS}

    def counts_line(self) -> str:
        """``"of 55 pairs: 12 confirmed, 0 reversed, 3 lost, 1 spurious, 39 ties"``."""
        c = self.counts
        parts = [f"{c[v]} {'ties' if v == 'tie' and c[v] != 1 else v}" for v in stats.VERDICTS]
        n = len(self.pairs)
        return f"of {n} pair{'' if n == 1 else 's'}: {', '.join(parts)}"

    def run_ci(self, system: str, label_set: str) -> tuple[float, float] | None:
        """The 95% interval of ``system``'s mean under ``label_set`` (``human``/``llm``)."""
        row = self.runs.loc[self.runs["system"] == system]
        if row.empty:
            return None
        lo, hi = row.iloc[0][f"{label_set}_lo"], row.iloc[0][f"{label_set}_hi"]
        return None if pd.isna(lo) else (float(lo), float(hi))

    def run_ppi(self, system: str) -> dict[str, Any] | None:
        """``{"estimate", "ci", "n_labelled", "n_unlabelled", "more_to_halve"}`` or None."""
        if "ppi_estimate" not in self.runs.columns:
            return None
        r = self.runs.loc[self.runs["system"] == system]
        if r.empty or pd.isna(r.iloc[0]["ppi_estimate"]):
            return None
        row = r.iloc[0]
        more = row["ppi_more_to_halve"]
        return {"estimate": float(row["ppi_estimate"]),
                "ci": [float(row["ppi_lo"]), float(row["ppi_hi"])],
                "n_labelled": int(row["ppi_n_labelled"]),
                "n_unlabelled": int(row["ppi_n_unlabelled"]),
                "more_to_halve": None if pd.isna(more) else int(more)}

    def pairs_to_dicts(self) -> list[dict[str, Any]]:
        """The ``pairs`` list of ``labeler compare --json``."""
        out = []
        for r in self.pairs.to_dict("records"):
            item: dict[str, Any] = {"a": r["a"], "b": r["b"]}
            for s in LABEL_SETS:
                item[s] = {"delta": _num(r[f"{s}_delta"]), "p": _num(r[f"{s}_p"]),
                           "p_adjusted": _num(r[f"{s}_p_adjusted"]), "n": int(r[f"{s}_n"])}
            item["verdict"] = r["verdict"]
            if "ppi_delta" in r:
                item["ppi"] = (None if pd.isna(r["ppi_delta"]) else
                               {"delta": float(r["ppi_delta"]),
                                "ci": [float(r["ppi_lo"]), float(r["ppi_hi"])],
                                "p": float(r["ppi_p"])})
            out.append(item)
        return out

    def planning_line(self) -> str | None:
        """How many more human-judged queries would halve the PPI intervals (median over
        runs), or None without PPI."""
        if "ppi_more_to_halve" not in self.runs.columns:
            return None
        more = self.runs["ppi_more_to_halve"].dropna()
        if more.empty:
            if self.runs["ppi_estimate"].notna().any():
                return ("Even judging every remaining query by hand would not halve the "
                        "PPI intervals.")
            return None
        n_lab = int(self.runs["ppi_n_labelled"].dropna().max())
        return (f"Judging about {int(more.median())} more randomly drawn queries by hand "
                f"(on top of {n_lab}) would halve the PPI intervals.")


def _num(x: Any) -> float | None:
    if x is None or x is pd.NA:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


# ---------------------------------------------------------------------- computation

def significance(per_query: pd.DataFrame, systems: Sequence[str], *,
                 options: StatsOptions | None = None,
                 ppi_population: Mapping[str, Collection[str]] | None = None,
                 ppi_labelled: Collection[str] | None = None) -> Significance:
    """Intervals, pair tests and verdicts from ``per_query`` (``system, query_id, human,
    llm``; NaN where a label set does not score a query).

    With ``options.ppi``, ``ppi_population`` maps each run to its queries that the LLM labels
    cover and ``ppi_labelled`` lists the queries the human labels cover; NDCG of a query
    there without a relevant label counts 0.

    Usage: ``significance(comparison.per_query, comparison.systems, options=StatsOptions())``
    """
    options = options or StatsOptions()
    systems = list(systems)
    wide = {s: per_query.pivot_table(index="query_id", columns="system", values=s,
                                     aggfunc="first", dropna=False)
            .reindex(columns=systems) for s in LABEL_SETS}
    runs = pd.DataFrame({"system": systems})
    for s in LABEL_SETS:
        cis = [stats.mean_ci(wide[s][sys].dropna().to_numpy()) for sys in systems]
        runs[f"{s}_lo"] = [c[0] if c else math.nan for c in cis]
        runs[f"{s}_hi"] = [c[1] if c else math.nan for c in cis]
    pairs = _pairs(wide, systems, options)
    notes: list[str] = []
    if options.ppi:
        if ppi_population is None or ppi_labelled is None:
            raise ConfigError("prediction-powered estimates need the queries of each run in "
                              "the LLM labels and the queries in the human labels")
        runs, pairs = _with_ppi(per_query, systems, runs, pairs, ppi_population,
                                set(ppi_labelled), notes)
    return Significance(options, runs, pairs, tuple(notes))


def _pairs(wide: Mapping[str, pd.DataFrame], systems: list[str],
           options: StatsOptions) -> pd.DataFrame:
    combos = list(itertools.combinations(systems, 2))
    data: dict[str, list[Any]] = {"a": [a for a, _ in combos], "b": [b for _, b in combos]}
    for s in LABEL_SETS:
        tests = []
        for a, b in combos:
            both = wide[s][[a, b]].dropna()
            tests.append(stats.paired_test(both[a].to_numpy(), both[b].to_numpy(),
                                           test=options.test,
                                           permutations=options.permutations,
                                           seed=options.seed))
        data[f"{s}_delta"] = [math.nan if t.delta is None else t.delta for t in tests]
        data[f"{s}_p"] = [math.nan if t.p is None else t.p for t in tests]
        adjusted = stats.holm([t.p for t in tests])
        data[f"{s}_p_adjusted"] = [math.nan if q is None else q for q in adjusted]
        data[f"{s}_n"] = [t.n for t in tests]
    data["verdict"] = [
        stats.verdict(_num(data["human_delta"][i]), _num(data["human_p_adjusted"][i]),
                      _num(data["llm_delta"][i]), _num(data["llm_p_adjusted"][i]),
                      options.alpha)
        for i in range(len(combos))]
    cols = ["a", "b", *(f"{s}_{c}" for s in LABEL_SETS for c in ("delta", "p", "p_adjusted",
                                                                   "n")), "verdict"]
    return pd.DataFrame(data, columns=cols)


def _values(per_query: pd.DataFrame, system: str, col: str,
            queries: list[str]) -> np.ndarray:
    got = per_query.loc[per_query["system"] == system].set_index("query_id")[col]
    return got.reindex(queries).fillna(0.0).to_numpy(dtype="float64")


def _ppi(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> stats.PPIResult | None:
    """PPI++ with its 95% interval, like every other interval of a comparison (``--alpha``
    is the significance level of the pair verdicts, not the level of the intervals)."""
    if len(y) < 2 or len(yhat_u) < 1:
        return None
    return stats.ppi_mean(y, yhat, yhat_u, alpha=stats.DEFAULT_ALPHA)


def _with_ppi(per_query: pd.DataFrame, systems: list[str], runs: pd.DataFrame,
              pairs: pd.DataFrame, population: Mapping[str, Collection[str]],
              labelled: set[str],
              notes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    runs, pairs = runs.copy(), pairs.copy()
    split: dict[str, tuple[list[str], list[str]]] = {}
    for sys in systems:
        pop = sorted(set(population.get(sys, ())))
        split[sys] = ([q for q in pop if q in labelled], [q for q in pop if q not in labelled])
    rows = []
    for sys in systems:
        lab, unl = split[sys]
        y = _values(per_query, sys, "human", lab)
        yhat, yhat_u = _values(per_query, sys, "llm", lab), _values(per_query, sys, "llm", unl)
        res = _ppi(y, yhat, yhat_u)
        if res is None:
            notes.append(f"{sys}: no prediction-powered estimate ({len(lab)} queries with "
                         f"human labels, {len(unl)} without; it needs at least 2 and 1)")
            rows.append((math.nan,) * 6)
            continue
        more = stats.more_queries_to_halve_ppi(y, yhat, yhat_u)
        rows.append((res.estimate, res.ci[0], res.ci[1], res.n_labelled, res.n_unlabelled,
                     math.nan if more is None else more))
    cols = ["ppi_estimate", "ppi_lo", "ppi_hi", "ppi_n_labelled", "ppi_n_unlabelled",
            "ppi_more_to_halve"]
    for i, c in enumerate(cols):
        runs[c] = [r[i] for r in rows]
    prow = []
    for a, b in zip(pairs["a"], pairs["b"]):
        lab = sorted(set(split[a][0]) & set(split[b][0]))
        unl = sorted(set(split[a][1]) & set(split[b][1]))

        def diff(col: str, qs: list[str], a: str = a, b: str = b) -> np.ndarray:
            return _values(per_query, a, col, qs) - _values(per_query, b, col, qs)

        res = _ppi(diff("human", lab), diff("llm", lab), diff("llm", unl))
        prow.append((math.nan,) * 4 if res is None else
                    (res.estimate, res.ci[0], res.ci[1], res.p))
    for i, c in enumerate(["ppi_delta", "ppi_lo", "ppi_hi", "ppi_p"]):
        pairs[c] = [r[i] for r in prow]
    return runs, pairs


# ---------------------------------------------------------------------- words

def headline(means: pd.DataFrame, sig: Significance) -> str:
    """One sentence: which run is best under human labels and how surely, and what the LLM
    labels do to that. ``means``: ``system, human, llm`` (mean NDCG per run).

    Usage: ``headline(comparison.runs, sig)`` → ``"Under human labels bert is best,
    significantly ahead of 2 of 3 runs; the LLM labels keep it first but see 1 spurious
    difference."``
    """
    ok = means.dropna(subset=["human"])
    if ok.empty:
        return "No run has a score under the human labels."
    best = str(ok.sort_values(["human", "system"], ascending=[False, True],
                              kind="stable").iloc[0]["system"])
    if len(means) < 2:
        return f"Only one run ({best}): there is no order to compare."
    alpha = sig.options.alpha
    others = len(means) - 1
    ahead = 0
    for r in sig.pairs.to_dict("records"):
        if best in (r["a"], r["b"]) and stats.significant(_num(r["human_p_adjusted"]), alpha):
            sign = 1 if r["a"] == best else -1
            ahead += int(sign * float(r["human_delta"]) > 0)
    first = (f"Under human labels {best} is best, significantly ahead of {ahead} of "
             f"{others} run{'s' if others != 1 else ''}" if ahead else
             f"Under human labels {best} has the highest mean, but is not significantly "
             f"ahead of any other run")
    llm_ok = means.dropna(subset=["llm"])
    if llm_ok.empty:
        return first + "; no run has a score under the LLM labels."
    llm_best = str(llm_ok.sort_values(["llm", "system"], ascending=[False, True],
                                      kind="stable").iloc[0]["system"])
    second = ("the LLM labels keep it first" if llm_best == best else
              f"the LLM labels put {llm_best} first")
    c = sig.counts

    def plural(n: int, one: str, many: str) -> str:
        return f"{n} {one if n == 1 else many}"

    wrong = []
    if c["spurious"]:
        wrong.append("see " + plural(c["spurious"], "spurious difference",
                                     "spurious differences"))
    if c["reversed"]:
        wrong.append("reverse " + plural(c["reversed"], "real difference", "real differences"))
    if c["lost"]:
        wrong.append("miss " + plural(c["lost"], "real difference", "real differences"))
    if wrong:
        third = "but " + _join(wrong)
    elif c["confirmed"]:
        third = "and agree on " + ("the one significant difference" if c["confirmed"] == 1
                                   else f"all {c['confirmed']} significant differences")
    else:
        third = "and neither label set finds a significant difference"
    return f"{first}; {second} {third}."


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
