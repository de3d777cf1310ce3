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
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from labeler import io
from labeler.schema import Gain
from labeler.errors import InputError
from labeler.io.edges import QrelsLike, RunsLike
from labeler.statistics import planning

KINDS = ("ppi", "human_only")
_EPS = 1e-12


@dataclass(frozen=True)
class Target:
    """One interval planned for: a run (``b`` is None) or the difference ``a − b``, with its
    :class:`~labeler.statistics.planning.Need` under PPI and under human labels alone, each
    counted in the target's own queries (``Need.now`` of ``Need.n_total`` labelled).
    ``half_width``: the ± planned for; ``to_plan``: for a target with fewer than
    :data:`~labeler.statistics.planning.MIN_LABELLED` labelled queries, how many more queries
    (of the design's order, else at random) would bring it there."""

    a: str
    b: str | None
    ppi: planning.Need
    human_only: planning.Need
    half_width: float = math.inf
    to_plan: int | None = None

    @property
    def name(self) -> str:
        """The run's tag, or ``"a − b"``."""
        return self.a if self.b is None else f"{self.a} − {self.b}"

    @property
    def plannable(self) -> bool:
        """Whether enough of its queries are labelled to plan from."""
        return self.ppi.now >= planning.MIN_LABELLED

    def enough(self, kind: str) -> bool:
        """Whether its ``kind`` interval is within ±W with the queries labelled now."""
        hw = getattr(self, kind).half_width_now
        return hw is not None and hw <= self.half_width + _EPS

    def more(self, kind: str) -> int | None:
        """More labelled queries of its own set its ``kind`` interval needs (0: enough)."""
        need: planning.Need = getattr(self, kind)
        if self.enough(kind):
            return 0
        return None if need.n is None else max(need.n - need.now, 1)

    def to_dict(self) -> dict[str, Any]:
        """``{"ppi": n, "human_only": n, "n_total", "now", "labelled", "more", "enough_now",
        "half_width_now": {...}, "reason", "to_plan", "detail": {...}}`` (+ ``"a", "b"`` for
        a pair); ``ppi``/``human_only``: labelled queries of its own set it needs."""
        head: dict[str, Any] = {"a": self.a, "b": self.b} if self.b is not None else {}
        needs = {"ppi": self.ppi, "human_only": self.human_only}
        more = {k: self.more(k) for k in KINDS}
        return {**head, **{k: None if m is None else needs[k].now + m for k, m in more.items()},
                "n_total": self.ppi.n_total, "now": self.ppi.now,
                "labelled": f"{self.ppi.now} of {self.ppi.n_total}", "more": more,
                "enough_now": {k: self.enough(k) for k in KINDS},
                "half_width_now": {k: v.half_width_now for k, v in needs.items()},
                "reason": self.ppi.reason or self.human_only.reason, "to_plan": self.to_plan,
                "detail": {k: v.to_dict() for k, v in needs.items()}}


