"""Which differences between runs are real, under which labels, and how sure that is.

From per-query values of every run under human and under LLM labels: each run's 95% interval
under each label set; pairs of runs (all, each against the best, or neighbours) tested under
each label set on the SAME queries — those both runs score under both label sets — with Holm's
correction over the pairs and a verdict; optionally prediction-powered estimates when the human
labels cover a random sample of the queries; and a headline in words
(:mod:`labeler.statistics.words`). The t-tests, Holm and the verdicts of all pairs are array
operations, so a thousand runs take seconds.

Usage::

    from labeler.statistics.verdicts import StatsOptions, significance
    sig = significance(per_query, ["bm25", "bert"], options=StatsOptions(test="t"))
    sig.counts                # {"confirmed": 1, "reversed": 0, "human-only": 0, ...}
    sig.pairs_to_dicts()      # the `pairs` list of `labeler compare --json`
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from labeler.errors import ConfigError
from labeler.statistics import inference as stats
from labeler.statistics import pairs as pairlib
from labeler.statistics import ppi as ppilib
from labeler.statistics.options import StatsOptions

__all__ = ["BOUNDS", "DIFF_BOUNDS", "LABEL_SETS", "VERDICTS", "Progress", "Significance",
           "StatsOptions", "headline", "significance"]

LABEL_SETS = ("human", "llm")
VERDICTS: tuple[str, ...] = ("confirmed", "reversed", "human-only", "llm-only", "unresolved")
"""Every pair verdict, in the order they are counted: significant under both label sets with
the same sign, with opposite signs, under the human labels only, under the LLM labels only,
under neither (no evidence of a difference, which is not evidence of equality)."""
BOUNDS = (0.0, 1.0)
"""Every measure compared lies in [0, 1]: intervals of a mean are clipped there."""
DIFF_BOUNDS = (-1.0, 1.0)
Progress = Callable[[int, int], None]
"""``progress(done, total)``: called while the pairs of a long comparison are tested."""


@dataclass(frozen=True, eq=False)
class Significance:
    """Intervals, pair verdicts and PPI estimates of a comparison.

    - ``runs``: ``system, human_lo, human_hi, llm_lo, llm_hi`` (NaN: no interval),
      ``shared_human, shared_llm`` (means over the ``n_shared`` queries every run scores under
      both label sets).
    - ``pairs``: ``a, b, n`` (queries both runs score under both label sets), for each label
      set ``<set>_delta, <set>_p, <set>_p_adjusted``, ``verdict``, ``human_only_n,
      human_only_delta`` (queries only the human labels let both runs score), plus
      ``human_sim_lo, human_sim_hi`` (the paired t's Bonferroni simultaneous intervals under
      human labels), plus ``ppi_delta, ppi_lo, ppi_hi, ppi_sim_lo, ppi_sim_hi, ppi_p,
      ppi_p_adjusted, ppi_verdict, ppi_reason, ppi_n_informative, ppi_n_known_zero`` with
      ``ppi``.
    - ``ppi_runs``: each run's :class:`~labeler.statistics.ppi.PPIEstimate` with ``ppi``.
    - ``pair_mode``: which pairs were tested (``all``, ``best``, ``adjacent``).
    """

    options: StatsOptions
    runs: pd.DataFrame
    pairs: pd.DataFrame
    n_shared: int = 0
    pair_mode: str = "all"
    ppi_runs: Mapping[str, ppilib.PPIEstimate] | None = None
    notes: tuple[str, ...] = field(default=())
    human_only_cis: Mapping[str, tuple[float, float] | None] | None = None
    """With ``ppi``: each run's finite-population t interval of its labelled queries alone."""

    @property
    def counts(self) -> dict[str, int]:
        """How many pairs got each verdict (every verdict listed, in a fixed order)."""
        got = self.pairs["verdict"].value_counts() if len(self.pairs) else pd.Series(dtype=int)
        return {v: int(got.get(v, 0)) for v in VERDICTS}

    def counts_line(self) -> str:
        """``"of 55 pairs: 12 confirmed, 0 reversed, 3 human-only, 1 llm-only, 39
        unresolved"``."""
        c = self.counts
        n = len(self.pairs)
        which = {"all": "", "best": " (each run against the best)",
                 "adjacent": " (neighbours in the order)"}[self.pair_mode]
        return (f"of {n} pair{'' if n == 1 else 's'}{which}: "
                + ", ".join(f"{c[v]} {v}" for v in VERDICTS))

    def run_ci(self, system: str, label_set: str) -> tuple[float, float] | None:
        """The 95% interval of ``system``'s mean under ``label_set`` (``human``/``llm``)."""
        row = self.runs.loc[self.runs["system"] == system]
        if row.empty:
            return None
        lo, hi = row.iloc[0][f"{label_set}_lo"], row.iloc[0][f"{label_set}_hi"]
        return None if pd.isna(lo) else (float(lo), float(hi))

    def run_ppi(self, system: str) -> dict[str, Any] | None:
        """``{"estimate", "ci", "se", "n_labelled", "n_unlabelled", "target", "lambda"}``
        (plus ``"reason"`` when there is no interval), or None without PPI."""
        if self.ppi_runs is None or system not in self.ppi_runs:
            return None
        return self.ppi_runs[system].to_dict()

    def run_human_only_ci(self, system: str) -> list[float] | None:
        """With PPI: the finite-population t interval of ``system``'s labelled queries alone
        (what the human labels say without the LLM's), or None."""
        ci = (self.human_only_cis or {}).get(system)
        return None if ci is None else list(ci)

    def best_set(self) -> list[str]:
        """The runs no other run is shown to beat by the simultaneous intervals (PPI's with
        ``ppi``, else the paired t's under human labels, Bonferroni over the pairs), best
        first: it holds the best run under full human labelling at least 95% of the time."""
        from labeler.statistics.ranking import best_set

        p = self.pairs
        lo, hi = (("ppi_sim_lo", "ppi_sim_hi") if self.options.ppi
                  else ("human_sim_lo", "human_sim_hi"))
        if self.options.ppi and self.ppi_runs:
            key = {s: e.estimate for s, e in self.ppi_runs.items()}
        else:
            key = dict(zip(self.runs["system"], self.runs["shared_human"]))
        if len(p) == 0 or lo not in p.columns:
            return best_set(list(self.runs["system"]), [], key)
        return best_set(list(self.runs["system"]),
                        list(zip(p["a"], p["b"], p[lo], p[hi])), key)

    def pairs_to_dicts(self) -> list[dict[str, Any]]:
        """The ``pairs`` list of ``labeler compare --json``."""
        p = self.pairs
        cols = {c: p[c].to_numpy() for c in p.columns}
        out = []
        for i in range(len(p)):
            item: dict[str, Any] = {"a": cols["a"][i], "b": cols["b"][i], "n": int(cols["n"][i])}
            for s in LABEL_SETS:
                item[s] = {"delta": _num(cols[f"{s}_delta"][i]), "p": _num(cols[f"{s}_p"][i]),
                           "p_adjusted": _num(cols[f"{s}_p_adjusted"][i])}
            sim = ((_num(cols["human_sim_lo"][i]), _num(cols["human_sim_hi"][i]))
                   if "human_sim_lo" in cols else (None, None))
            item["human"]["ci_simultaneous"] = None if None in sim else list(sim)
            item["verdict"] = cols["verdict"][i]
            ho = int(cols["human_only_n"][i])
            item["human_only_queries"] = (None if ho == 0 else
                                          {"n": ho, "delta": _num(cols["human_only_delta"][i])})
            if "ppi_delta" in cols:
                item["ppi"] = _ppi_pair(cols, i)
            out.append(item)
        return out


