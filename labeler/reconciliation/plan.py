"""How many queries must people label? The plan from the human labels so far.

From a simple random sample of queries judged by hand (``labeler sample --unit query``) and
LLM labels of every query: how many labelled queries each run's prediction-powered interval
of mean NDCG@k needs to be at most ±W (with ``pairs``: each difference between two runs), and
how many the human labels alone would need — the saving the LLM labels buy. The arithmetic is
:mod:`labeler.statistics.planning`.

Usage::

    import labeler
    p = labeler.plan(human="human.qrels", llm="labels.jsonl", runs=["a.run", "b.run"],
                     half_width=0.05, minutes_per_query=20)
    p.needed           # {"ppi": 21, "human_only": 36}
    p.to_dict()        # what `labeler plan --json` prints
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from labeler import io
from labeler.errors import InputError
from labeler.io.edges import QrelsLike, RunsLike
from labeler.statistics import planning

KINDS = ("ppi", "human_only")


@dataclass(frozen=True)
class Target:
    """One interval planned for: a run (``b`` is None) or the difference ``a − b``, with its
    :class:`~labeler.statistics.planning.Need` under PPI and under human labels alone."""

    a: str
    b: str | None
    ppi: planning.Need
    human_only: planning.Need

    def to_dict(self) -> dict[str, Any]:
        """``{"ppi": n, "human_only": n, "n_total", "now", "half_width_now": {...},
        "reason", "detail": {...}}`` (+ ``"a", "b"`` for a pair)."""
        head: dict[str, Any] = {"a": self.a, "b": self.b} if self.b is not None else {}
        needs = {"ppi": self.ppi, "human_only": self.human_only}
        return {**head, "ppi": self.ppi.n, "human_only": self.human_only.n,
                "n_total": self.ppi.n_total, "now": self.ppi.now,
                "half_width_now": {k: v.half_width_now for k, v in needs.items()},
                "reason": self.ppi.reason or self.human_only.reason,
                "detail": {k: v.to_dict() for k, v in needs.items()}}


@dataclass(frozen=True)
class Plan:
    """The plan: ``now`` labelled queries, the ``half_width`` asked for, ``needed`` (the
    largest number over the intervals, per kind; ``None`` where none can be given, see
    ``reasons``), ``runs`` and ``pairs`` (:class:`Target`), and the cost per query."""

    now: int
    half_width: float
    k: int
    runs: tuple[Target, ...]
    pairs: tuple[Target, ...] = ()
    minutes_per_query: float | None = None
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def targets(self) -> tuple[Target, ...]:
        """Every interval planned for: the runs, then the pairs."""
        return self.runs + self.pairs

    @property
    def needed(self) -> dict[str, int | None]:
        """``{"ppi": n, "human_only": n}``: enough labelled queries for every interval."""
        out: dict[str, int | None] = {}
        for kind in KINDS:
            ns = [getattr(t, kind).n for t in self.targets]
            out[kind] = None if not ns or any(n is None for n in ns) else max(
                int(n) for n in ns if n is not None)
        return out

    @property
    def saving(self) -> int | None:
        """How many fewer queries people label thanks to the LLM labels."""
        n = self.needed
        return None if n["ppi"] is None or n["human_only"] is None else \
            n["human_only"] - n["ppi"]

    def hours(self, n: int | None) -> float | None:
        """People's hours for ``n`` more queries at ``minutes_per_query``."""
        if n is None or self.minutes_per_query is None:
            return None
        return n * self.minutes_per_query / 60

    def to_dict(self) -> dict[str, Any]:
        """The ``labeler plan --json`` object."""
        needed = self.needed
        more = {k: None if v is None else max(0, v - self.now) for k, v in needed.items()}
        out: dict[str, Any] = {
            "now": self.now, "half_width": self.half_width, "k": self.k, "level": planning.LEVEL,
            "needed": needed, "more": more, "saving": self.saving,
            "per_run": {t.a: t.to_dict() for t in self.runs},
            "per_pair": [t.to_dict() for t in self.pairs],
            "reasons": dict(self.reasons),
            "assumption": self.assumption(),
        }
        if self.minutes_per_query is not None:
            out["minutes_per_query"] = self.minutes_per_query
            out["hours"] = {"ppi": self.hours(more["ppi"]),
                            "human_only": self.hours(more["human_only"]),
                            "saving": self.hours(self.saving)}
        return out

    def assumption(self) -> str:
        """What the numbers take for granted, in words."""
        sds = [t.ppi.sd for t in self.targets if t.ppi.sd is not None]
        spread = (f" (standard deviation {min(sds):.3f}–{max(sds):.3f})" if len(sds) > 1 else
                  f" (standard deviation {sds[0]:.3f})" if sds else "")
        return (f"The {self.now} queries labelled so far are a simple random sample of the "
                f"queries, and the spread of human − LLM NDCG@{self.k} on them{spread} holds "
                f"for the rest. The numbers add a margin for how little {self.now} queries say "
                f"about that spread, so that labelling that many random queries reaches "
                f"±{self.half_width:g} in at least {planning.TARGET:.0%} of cases (measured on "
                f"TREC DL 2019).")

    def to_text(self) -> str:
        """The plan for the terminal."""
        from labeler.report.plan_text import render_plan

        return render_plan(self.to_dict())

    def __repr__(self) -> str:
        return (f"Plan(now={self.now}, half_width={self.half_width}, "
                f"needed={self.needed})")