@dataclass(frozen=True)
class Plan:
    """The plan: ``now`` labelled queries, the ``half_width`` asked for, the intervals
    planned for (``runs``, ``pairs``: :class:`Target`, each in its own queries), ``more``
    (how many more queries to label, per kind — ``None`` while some target cannot be planned
    yet, see ``reasons`` and ``to_plan``), ``draw`` (the ``labeler sample --more`` number
    with a design), ``order`` (``"design"``: counted in the design's order, else
    ``"random"``: expected counts of random queries) and the cost per query."""

    now: int
    half_width: float
    k: int
    runs: tuple[Target, ...]
    pairs: tuple[Target, ...] = ()
    minutes_per_query: float | None = None
    reasons: dict[str, str] = field(default_factory=dict)
    more: dict[str, int | None] = field(default_factory=dict)
    draw: dict[str, int | None] = field(default_factory=dict)
    to_plan: int | None = None
    order: str = "random"
    design: str | None = None

    @property
    def targets(self) -> tuple[Target, ...]:
        """Every interval planned for: the runs, then the pairs."""
        return self.runs + self.pairs

    @property
    def enough_now(self) -> bool:
        """Every run's (pair's) PPI interval is within ±W now."""
        return all(t.enough("ppi") for t in self.targets)

    @property
    def needed(self) -> dict[str, int | None]:
        """``{"ppi": n, "human_only": n}``: labelled queries in all (those so far included)
        for every interval to be within ±W."""
        return {k: None if self.more.get(k) is None else self.now + int(self.more[k] or 0)
                for k in KINDS}

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
        more = {k: self.more.get(k) for k in KINDS}
        out: dict[str, Any] = {
            "now": self.now, "half_width": self.half_width, "k": self.k, "level": planning.LEVEL,
            "needed": self.needed, "more": more, "saving": self.saving,
            "enough_now": self.enough_now, "order": self.order, "design": self.design,
            "draw": {k: self.draw.get(k) for k in KINDS}, "to_plan": self.to_plan,
            "not_yet": _not_yet(self),
            "per_run": {t.a: t.to_dict() for t in self.runs},
            "per_pair": [t.to_dict() for t in self.pairs],
            "reasons": dict(self.reasons),
            "assumption": self.assumption(),
            "line": self.line(),
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
        counted = ("more queries are counted in the design's random order" if
                   self.order == "design" else "more queries are counted as random draws "
                   "from the queries not labelled yet (expected shares of each run's)")
        return (f"The {self.now} queries labelled so far are a simple random sample of the "
                f"queries, and the spread of human − LLM NDCG@{self.k} on them{spread} holds "
                f"for the rest. The numbers add a margin for how little a few queries say "
                f"about that spread, so that labelling that many random queries reaches "
                f"±{self.half_width:g} in {planning.TARGET_WORDS} of cases (measured on TREC "
                f"DL 2019); {counted}.")

    def line(self) -> str:
        """The one planning sentence ``compare``, the report and ``labeler run`` print."""
        from labeler.report.plan_text import plan_line

        return plan_line(_line_data(self))

    def to_text(self) -> str:
        """The plan for the terminal."""
        from labeler.report.plan_text import render_plan

        return render_plan(self.to_dict())

    def _repr_html_(self) -> str:
        from labeler.report.plan_text import render_plan_html

        return render_plan_html(self.to_dict())

    def __repr__(self) -> str:
        from labeler.report.plan_text import render_table

        return (f"Plan(now={self.now}, half_width={self.half_width:g}, needed={self.needed}, "
                f"enough_now={self.enough_now})\n" + render_table(self.to_dict()))


def _line_data(p: Plan) -> dict[str, Any]:
    more = {k: p.more.get(k) for k in KINDS}
    return {"now": p.now, "half_width": p.half_width, "needed": p.needed, "more": more,
            "enough_now": p.enough_now, "draw": {k: p.draw.get(k) for k in KINDS},
            "order": p.order, "to_plan": p.to_plan, "k": p.k, "has_pairs": bool(p.pairs),
            "not_yet": _not_yet(p)}


def _not_yet(p: Plan) -> dict[str, dict[str, Any]]:
    """The runs (pairs) too thin to plan for: their labelled queries of their own, and how
    many more would bring them to the minimum."""
    return {t.name: {"labelled": t.ppi.now, "n_total": t.ppi.n_total, "more": t.to_plan}
            for t in p.targets if not t.plannable}


def _table(qrels: pd.DataFrame, runs: pd.DataFrame, k: int, gain: Gain) -> pd.DataFrame:
    from labeler.scoring.results import evaluate

    pq = evaluate(qrels, runs, k=k, gain=gain, include_empty=True).per_query
    pq = pq.loc[pq["k"] == k] if "k" in pq.columns else pq
    return pq.pivot_table(index="query_id", columns="system", values="ndcg", aggfunc="first")


_YEAR = 525_600.0
"""Minutes in a year: the most one query can take (larger values make no finite hours)."""


DesignLike = Any
"""A design: a :class:`~labeler.reconciliation.design.QueryDesign`, its ``design.json``, or a
sheet next to it."""


def plan(*, human: QrelsLike, llm: QrelsLike, runs: RunsLike, half_width: float,
         k: int = 10, pairs: bool = False, minutes_per_query: float | None = None,
         gain: Gain = "linear", design: DesignLike = None) -> Plan:
    """How many labelled queries each run's 95% PPI interval of NDCG@``k`` (with ``pairs``:
    each difference between runs too) needs to be at most ±``half_width``, each counted in
    the run's own queries, how many more queries that takes in all, and how many the human
    labels alone would need.

    ``human`` (one label set, or a list of them: the sheets of one sample, read together)
    covers a simple random sample of whole queries (at least
    :data:`~labeler.statistics.planning.MIN_LABELLED` of them, else
    :class:`~labeler.errors.InputError`; a query labelled in part is refused, see
    :func:`~labeler.reconciliation.labelled.labelled_queries`); ``llm`` covers every query
    of the runs. A run's population is its queries the LLM labels cover; NDCG of a query
    without a relevant label counts 0 (as in ``labeler compare --ppi``). With ``design``
    (``design.json``, a sheet next to it, or a ``QueryDesign``) more queries are counted in
    the design's order, else as random draws.

    Usage: ``plan(human="h.qrels", llm="labels.jsonl", runs=["a.run"], half_width=0.05)``
    """
    if not (isinstance(half_width, (int, float)) and math.isfinite(half_width)
            and half_width > 0):
        raise InputError(f"the half-width must be a positive number, got {half_width!r}")
    if minutes_per_query is not None and not 0 < minutes_per_query <= _YEAR:
        raise InputError("minutes per query must be positive and at most a year (525600), "
                         f"got {minutes_per_query!r}")
    from labeler.reconciliation.labelled import combine_human, labelled_queries

    human_q = (combine_human(list(human)) if isinstance(human, (list, tuple)) else
               io.as_qrels(human, any_grade=True))
    llm_q = io.as_qrels(llm, any_grade=True)
    run = io.as_runs(runs)
    if run.empty:
        raise InputError("no run rows to plan for")
    llm_queries = set(llm_q["query_id"])
    population = {str(s): set(q) & llm_queries
                  for s, q in run.groupby("system", sort=False)["query_id"]}
    labelled = set(labelled_queries(human_q, llm_q, what="`labeler plan`"))
    y, yhat = _table(human_q, run, k, gain), _table(llm_q, run, k, gain)
    return plan_tables(y, yhat, population, labelled, half_width=float(half_width), k=k,
                       pairs=pairs, minutes_per_query=minutes_per_query,
                       design=_design(design), design_name=_design_name(design))


def _design(design: DesignLike) -> Any:
    if design is None:
        return None
    from labeler.reconciliation.design import QueryDesign, read_design

    return design if isinstance(design, QueryDesign) else read_design(design)


def _design_name(design: DesignLike) -> str | None:
    if design is None:
        return None
    from labeler.reconciliation.design import QueryDesign, design_path

    return "design" if isinstance(design, QueryDesign) else str(design_path(design))


def plan_tables(y: pd.DataFrame, yhat: pd.DataFrame, population: dict[str, set[str]],
                labelled: set[str], *, half_width: float, k: int = 10, pairs: bool = False,
                minutes_per_query: float | None = None, design: Any = None,
                design_name: str | None = None) -> Plan:
    """:func:`plan` from the per-query NDCG tables (``query_id`` × run; missing counts 0)
    under human (``y``) and LLM (``yhat``) labels, each run's ``population`` of queries
    and the ``labelled`` ones: what ``labeler plan`` and ``labeler compare --ppi`` share.

    Usage: ``plan_tables(y, yhat, {"a": {"q1", ...}}, {"q1", ...}, half_width=0.05)``
    """
    systems = list(population)
    every = set().union(*population.values()) if population else set()
    now = len(labelled & every)
    if now < planning.MIN_LABELLED:
        raise InputError(f"only {now} of the runs' queries have human labels; planning needs "
                         f"at least {planning.MIN_LABELLED}, drawn at random (`labeler sample "
                         f"--unit query --n 10`)")
    order, positions = _order(every, labelled, design)
    targets = [plan_target(y, yhat, population, labelled, a, None, half_width)
               for a in systems]
    if pairs:
        targets += [plan_target(y, yhat, population, labelled, a, b, half_width)
                    for a, b in itertools.combinations(systems, 2)]
    pops = {t.name: _pop(population, t.a, t.b) for t in targets}
    targets = [t if t.plannable else replace(t, to_plan=_reach(
        {t.name: (pops[t.name], planning.MIN_LABELLED - t.ppi.now)}, order, every - labelled))
        for t in targets]
    more: dict[str, int | None] = {}
    draw: dict[str, int | None] = {}
    for kind in KINDS:
        asks = {t.name: (pops[t.name], t.more(kind)) for t in targets}
        if any(r is None for _, r in asks.values()):
            more[kind] = draw[kind] = None
            continue
        m = _reach({n: (p, int(r or 0)) for n, (p, r) in asks.items()}, order,
                   every - labelled)
        more[kind] = m
        draw[kind] = (None if m is None or positions is None or order is None
                      else _draw(order, m, positions, design))
    unplannable = [t for t in targets if not t.plannable]
    to_plan = (None if not unplannable else _reach(
        {t.name: (pops[t.name], planning.MIN_LABELLED - t.ppi.now) for t in unplannable},
        order, every - labelled))
    reasons = {t.name: str(t.ppi.reason or t.human_only.reason) for t in targets
               if t.ppi.n is None or t.human_only.n is None}
    run_targets = tuple(t for t in targets if t.b is None)
    pair_targets = tuple(t for t in targets if t.b is not None)
    return Plan(now=now, half_width=float(half_width), k=int(k), runs=run_targets,
                pairs=pair_targets, minutes_per_query=minutes_per_query, reasons=reasons,
                more=more, draw=draw, to_plan=to_plan,
                order="design" if order is not None else "random",
                design=design_name if design is not None else None)


def _pop(population: dict[str, set[str]], a: str, b: str | None) -> set[str]:
    return set(population[a]) if b is None else set(population[a]) & set(population[b])


def _values(table: pd.DataFrame, system: str, queries: list[str]) -> np.ndarray:
    col = table[system] if system in table.columns else pd.Series(dtype="float64")
    return col.reindex(queries).fillna(0.0).to_numpy(dtype="float64")


def plan_target(y: pd.DataFrame, yhat: pd.DataFrame, population: dict[str, set[str]],
                labelled: set[str], a: str, b: str | None, half_width: float, *,
                strict: bool = False) -> Target:
    """The run ``a`` (or the pair ``a − b``) planned for ±``half_width`` (below it with
    ``strict``) in its own queries: the one computation of ``plan`` and of the advice per
    unresolved pair.

    Usage: ``plan_target(y, yhat, {"a": qs, "b": qs}, labelled, "a", "b", 0.05).ppi.n``
    """
    pop = sorted(_pop(population, a, b))
    lab = [q for q in pop if q in labelled]
    ya, ha = _values(y, a, lab), _values(yhat, a, lab)
    if b is not None:
        ya, ha = ya - _values(y, b, lab), ha - _values(yhat, b, lab)
    pair = b is not None
    n_total = len(pop)
    needs = []
    for kind, x in (("ppi", ya - ha), ("human_only", ya)):
        assurance, kurtosis = planning.settings(kind, pair)
        need = planning.queries_needed(x, n_total, half_width, assurance=assurance,
                                       kurtosis=kurtosis, strict=strict)
        hw = need.half_width_now
        if not strict and hw is not None and hw <= half_width + _EPS and need.n is not None:
            need = replace(need, n=min(need.n, need.now))  # within ±W already
        needs.append(need)
    return Target(a, b, needs[0], needs[1], float(half_width))


def _order(every: set[str], labelled: set[str], design: Any
           ) -> tuple[list[str] | None, dict[str, int] | None]:
    """The queries not labelled yet in the design's order (and each one's place in its
    permutation), or ``(None, None)`` without a design, or with one that lacks some of them
    (then more queries are counted as random draws)."""
    if design is None:
        return None, None
    perm = list(design.permutation)
    positions = {q: i for i, q in enumerate(perm)}
    if not (every - labelled) <= set(perm):   # not the runs' design: count random draws
        return None, None
    return [q for q in perm if q in every and q not in labelled], positions


def _reach(asks: dict[str, tuple[set[str], int]], order: list[str] | None,
           left: set[str]) -> int | None:
    """How many more queries (the next of ``order``, else random ones of ``left``) give each
    ask ``(its queries, r)`` r more labelled queries of its own: the largest over the asks
    (with random ones, the expected count). ``None`` where the queries left cannot."""
    worst = 0
    for pop, r in asks.values():
        if r <= 0:
            continue
        if order is not None:
            hits = [i for i, q in enumerate(order) if q in pop]
            if len(hits) < r:
                return None
            worst = max(worst, hits[r - 1] + 1)
        else:
            mine = len(pop & left)
            if mine < r:
                return None
            worst = max(worst, min(len(left), math.ceil(r * len(left) / mine)))
    return worst


def _draw(order: list[str], m: int, positions: dict[str, int], design: Any) -> int:
    """The ``labeler sample --more`` number that draws the first ``m`` of ``order``."""
    if m <= 0:
        return 0
    return max(0, positions[order[m - 1]] + 1 - int(design.drawn))