def _ppi_pair(cols: Mapping[str, np.ndarray], i: int) -> dict[str, Any]:
    def ci(lo: str, hi: str) -> list[float] | None:
        a, b = _num(cols[lo][i]), _num(cols[hi][i])
        return None if a is None or b is None else [a, b]

    out: dict[str, Any] = {"delta": _num(cols["ppi_delta"][i]), "ci": ci("ppi_lo", "ppi_hi"),
                           "ci_simultaneous": ci("ppi_sim_lo", "ppi_sim_hi"),
                           "p": _num(cols["ppi_p"][i]),
                           "p_adjusted": _num(cols["ppi_p_adjusted"][i]),
                           "verdict": cols["ppi_verdict"][i]}
    if int(cols["ppi_n_known_zero"][i]) > 0:
        out["n_informative"] = int(cols["ppi_n_informative"][i])
        out["n_known_zero"] = int(cols["ppi_n_known_zero"][i])
    reason = cols["ppi_reason"][i]
    if isinstance(reason, str) and reason:
        out["reason"] = reason
    return out


def _num(x: Any) -> float | None:
    if x is None or x is pd.NA:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


# ---------------------------------------------------------------------- computation

def significance(per_query: pd.DataFrame, systems: Sequence[str], *,
                 options: StatsOptions | None = None,
                 ppi_population: Mapping[str, Collection[str]] | None = None,
                 ppi_labelled: Collection[str] | None = None,
                 progress: Progress | None = None,
                 top_k: Mapping[str, Mapping[str, Any]] | None = None) -> Significance:
    """Intervals, pair tests and verdicts from ``per_query`` (``system, query_id, human,
    llm``; NaN where a label set does not score a query).

    Both label sets test a pair on the same queries: those where both runs have a value
    under both label sets. With ``options.ppi``, ``ppi_population`` maps each run to its
    queries that the LLM labels cover and ``ppi_labelled`` lists the queries the human
    labels cover; a query there without a relevant label counts 0.

    Usage: ``significance(comparison.per_query, comparison.systems, options=StatsOptions())``
    """
    options = options or StatsOptions()
    systems = list(systems)
    queries = sorted(set(per_query["query_id"]).union(
        *(ppi_population or {}).values()) if options.ppi else set(per_query["query_id"]))
    wide = {s: _wide(per_query, s, systems, queries) for s in LABEL_SETS}
    valid = ~np.isnan(wide["human"]) & ~np.isnan(wide["llm"])
    shared = valid.all(axis=1) if len(systems) else np.zeros(len(queries), bool)
    runs = pd.DataFrame({"system": systems})
    for s in LABEL_SETS:
        cis = [stats.mean_ci(col[~np.isnan(col)], bounds=BOUNDS) for col in wide[s].T]
        runs[f"{s}_lo"] = [c[0] if c else math.nan for c in cis]
        runs[f"{s}_hi"] = [c[1] if c else math.nan for c in cis]
    for s in LABEL_SETS:
        runs[f"shared_{s}"] = (wide[s][shared].mean(axis=0) if shared.any()
                               else np.full(len(systems), math.nan))
    mode = (options.pairs if options.pairs != "auto"
            else pairlib.default_pair_mode(len(systems)))
    a, b = pairlib.select_pairs(len(systems), mode, _order(runs))
    pairs = _pairs(wide, valid, systems, a, b, options, progress)
    notes: list[str] = []
    ppi_runs = human_only = None
    if options.ppi:
        if ppi_population is None or ppi_labelled is None:
            raise ConfigError("prediction-powered estimates need the queries of each run in "
                              "the LLM labels and the queries in the human labels")
        ppi_runs, human_only, pairs = _with_ppi(
            wide, queries, systems, pairs, a, b, ppi_population, set(ppi_labelled), options,
            notes, _signature_codes(top_k, queries, systems))
    return Significance(options, runs, pairs, int(shared.sum()), mode, ppi_runs, tuple(notes),
                        human_only)


