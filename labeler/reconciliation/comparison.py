"""Human vs LLM labels: how much do NDCG and the order of the runs change?

One result object, :class:`Comparison`, rendered many ways (dict/JSON, DataFrame, Markdown,
HTML). Every NDCG figure comes from :func:`labeler.scoring.results.evaluate`, run once on the human
labels and once on the LLM labels, so the means equal what ``labeler score`` reports.

Usage::

    from labeler.reconciliation.comparison import compare
    c = compare(human="human.qrels", llm="llm_labels.jsonl",
                runs=["runs/bm25.run", "runs/bert.run"], k=10)
    c.to_frame()          # per run: human, llm, delta, ranks, judged shares
    c.kendall_tau, c.swaps
    c.significance.counts # pair verdicts: which differences are real under which labels
    c.to_dict()           # the `labeler compare --json` object
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from labeler import fmt, io
from labeler.schema import Gain
from labeler.io.edges import QrelsLike, QueriesLike, RunsLike

from labeler.scoring import results as scoring
from labeler.statistics.ranking import ranking_block
from labeler.errors import ConfigError, InputError

if TYPE_CHECKING:
    from labeler.reconciliation.plan import Plan
    from labeler.statistics.verdicts import Progress, Significance, StatsOptions


IDEAL_SYSTEM = "llm-ideal"
"""The tag of the ranking induced by the LLM labels (see :attr:`Comparison.ideal`)."""


@dataclass(frozen=True)
class Swap:
    """Two runs whose order flips: ``human_first`` is ahead under human labels, ``llm_first``
    under LLM labels; ``human``/``llm`` hold their means as (human_first, llm_first)."""

    human_first: str
    llm_first: str
    human: tuple[float, float]
    llm: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        """``{"human_first", "llm_first", "human": [a, b], "llm": [a, b]}``."""
        return {"human_first": self.human_first, "llm_first": self.llm_first,
                "human": [_num(v) for v in self.human], "llm": [_num(v) for v in self.llm]}


@dataclass(frozen=True, eq=False)
class Comparison:
    """NDCG@k of each run under human and under LLM labels, and what changes between them.

    - ``runs``: one row per run — ``system, human, llm, delta`` (llm − human means, each over
      the run's own queries, as ``score`` reports them), ``n_queries_human, n_queries_llm``
      (queries in each mean), ``judged_share_human, judged_share_llm`` (share of the top k
      judged at all), ``shared_human, shared_llm`` (means over the queries every run scores
      under both label sets) and ``rank_human, rank_llm`` (1 = best, by the shared means).
    - ``per_query``: ``system, query_id, human, llm, delta`` (NaN where a label set has no
      relevant chunk for the query, unless ``include_empty``).
    - ``ideal``: ``query_id, ndcg, n_human, n_llm`` — NDCG@k under human labels of the ranking
      of the query's judged chunks by LLM grade (1.0 = the LLM orders them as the humans would).
    - ``most_changed``: ``query_id, query, mean_abs_delta, mean_delta, n_runs, ideal``.
    - ``kendall_tau``/``spearman_rho`` between the two orders of the runs by their shared
      means (None below two).
    - ``swaps``: the pairs of runs whose order flips — every one up to :data:`SWAPS_LISTED`,
      else the largest that many (largest: the two gaps, human and LLM, added), largest
      first; ``n_swaps`` counts them all (thousands of runs: the count stays exact, the list
      and the memory stay linear in the runs).
    - ``significance``: each run's 95% interval under each label set, pairs of runs tested
      under both label sets on the same queries with a verdict, PPI estimates when asked for
      (:class:`~labeler.statistics.verdicts.Significance`).

    Usage::

        c = compare(human=human, llm=llm, runs=runs)
        print(c.to_markdown())
    """

    k: int
    gain: Gain
    include_empty: bool
    runs: pd.DataFrame
    per_query: pd.DataFrame
    ideal: pd.DataFrame
    most_changed: pd.DataFrame
    kendall_tau: float | None
    spearman_rho: float | None
    swaps: tuple[Swap, ...]
    n_pairs: int
    significance: Significance
    measure: str | None = None
    complete: bool = False
    advice: tuple[dict[str, Any], ...] = ()
    """With PPI, per unresolved pair: how many labelled queries would likely resolve it
    (:func:`labeler.reconciliation.plan_advice.resolve_advice`, as ``labeler plan --per-pair``)."""
    plan: Plan | None = None
    """With PPI: the plan for every run's PPI interval to be half as wide as the widest
    now (:func:`labeler.reconciliation.plan_advice.comparison_plan`)."""

    n_swaps: int | None = None
    """How many pairs of runs swap places (None: ``len(swaps)``, every one listed)."""

    @property
    def planning_line(self) -> str | None:
        """The one planning sentence (from :attr:`plan`), or None without PPI."""
        return None if self.plan is None else self.plan.line()

    @property
    def swap_count(self) -> int:
        """How many pairs of runs swap places (``swaps`` may list only the largest)."""
        return len(self.swaps) if self.n_swaps is None else self.n_swaps

    # ------------------------------------------------------------------ views

    @property
    def label(self) -> str:
        """What the runs are scored by: ``NDCG@k``, or the measure (``"AP@100"``)."""
        return self.measure or f"NDCG@{self.k}"

    @property
    def systems(self) -> tuple[str, ...]:
        """Run tags, in input order."""
        return tuple(self.runs["system"])

    @property
    def order_human(self) -> tuple[str, ...]:
        """Run tags, best first, by mean NDCG under human labels."""
        return _order(self.runs, "human")

    @property
    def order_llm(self) -> tuple[str, ...]:
        """Run tags, best first, by mean NDCG under LLM labels."""
        return _order(self.runs, "llm")

    def to_frame(self) -> pd.DataFrame:
        """The per-run table (a copy)."""
        return self.runs.copy()

    @property
    def headline(self) -> str:
        """One sentence: which run is best under human labels (with ``--ppi``: by the PPI
        estimates, naming the best set), how surely, and what the LLM labels do to that."""
        if self.significance.options.ppi:
            return str(self.to_dict()["headline"])
        from labeler.statistics.verdicts import headline
        return headline(self.runs, self.significance)

    def to_dict(self) -> dict[str, Any]:
        """The `labeler compare --json` object: the documented keys, then the details."""
        sig = self.significance
        runs: dict[str, dict[str, Any]] = {}
        for r in self.runs.itertuples():
            system = str(r.system)
            item: dict[str, Any] = {"human": _num(r.human), "llm": _num(r.llm),
                                    "delta": _num(r.delta)}
            for label in ("human", "llm"):
                ci = sig.run_ci(system, label)
                item[f"{label}_ci"] = None if ci is None else list(ci)
            item["shared"] = {"human": _num(r.shared_human), "llm": _num(r.shared_llm)}
            item["rank"] = {"human": _rank(r.rank_human), "llm": _rank(r.rank_llm)}
            if sig.options.ppi:
                item["ppi"] = sig.run_ppi(system)
                item["labelled"] = _labelled_item(r)
                item["human_only_ci"] = sig.run_human_only_ci(system)
            runs[system] = item
        per_query: dict[str, dict[str, dict[str, float | None]]] = {s: {} for s in self.systems}
        for r in self.per_query.itertuples():
            per_query[r.system][r.query_id] = {"human": _num(r.human), "llm": _num(r.llm),
                                               "delta": _num(r.delta)}
        out: dict[str, Any] = {
            "k": self.k,
            "measure": self.label,
            "runs": runs,
            "kendall_tau": self.kendall_tau,
            "spearman_rho": self.spearman_rho,
            "ranking": ranking_block(
                self.runs, self.per_query, n_resamples=sig.options.bootstrap, seed=sig.options.seed,
                ppi={s: (r.get("ppi") or {}).get("estimate") for s, r in runs.items()},
                best=sig.best_set()),
            "pairs": sig.pairs_to_dicts(),
            "verdicts": sig.counts,
            "headline": None,
            "shared_queries": sig.n_shared,
            "statistics": {**sig.options.to_dict(), "pairs": sig.pair_mode, "level": 0.95,
                           "test_name": sig.options.test_name,
                           "planning": self.planning_line, "notes": list(sig.notes),
                           "to_resolve": [dict(a) for a in self.advice]},
            "gain": self.gain,
            "measure_asked": self.measure,
            "include_empty": self.include_empty,
            "complete": self.complete,
            "order": {"human": list(self.order_human), "llm": list(self.order_llm)},
            "swaps": {"n": self.swap_count, "n_pairs": self.n_pairs,
                      "listed": len(self.swaps), "pairs": [s.to_dict() for s in self.swaps]},
            "n_queries": {r.system: {"human": int(r.n_queries_human),
                                     "llm": int(r.n_queries_llm)}
                          for r in self.runs.itertuples()},
            "judged_share": {r.system: {"human": _num(r.judged_share_human),
                                        "llm": _num(r.judged_share_llm)}
                             for r in self.runs.itertuples()},
            "per_query": per_query,
            "ideal_ranking_change": {
                **self.ideal_summary(),
                "per_query": {r.query_id: _num(r.ndcg) for r in self.ideal.itertuples()},
                "judged": {r.query_id: {"n_human": int(r.n_human), "n_llm": int(r.n_llm)}
                           for r in self.ideal.itertuples()},
            },
            "most_changed": [
                {"query_id": r.query_id, "query": r.query if isinstance(r.query, str) else None,
                 "mean_abs_delta": _num(r.mean_abs_delta),
                 "mean_delta": _num(r.mean_delta), "n_runs": int(r.n_runs),
                 "ideal": _num(r.ideal)}
                for r in self.most_changed.itertuples()],
        }
        from labeler.statistics.words import headline, ppi_headline
        # the headline reads the runs, pairs and verdicts above (PPI's: and the ranking)
        out["headline"] = ppi_headline(out) if sig.options.ppi else headline(out)
        return out

    def ideal_summary(self) -> dict[str, Any]:
        """``{"mean", "median", "n_queries"}`` of :attr:`ideal` (the ``ideal_ranking_change``
        figures of :meth:`to_dict` without its per-query values)."""
        ideal = self.ideal["ndcg"]
        return {"mean": _num(ideal.mean()) if len(ideal) else None,
                "median": _num(ideal.median()) if len(ideal) else None,
                "n_queries": len(ideal)}

    def to_markdown(self, title: str = "Human vs LLM labels") -> str:
        """A Markdown report (tables; every string from the data escaped)."""
        from labeler.report.comparison import render_markdown
        return render_markdown(self, title=title)

    def to_html(self, title: str = "Human vs LLM labels", agreement: Any = None) -> str:
        """A self-contained HTML report with inline plots."""
        from labeler.report.comparison import render_html
        return render_html(self, title=title, agreement=agreement)

    def to_text(self) -> str:
        """A plain-text table for the terminal."""
        from labeler.report.text import render_text
        return render_text(self.to_dict())

    def _repr_html_(self) -> str:
        from labeler.report.notebook import comparison_html

        return comparison_html(self.to_dict())


def _rank(value: Any) -> int | None:
    return None if pd.isna(value) else int(value)


def _labelled_item(r: Any) -> dict[str, Any]:
    """``runs.<tag>.labelled`` of the JSON: both label sets on the run's human-labelled
    queries (``delta`` = LLM − human there)."""
    h, m = _num(r.labelled_human), _num(r.labelled_llm)
    return {"n": int(r.n_labelled), "human": h, "llm": m,
            "delta": None if h is None or m is None else m - h}


# ---------------------------------------------------------------------- public API

def compare(*, human: QrelsLike, llm: QrelsLike, runs: RunsLike, k: int = 10,
            gain: Gain = "linear", include_empty: bool = False, top: int = 10,
            queries: QueriesLike = None,
            llm_scores: scoring.ScoreResult | None = None,
            stats: StatsOptions | None = None,
            measure: str | None = None, complete: bool = False,
            progress: Progress | None = None) -> Comparison:
    """Compare the runs' NDCG@k (or ``measure``, e.g. ``"AP"``, ``"P(rel=2)@10"``) under
    human and under LLM labels.

    ``human``/``llm``: qrels (path, DataFrame or ``{qid: {chunk: grade}}``); label records are
    accepted, failed rows left out. ``runs``: path(s), DataFrame or dict. ``queries``
    (optional) gives query text for the most-changed table. ``llm_scores``: the runs already
    scored on ``llm`` with the same options (e.g. at several k), so they are not scored twice.
    ``stats`` chooses the paired test, its level and PPI
    (:class:`~labeler.statistics.verdicts.StatsOptions`; default: t-test, alpha 0.05, no PPI).
    ``complete`` counts, as 0, a query of a label set that a run lacks (trec_eval ``-c``, as
    ``score --complete``); without it, a run is ranked against the others only on the queries
    every run scores under both label sets (``shared_*`` columns). ``progress(done, total)`` is
    called while the pairs of a long comparison are tested.
    Label sets are keyword-only: they cannot be swapped by position. Inputs are never modified.

    Usage::

        c = labeler.compare(human="human.qrels", llm="labels.jsonl", runs=["a.run", "b.run"])
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    human_q = io.as_qrels(human, any_grade=True)   # any integer grade scores
    llm_q = io.as_qrels(llm, any_grade=True)
    run = _as_runs(runs)
    if run.empty:
        raise InputError("no run rows to compare")
    texts = _query_texts(queries)

    wanted = [measure] if measure else []
    by_human = scoring.evaluate(human_q, run, k=k, gain=gain, include_empty=include_empty,
                                measures=wanted, complete=complete)
    by_llm = (llm_scores if not wanted and llm_scores is not None
              and _reusable(llm_scores, k, gain, include_empty)
              and bool(getattr(llm_scores, "complete", False)) == complete
              else scoring.evaluate(llm_q, run, k=k, gain=gain, include_empty=include_empty,
                                    measures=wanted, complete=complete))
    systems = list(dict.fromkeys(run["system"]))
    (h_sum, h_pq), (l_sum, l_pq) = (scoring.frames_of(r, measure, k) for r in (by_human, by_llm))
    table = _run_table(systems, h_sum, l_sum, k)
    per_query = _per_query(h_pq, l_pq, k)
    ideal = _ideal_ranking(human_q, llm_q, set(run["query_id"]), k, gain)
    population, labelled = _ppi_sets(systems, run, human_q, llm_q, stats, complete)
    signatures = (_known_zero_signatures(run, None if wanted else k, set(llm_q["query_id"]),
                                         complete) if population is not None else None)
    sig = _significance(per_query, systems, population, labelled, human_q, llm_q, stats,
                        progress, signatures)
    table = _with_shared(table, sig)
    if sig.options.ppi and population is not None:
        table = _with_labelled(table, per_query, population, labelled)
    tau, rho = _correlations(table)
    swaps, n_swaps, n_pairs = _swaps(table)
    return Comparison(
        k=k, gain=gain, include_empty=include_empty, runs=table, per_query=per_query,
        ideal=ideal, most_changed=_most_changed(per_query, ideal, texts, top),
        kendall_tau=tau, spearman_rho=rho, swaps=swaps, n_pairs=n_pairs,
        significance=sig, measure=str(by_human.measures[0]) if wanted else None,
        complete=complete, n_swaps=n_swaps,
        **_planning(per_query, sig, population, labelled, k))


# ---------------------------------------------------------------------- pieces

def _reusable(scores: scoring.ScoreResult, k: int, gain: Gain, include_empty: bool) -> bool:
    return (k in scores.ks and scores.gain == gain and scores.include_empty == include_empty
            and scores.ideal == "qrels")


def _with_shared(table: pd.DataFrame, sig: Significance) -> pd.DataFrame:
    """The run table with each run's means over the shared queries (``shared_human``,
    ``shared_llm``), and its ranks under each label set by those means."""
    out = table.copy()
    for label in ("human", "llm"):
        out[f"shared_{label}"] = sig.runs[f"shared_{label}"].to_numpy(dtype="float64")
    for label, col in zip(("human", "llm"), _means(out)):
        out[f"rank_{label}"] = out[col].rank(ascending=False, method="min").astype("Int64")
    return out


def _ppi_sets(systems: list[str], run: pd.DataFrame, human: pd.DataFrame, llm: pd.DataFrame,
              options: StatsOptions | None, complete: bool
              ) -> tuple[dict[str, set[str]] | None, set[str]]:
    """For PPI, each run's population (its queries the LLM labels cover; with
    ``complete`` every one of those) and the whole queries with human labels
    (:func:`~labeler.reconciliation.labelled.labelled_queries`, which refuses a sample of
    pairs); without PPI ``(None, the human-labelled queries)``."""
    if options is None or not options.ppi:
        return None, set(human["query_id"])
    from labeler.reconciliation.labelled import labelled_queries

    llm_queries = set(llm["query_id"])
    population = ({str(s): llm_queries for s in systems} if complete else
                  {str(s): set(q) & llm_queries
                   for s, q in run.groupby("system", sort=False)["query_id"]})
    return population, set(labelled_queries(human, llm))


def _significance(per_query: pd.DataFrame, systems: list[str],
                  population: dict[str, set[str]] | None, labelled: set[str],
                  human: pd.DataFrame, llm: pd.DataFrame,
                  options: StatsOptions | None,
                  progress: Progress | None = None,
                  signatures: dict[str, dict[str, Any]] | None = None) -> Significance:
    """Intervals, pair verdicts and (with ``options.ppi``) PPI estimates over each run's
    ``population``, the ``labelled`` queries judged by humans (:func:`_ppi_sets`);
    ``signatures`` (:func:`_known_zero_signatures`) mark the known zeros."""
    from labeler.statistics.verdicts import StatsOptions, significance

    options = options or StatsOptions()
    sig = significance(per_query, systems, options=options, ppi_population=population,
                       ppi_labelled=labelled, progress=progress, top_k=signatures)
    if options.ppi and sig.ppi_runs is not None and all(
            e.n_unlabelled == 0 or e.n_labelled == 0 for e in sig.ppi_runs.values()):
        n_human = len(labelled & set(llm["query_id"]))
        n_llm = len(set(llm["query_id"]))
        raise InputError(f"prediction-powered estimates need a random sample of queries judged "
                         f"by humans and other queries judged only by the LLM; here {n_human} "
                         f"of the {n_llm} queries with LLM labels have human labels (at least "
                         f"2, and not all, are needed). Draw the sample with `labeler sample "
                         f"--unit query`.")
    return sig


def _top_k_signatures(run: pd.DataFrame, k: int, every: set[str] | None
                      ) -> dict[str, dict[str, tuple[str, ...]]]:
    """Per run and query, its top ``k`` chunk ids in the scorer's order (score descending,
    then chunk id descending); with ``every`` (``--complete``), ``()`` for each of those
    queries the run lacks (it scores 0 there under any labels)."""
    ranked = run.assign(chunk_id=run["chunk_id"].astype(str)).sort_values(
        ["system", "query_id", "score", "chunk_id"], ascending=[True, True, False, False],
        kind="stable")
    top = ranked.groupby(["system", "query_id"], sort=False).head(k)
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for (system, qid), chunks in top.groupby(["system", "query_id"], sort=False)["chunk_id"]:
        out.setdefault(str(system), {})[str(qid)] = tuple(chunks)
    if every is not None:
        for system in dict.fromkeys(run["system"]):
            per = out.setdefault(str(system), {})
            for q in every:
                per.setdefault(q, ())
    return out


def _known_zero_signatures(run: pd.DataFrame, k: int | None, llm_queries: set[str],
                           complete: bool) -> dict[str, dict[str, Any]] | None:
    """What marks PPI's known zeros: with NDCG@``k``, each run's top k per query
    (:func:`_top_k_signatures`); with another measure and ``complete``, only the queries a run
    lacks (``()``: it scores 0 there under any labels); else None."""
    if k is not None:
        return dict(_top_k_signatures(run, k, llm_queries if complete else None))
    if not complete:
        return None
    return {str(s): {**{q: ("ranked", str(s)) for q in qs},
                     **{q: () for q in llm_queries - set(qs)}}
            for s, qs in run.groupby("system", sort=False)["query_id"]}


def _with_labelled(table: pd.DataFrame, per_query: pd.DataFrame,
                   population: dict[str, set[str]], labelled: set[str]) -> pd.DataFrame:
    """The run table with both label sets' means over each run's human-labelled queries —
    the queries PPI corrects with, valued as PPI values them (a query a label set gives no
    relevant chunk counts 0): ``n_labelled, labelled_human, labelled_llm``. Their difference
    compares the two label sets on the same queries, which the run's plain means (over
    different query sets when humans label a sample) do not."""
    systems = [str(s) for s in table["system"]]
    queries = sorted(set().union(*population.values()) & labelled) if population else []
    mask = np.zeros((len(queries), len(systems)), dtype=bool)
    row = {q: i for i, q in enumerate(queries)}
    for j, system in enumerate(systems):
        mask[[row[q] for q in population.get(system, set()) & labelled], j] = True
    n = mask.sum(axis=0)
    means = {}
    for col in ("human", "llm"):
        wide = (np.full(mask.shape, math.nan) if per_query.empty else
                per_query.pivot_table(index="query_id", columns="system", values=col,
                                      aggfunc="first", dropna=False)
                .reindex(index=queries, columns=systems).to_numpy(dtype="float64"))
        with np.errstate(invalid="ignore", divide="ignore"):
            means[col] = np.where(n > 0, np.where(mask, np.nan_to_num(wide), 0.0).sum(axis=0)
                                  / np.maximum(n, 1), math.nan)
    return table.assign(n_labelled=n.astype("int64"), labelled_human=means["human"],
                        labelled_llm=means["llm"])


def _planning(per_query: pd.DataFrame, sig: Significance,
              population: dict[str, set[str]] | None, labelled: set[str],
              k: int) -> dict[str, Any]:
    """With PPI: the plan behind the one planning line, and per unresolved pair how many
    labelled queries would likely resolve it (both from ``labeler plan``'s computation)."""
    if population is None or not sig.options.ppi:
        return {}
    from labeler.reconciliation.plan_advice import comparison_plan, resolve_advice

    return {"plan": comparison_plan(per_query, population, labelled, k=k),
            "advice": resolve_advice(per_query, sig.pairs_to_dicts(), population=population,
                                     labelled=labelled)}


def _run_table(systems: list[str], human: pd.DataFrame, llm: pd.DataFrame,
               k: int) -> pd.DataFrame:
    cols = ["mean", "n_queries", "judged_share"]
    h = human.loc[human["k"] == k].set_index("system")[cols]
    m = llm.loc[llm["k"] == k].set_index("system")[cols]
    out = pd.DataFrame({"system": systems})
    for label, frame in (("human", h), ("llm", m)):
        frame = frame.reindex(systems)
        out[label] = frame["mean"].to_numpy(dtype="float64")
        out[f"n_queries_{label}"] = frame["n_queries"].fillna(0).to_numpy(dtype="int64")
        out[f"judged_share_{label}"] = frame["judged_share"].to_numpy(dtype="float64")
    out["delta"] = out["llm"] - out["human"]
    for label in ("human", "llm"):
        out[f"rank_{label}"] = out[label].rank(ascending=False, method="min").astype("Int64")
    return out[["system", "human", "llm", "delta", "rank_human", "rank_llm",
                "n_queries_human", "n_queries_llm", "judged_share_human", "judged_share_llm"]]


def _per_query(human: pd.DataFrame, llm: pd.DataFrame, k: int) -> pd.DataFrame:
    keys = ["system", "query_id"]
    h = human.loc[human["k"] == k, [*keys, "ndcg"]].rename(columns={"ndcg": "human"})
    m = llm.loc[llm["k"] == k, [*keys, "ndcg"]].rename(columns={"ndcg": "llm"})
    out = h.merge(m, on=keys, how="outer")
    out["human"] = out["human"].astype("float64")
    out["llm"] = out["llm"].astype("float64")
    out["delta"] = out["llm"] - out["human"]
    return out.sort_values(keys, kind="stable").reset_index(drop=True)


def _ideal_ranking(human: pd.DataFrame, llm: pd.DataFrame, run_queries: set[str], k: int,
                   gain: Gain) -> pd.DataFrame:
    """Human NDCG@k of each query's judged chunks ranked by LLM grade (trec_eval ties)."""
    both = set(human["query_id"]) & set(llm["query_id"]) & run_queries
    cols = ["query_id", "ndcg", "n_human", "n_llm"]
    if not both:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c == "ndcg" else "object")
                             for c in cols})
    h = human.loc[human["query_id"].isin(both), ["query_id", "chunk_id"]]
    m = llm.loc[llm["query_id"].isin(both), ["query_id", "chunk_id", "grade"]]
    pool = pd.concat([h, m[["query_id", "chunk_id"]]]).drop_duplicates()
    pool = pool.merge(m, on=["query_id", "chunk_id"], how="left")
    induced = pd.DataFrame({"query_id": pool["query_id"], "chunk_id": pool["chunk_id"],
                            "score": pool["grade"].fillna(0).astype("float64"),
                            "system": IDEAL_SYSTEM})
    result = scoring.evaluate(human, induced, k=k, gain=gain, include_empty=False)
    pq = result.per_query
    pq = pq.loc[(pq["k"] == k) & pq["ndcg"].notna(), ["query_id", "ndcg"]]
    counts = pd.DataFrame({"n_human": h.groupby("query_id").size(),
                           "n_llm": m.groupby("query_id").size()})
    out = pq.merge(counts, left_on="query_id", right_index=True, how="left")
    out["ndcg"] = out["ndcg"].astype("float64")
    out["n_human"] = out["n_human"].fillna(0).astype("int64")
    out["n_llm"] = out["n_llm"].fillna(0).astype("int64")
    return out[cols].sort_values("query_id", kind="stable").reset_index(drop=True)