def _table(qrels: pd.DataFrame, runs: pd.DataFrame, k: int, gain: str) -> pd.DataFrame:
    from labeler.scoring.results import evaluate

    pq = evaluate(qrels, runs, k=k, gain=gain, include_empty=True).per_query
    pq = pq.loc[pq["k"] == k] if "k" in pq.columns else pq
    return pq.pivot_table(index="query_id", columns="system", values="ndcg", aggfunc="first")


_YEAR = 525_600.0
"""Minutes in a year: the most one query can take (larger values make no finite hours)."""


def plan(*, human: QrelsLike, llm: QrelsLike, runs: RunsLike, half_width: float,
         k: int = 10, pairs: bool = False, minutes_per_query: float | None = None,
         gain: str = "linear") -> Plan:
    """How many labelled queries each run's 95% PPI interval of NDCG@``k`` (with ``pairs``:
    each difference between runs too) needs to be at most ±``half_width``, and how many
    the human labels alone would need.

    ``human`` covers a simple random sample of the queries (at least
    :data:`~labeler.statistics.planning.MIN_LABELLED` of them, else
    :class:`~labeler.errors.InputError`); ``llm`` covers every query of the runs. A run's
    population is its queries the LLM labels cover; NDCG of a query without a relevant label
    counts 0 (as in ``labeler compare --ppi``).

    Usage: ``plan(human="h.qrels", llm="labels.jsonl", runs=["a.run"], half_width=0.05)``
    """
    if not (isinstance(half_width, (int, float)) and math.isfinite(half_width)
            and half_width > 0):
        raise InputError(f"the half-width must be a positive number, got {half_width!r}")
    if minutes_per_query is not None and not 0 < minutes_per_query <= _YEAR:
        raise InputError("minutes per query must be positive and at most a year (525600), "
                         f"got {minutes_per_query!r}")
    human_q = io.as_qrels(human, any_grade=True)
    llm_q = io.as_qrels(llm, any_grade=True)
    run = io.as_runs(runs)
    if run.empty:
        raise InputError("no run rows to plan for")
    systems = [str(s) for s in dict.fromkeys(run["system"])]
    llm_queries = set(llm_q["query_id"])
    labelled_all = set(human_q["query_id"])
    population = {str(s): sorted(set(q) & llm_queries)
                  for s, q in run.groupby("system", sort=False)["query_id"]}
    every = set().union(*population.values())
    now = len(labelled_all & every)
    if now < planning.MIN_LABELLED:
        raise InputError(f"only {now} of the runs' queries have human labels; planning needs "
                         f"at least {planning.MIN_LABELLED}, drawn at random (`labeler sample "
                         f"--unit query --n 10`)")
    y, yhat = _table(human_q, run, k, gain), _table(llm_q, run, k, gain)

    def values(table: pd.DataFrame, system: str, queries: list[str]) -> np.ndarray:
        col = table[system] if system in table.columns else pd.Series(dtype="float64")
        return col.reindex(queries).fillna(0.0).to_numpy(dtype="float64")

    def target(a: str, b: str | None) -> Target:
        pop = population[a] if b is None else sorted(set(population[a]) & set(population[b]))
        lab = [q for q in pop if q in labelled_all]
        ya, ha = values(y, a, lab), values(yhat, a, lab)
        if b is not None:
            ya, ha = ya - values(y, b, lab), ha - values(yhat, b, lab)
        kurt = planning.KURTOSIS_PAIR if b is not None else planning.KURTOSIS_RUN
        n_total = len(pop)
        return Target(a, b, planning.queries_needed(ya - ha, n_total, half_width,
                                                    kurtosis=kurt),
                      planning.queries_needed(ya, n_total, half_width, kurtosis=kurt))

    run_targets = tuple(target(s, None) for s in systems)
    pair_targets = tuple(target(a, b) for a, b in itertools.combinations(systems, 2)) \
        if pairs else ()
    reasons = {t.a if t.b is None else f"{t.a} − {t.b}": str(t.ppi.reason or t.human_only.reason)
               for t in run_targets + pair_targets if t.ppi.n is None or t.human_only.n is None}
    return Plan(now=now, half_width=float(half_width), k=int(k), runs=run_targets,
                pairs=pair_targets, minutes_per_query=minutes_per_query, reasons=reasons)