def _wide(per_query: pd.DataFrame, col: str, systems: list[str],
          queries: Sequence[str]) -> np.ndarray:
    """(queries × runs) values of ``col``, NaN where a run has none."""
    if per_query.empty:
        return np.full((len(queries), len(systems)), math.nan)
    table = per_query.pivot_table(index="query_id", columns="system", values=col,
                                  aggfunc="first", dropna=False)
    return table.reindex(index=list(queries), columns=systems).to_numpy(dtype="float64")


def _order(runs: pd.DataFrame) -> list[int]:
    """Run indices best first: by the mean over shared queries under human labels, else by
    the LLM one; ties by name."""
    key = runs["shared_human"] if runs["shared_human"].notna().any() else runs["shared_llm"]
    frame = pd.DataFrame({"key": key.to_numpy(), "name": runs["system"].to_numpy(),
                          "i": np.arange(len(runs))})
    frame = frame.sort_values(["key", "name"], ascending=[False, True], kind="stable",
                              na_position="last")
    return frame["i"].tolist()


def _pairs(wide: Mapping[str, np.ndarray], valid: np.ndarray, systems: list[str],
           a: np.ndarray, b: np.ndarray, options: StatsOptions,
           progress: Progress | None) -> pd.DataFrame:
    names = np.asarray(systems, dtype=object)
    data: dict[str, Any] = {"a": names[a], "b": names[b]}
    moments = pairlib.paired_moments(wide["human"], valid, a, b)
    for s in LABEL_SETS:
        if options.test == "t":  # the human moments serve the simultaneous intervals too
            delta, p, n = ((moments[0], pairlib.t_test_p(*moments), moments[2]) if s == "human"
                           else pairlib.paired_t_many(wide[s], valid, a, b))
            if progress is not None:
                progress(len(a), len(a))
        else:
            delta, p, n = _randomization(wide[s], valid, a, b, options, progress)
        data["n"] = n
        data[f"{s}_delta"], data[f"{s}_p"] = delta, p
        data[f"{s}_p_adjusted"] = pairlib.holm_array(p)
    h = data["human_p_adjusted"] < options.alpha
    m = data["llm_p_adjusted"] < options.alpha
    same = data["human_delta"] * data["llm_delta"] > 0
    data["verdict"] = np.select([h & m & same, h & m, h, m],
                                ["confirmed", "reversed", "human-only", "llm-only"],
                                default="unresolved").astype(object)
    data["human_only_n"], data["human_only_delta"] = _human_only(wide["human"], valid, a, b)
    data["human_sim_lo"], data["human_sim_hi"] = pairlib.simultaneous_t(
        moments[0], moments[1], moments[2], alpha=0.05, bounds=DIFF_BOUNDS)
    cols = ["a", "b", "n", *(f"{s}_{c}" for s in LABEL_SETS
                             for c in ("delta", "p", "p_adjusted")),
            "verdict", "human_only_n", "human_only_delta", "human_sim_lo", "human_sim_hi"]
    return pd.DataFrame({c: data[c] for c in cols}, columns=cols)