def _most_changed(per_query: pd.DataFrame, ideal: pd.DataFrame, texts: dict[str, str],
                  top: int) -> pd.DataFrame:
    d = per_query.dropna(subset=["delta"])
    g = d.assign(abs_delta=d["delta"].abs()).groupby("query_id", sort=True)
    out = pd.DataFrame({"mean_abs_delta": g["abs_delta"].mean(), "mean_delta": g["delta"].mean(),
                        "n_runs": g["delta"].size()}).reset_index()
    out = out.sort_values(["mean_abs_delta", "query_id"], ascending=[False, True],
                          kind="stable").head(max(int(top), 0))
    ideal_of = dict(zip(ideal["query_id"], ideal["ndcg"]))
    out.insert(1, "query", [texts.get(q) for q in out["query_id"]])
    out["ideal"] = [ideal_of.get(q, math.nan) for q in out["query_id"]]
    out["n_runs"] = out["n_runs"].astype("int64")
    return out.reset_index(drop=True)


def _means(table: pd.DataFrame) -> tuple[str, str]:
    """The columns runs are ordered by: their means over the queries every run scores under
    both label sets (``shared_*``), or their plain means when no query is shared."""
    if {"shared_human", "shared_llm"} <= set(table.columns) and (
            table["shared_human"].notna().any()):
        return "shared_human", "shared_llm"
    return "human", "llm"