# ---------------------------------------------------------------------- unresolved pairs

def _unresolved(pair: dict[str, Any]) -> bool:
    ppi = pair.get("ppi")
    if isinstance(ppi, dict):
        if "verdict" in ppi:
            return bool(ppi["verdict"] == "unresolved")
        ci = ppi.get("ci")
        return isinstance(ci, (list, tuple)) and len(ci) == 2 and ci[0] <= 0 <= ci[1]
    return pair.get("verdict") in ("tie", "unresolved")


def resolve_advice(per_query: pd.DataFrame, pairs: list[dict[str, Any]], *,
                   population: dict[str, set[str]] | None = None,
                   labelled: set[str] | None = None) -> tuple[dict[str, Any], ...]:
    """For each unresolved pair of ``pairs`` (``labeler compare --json``'s list): how many
    labelled queries would likely resolve it and the ± the labelled queries give now
    (:func:`labeler.statistics.planning.pair_advice`, what ``labeler plan --pairs`` computes
    for a ± of the observed difference). With ``population`` (each run's queries) and
    ``labelled`` (the queries with human labels) the pair's PPI interval is planned for,
    else the human paired test over the queries both runs score under both label sets.

    Usage: ``resolve_advice(c.per_query, c.significance.pairs_to_dicts())``
    """
    wide = {s: per_query.pivot_table(index="query_id", columns="system", values=s,
                                     aggfunc="first", dropna=False)
            for s in ("human", "llm")}

    def col(s: str, system: str, queries: list[str], fill: bool) -> np.ndarray:
        c = wide[s][system] if system in wide[s].columns else pd.Series(dtype="float64")
        v = c.reindex(queries)
        return (v.fillna(0.0) if fill else v).to_numpy(dtype="float64")

    out = []
    for p in pairs:
        if not _unresolved(p):
            continue
        a, b = str(p["a"]), str(p["b"])
        if population is not None and labelled is not None:
            pop = sorted(set(population.get(a, ())) & set(population.get(b, ())))
            lab = [q for q in pop if q in labelled]
            h = col("human", a, lab, True) - col("human", b, lab, True)
            m = col("llm", a, lab, True) - col("llm", b, lab, True)
            ppi = p.get("ppi") or {}
            seen = ppi.get("delta")
            delta = float(seen) if seen is not None else float(np.mean(h - m)) if lab else 0.0
            need = planning.pair_advice(h, m, len(pop), delta) if lab else None
            basis = "ppi"
        else:
            qs = sorted(set(wide["human"].index))
            vals = np.column_stack([col(s, r, qs, False) for s in ("human", "llm")
                                    for r in (a, b)]) if qs else np.empty((0, 4))
            ok = ~np.isnan(vals).any(axis=1) if len(vals) else np.zeros(0, bool)
            h = vals[ok, 0] - vals[ok, 1]
            delta = float(h.mean()) if len(h) else 0.0
            need = planning.pair_advice(h, None, None, delta) if len(h) else None
            basis = "human"
        if need is None:
            continue
        out.append({"a": a, "b": b, "basis": basis, "delta": delta, "now": need.now,
                    "half_width_now": need.half_width_now, "needed": need.n,
                    "more": need.more, "n_total": need.n_total, "reason": need.reason})
    return tuple(out)