def _randomization(x: np.ndarray, valid: np.ndarray, a: np.ndarray, b: np.ndarray,
                   options: StatsOptions, progress: Progress | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sign-flip test, pair by pair (each vectorised over its sign patterns)."""
    delta, p = np.full(len(a), math.nan), np.full(len(a), math.nan)
    n = np.zeros(len(a), dtype="int64")
    for i, (ia, ib) in enumerate(zip(a, b)):
        w = valid[:, ia] & valid[:, ib]
        t = stats.paired_test(x[w, ia], x[w, ib], test="randomization",
                              permutations=options.permutations, seed=options.seed)
        delta[i] = math.nan if t.delta is None else t.delta
        p[i] = math.nan if t.p is None else t.p
        n[i] = t.n
        if progress is not None and (i % 64 == 63 or i == len(a) - 1):
            progress(i + 1, len(a))
    return delta, p, n


def _human_only(h: np.ndarray, valid: np.ndarray, a: np.ndarray, b: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: the queries both runs score under human labels but not both under LLM
    labels too, and the mean human difference a − b there (NaN without such queries)."""
    hv = ~np.isnan(h)
    x = np.where(hv, h, 0.0)
    n = np.zeros(len(a), dtype="int64")
    mean = np.full(len(a), math.nan)
    step = max(1, 2_000_000 // max(1, h.shape[0]))
    for s in range(0, len(a), step):
        ca, cb = a[s:s + step], b[s:s + step]
        w = hv[:, ca] & hv[:, cb] & ~(valid[:, ca] & valid[:, cb])
        k = w.sum(axis=0)
        total = np.where(w, x[:, ca] - x[:, cb], 0.0).sum(axis=0)
        n[s:s + step] = k
        with np.errstate(invalid="ignore", divide="ignore"):
            mean[s:s + step] = np.where(k > 0, total / k, math.nan)
    return n, mean


ABSENT = 0
"""The code of a query a run lacks (``()`` in ``top_k``): with ``--complete`` it scores 0."""


def _signature_codes(top_k: Mapping[str, Mapping[str, Any]] | None, queries: Sequence[str],
                     systems: list[str]) -> np.ndarray | None:
    """(queries × runs) integer codes of the runs' top k (−1: unknown), equal where two
    runs' top k are equal; None without ``top_k``."""
    if top_k is None:
        return None
    codes = np.full((len(queries), len(systems)), -1, dtype="int64")
    seen: dict[Any, int] = {(): ABSENT}
    for j, sys in enumerate(systems):
        per = top_k.get(sys)
        if per is None:
            continue
        for i, q in enumerate(queries):
            if q in per:
                codes[i, j] = seen.setdefault(per[q], len(seen))
    return codes


def _with_ppi(wide: Mapping[str, np.ndarray], queries: Sequence[str], systems: list[str],
              pairs: pd.DataFrame, a: np.ndarray, b: np.ndarray,
              population: Mapping[str, Collection[str]], labelled: set[str],
              options: StatsOptions, notes: list[str], codes: np.ndarray | None = None
              ) -> tuple[dict[str, ppilib.PPIEstimate],
                         dict[str, tuple[float, float] | None], pd.DataFrame]:
    index = {q: i for i, q in enumerate(queries)}
    pop = np.zeros((len(queries), len(systems)), dtype=bool)
    for j, sys in enumerate(systems):
        rows = [index[q] for q in population.get(sys, ()) if q in index]
        pop[rows, j] = True
    is_lab = np.array([q in labelled for q in queries], dtype=bool)
    lab, unl = pop & is_lab[:, None], pop & ~is_lab[:, None]
    y, yhat = np.nan_to_num(wide["human"]), np.nan_to_num(wide["llm"])
    kw: dict[str, Any] = {"target": options.ppi_target, "tune": options.ppi_tune,
                          "seed": options.seed}
    runs: dict[str, ppilib.PPIEstimate] = {}
    human_only: dict[str, tuple[float, float] | None] = {}
    for j, sys in enumerate(systems):
        # a query the run lacks (--complete) scores 0 under any labels: a known zero
        absent = (pop[:, j] & (codes[:, j] == ABSENT) if codes is not None
                  else np.zeros(len(queries), dtype=bool))
        lj, uj = lab[:, j] & ~absent, unl[:, j] & ~absent
        runs[sys] = ppilib.ppi_mean(y[lj, j], yhat[lj, j], yhat[uj, j], bounds=BOUNDS,
                                    n_known_zero=int(absent.sum()), **kw)
        human_only[sys] = finite_population_ci(y[lj, j], int(lj.sum() + uj.sum()))
        if runs[sys].reason:
            notes.append(f"{sys}: no prediction-powered interval ({runs[sys].reason}; "
                         f"{int(uj.sum())} queries without human labels)")
    ests = []
    for ia, ib in zip(a, b):
        both = pop[:, ia] & pop[:, ib]
        known = (both & (codes[:, ia] >= 0) & (codes[:, ia] == codes[:, ib])
                 if codes is not None else np.zeros(len(queries), dtype=bool))
        lj, uj = lab[:, ia] & lab[:, ib] & ~known, unl[:, ia] & unl[:, ib] & ~known
        ests.append(ppilib.ppi_mean_diff(y[lj, ia], y[lj, ib], yhat[lj, ia], yhat[lj, ib],
                                         yhat[uj, ia], yhat[uj, ib], bounds=DIFF_BOUNDS,
                                         n_known_zero=int(known.sum()), **kw))
    fam = ppilib.pair_family(ests, alpha=options.alpha, bounds=DIFF_BOUNDS)
    pairs = pairs.copy()

    def col(values: list[Any]) -> list[Any]:
        return [math.nan if v is None else v for v in values]

    pairs["ppi_delta"] = col([e.estimate for e in ests])
    pairs["ppi_lo"] = col([None if e.ci is None else e.ci[0] for e in ests])
    pairs["ppi_hi"] = col([None if e.ci is None else e.ci[1] for e in ests])
    pairs["ppi_sim_lo"] = col([None if c is None else c[0] for c in fam.ci_simultaneous])
    pairs["ppi_sim_hi"] = col([None if c is None else c[1] for c in fam.ci_simultaneous])
    pairs["ppi_p"] = col([e.p for e in ests])
    pairs["ppi_p_adjusted"] = col(list(fam.p_adjusted))
    pairs["ppi_verdict"] = list(fam.verdicts)
    pairs["ppi_reason"] = [e.reason or "" for e in ests]
    pairs["ppi_n_informative"] = [e.n_labelled + e.n_unlabelled if e.n_informative is None
                                  else e.n_informative for e in ests]
    pairs["ppi_n_known_zero"] = [e.n_known_zero for e in ests]
    return runs, human_only, pairs


def finite_population_ci(y: np.ndarray, n_total: int, level: float = 0.95
                         ) -> tuple[float, float] | None:
    """The human-only interval of the mean over ``n_total`` queries from the ``n`` labelled
    values ``y`` alone: mean ± t(n − 1)·sqrt((1 − n/N)·var(y)/n), clipped to [0, 1]. None
    below :data:`~labeler.statistics.ppi.MIN_LABELLED` values or without spread (unless
    every query is labelled: then it is the mean itself).

    Usage: ``finite_population_ci(np.array([.5, .7, .6, .4, .8]), 20)``
    """
    n = len(y)
    if n == 0 or n_total < n:
        return None
    mean = float(np.mean(y))
    if n == n_total:
        return mean, mean
    if n < ppilib.MIN_LABELLED or np.ptp(y) == 0:
        return None
    se = math.sqrt((1 - n / n_total) * float(np.var(y, ddof=1)) / n)
    half = ppilib.quantile(1 - level, n - 1) * se
    return ppilib.clip_interval(mean - half, mean + half, BOUNDS)


def headline(means: pd.DataFrame, sig: Significance) -> str:
    """One sentence on the queries every run scores under both label sets (see
    :func:`labeler.statistics.words.headline`)."""
    from labeler.statistics.words import headline as _headline

    r = sig.runs
    runs = {} if len(means) == 0 else {
        str(s): {"shared": {"human": _num(h), "llm": _num(m)}}
        for s, h, m in zip(r["system"], r["shared_human"], r["shared_llm"])}
    return _headline({"runs": runs, "pairs": sig.pairs_to_dicts(), "verdicts": sig.counts,
                      "shared_queries": sig.n_shared,
                      "statistics": {"alpha": sig.options.alpha}})