def _correlations(table: pd.DataFrame) -> tuple[float | None, float | None]:
    """Kendall's tau-b and Spearman's rho between the runs' human and LLM means over the
    shared queries (scipy)."""
    hc, lc = _means(table)
    ok = table.dropna(subset=[hc, lc])
    if len(ok) < 2:
        return None, None
    h, m = ok[hc].to_numpy(), ok[lc].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN
        tau = sps.kendalltau(h, m)[0]
        rho = sps.spearmanr(h, m)[0]
    return _num(tau), _num(rho)


SWAPS_LISTED = 100
"""Swaps listed at most (the largest when there are more); every swap is counted."""
_BLOCK_CELLS = 1 << 21
"""Pairs of runs looked at in one block (memory: a few arrays of this many numbers)."""


def _swaps(table: pd.DataFrame, listed: int | None = None
           ) -> tuple[tuple[Swap, ...], int, int]:
    """Pairs of runs ordered one way by human means and the other way by LLM means (over the
    shared queries): the listed ones (all, in order of the human ranking, up to ``listed``;
    else the ``listed`` largest, largest first), how many there are, and how many pairs.
    Looked at a block of rows at a time: memory linear in the runs."""
    listed = SWAPS_LISTED if listed is None else listed
    hc, lc = _means(table)
    ok = table.dropna(subset=[hc, lc]).sort_values(
        [hc, "system"], ascending=[False, True], kind="stable")
    names = ok["system"].to_numpy()
    h, m = ok[hc].to_numpy(dtype="float64"), ok[lc].to_numpy(dtype="float64")
    n = len(ok)
    count = 0
    size_k, x_k, y_k = np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64)
    step = max(1, _BLOCK_CELLS // max(n, 1))
    for lo in range(0, n, step):
        x = np.arange(lo, min(n, lo + step))[:, None]
        y = np.arange(n)[None, :]
        dh, dm = h[x] - h[y], m[x] - m[y]
        xs, ys = np.nonzero((dh * dm < 0) & (y > x))
        count += len(xs)
        size_k = np.concatenate([size_k, np.abs(dh[xs, ys]) + np.abs(dm[xs, ys])])
        x_k, y_k = np.concatenate([x_k, xs + lo]), np.concatenate([y_k, ys])
        if len(size_k) > 4 * listed:  # keep the largest (ties: the first in human order)
            keep = np.lexsort((y_k, x_k, -size_k))[:listed]
            size_k, x_k, y_k = size_k[keep], x_k[keep], y_k[keep]
    order = (np.lexsort((y_k, x_k)) if count <= listed
             else np.lexsort((y_k, x_k, -size_k))[:listed])
    swaps = [Swap(str(names[a]), str(names[b]), (float(h[a]), float(h[b])),
                  (float(m[a]), float(m[b])))
             for a, b in zip(x_k[order].tolist(), y_k[order].tolist())]
    return tuple(swaps), count, n * (n - 1) // 2


def _order(table: pd.DataFrame, col: str) -> tuple[str, ...]:
    hc, lc = _means(table)
    key = hc if col == "human" else lc
    ordered = table.sort_values([key, "system"], ascending=[False, True], kind="stable",
                                na_position="last")
    return tuple(ordered["system"])


def _as_runs(runs: RunsLike) -> pd.DataFrame:
    return io.as_runs(runs)


def _query_texts(queries: QueriesLike) -> dict[str, str]:
    if queries is None:
        return {}
    q = io.as_queries(queries)
    return dict(zip(q["query_id"], q["query"]))


_num = fmt.finite
