"""A certified leaderboard: label queries in the design's order until the order is proven.

The design (``labeler sample --unit query``, ``design.json``) puts its ``N`` queries in one
random order; people label them from the front, a sheet at a time, and look whenever they
like. For each run's mean NDCG@k and each difference of two runs (target: what full human
labelling of the ``N`` queries would report) this gives a prediction-powered confidence
sequence (:mod:`labeler.statistics.certify`) that holds at every look at once and for all
runs and pairs together (``alpha`` split over them): a pair is certified when its sequence
leaves 0 out, the top ``K`` when their order is proven.

Usage::

    import labeler
    c = labeler.certify(human=["sheet1.csv", "sheet2.csv"], llm="labels.jsonl",
                        runs=["a.run", "b.run"], design="sheets/design.json")
    c.to_dict()["top"]      # {"k": 1, "order": ["a"], "certified": True}
    print(c.to_text())
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from labeler import io
from labeler.errors import ConfigError, InputError
from labeler.io.edges import QrelsLike, RunsLike
from labeler.reconciliation.design import QueryDesign, _some, design_path, read_design
from labeler.reconciliation.labelled import combine_human, query_coverage
from labeler.statistics.certify import MeanCS, batch_cs, mean_cs

VERDICTS: tuple[str, ...] = ("a-better", "b-better", "not-yet")
"""A pair's ``certified``: which run is proven better, or not yet."""
NEXT_SHOWN = 10
"""How many of the design's next queries are named when no estimate of the need is given."""
_SIMS = 16


@dataclass(frozen=True)
class Certification:
    """Confidence sequences of runs and pairs after ``n`` of the design's ``N`` queries.

    ``runs``: ``{tag: MeanCS}``; ``pairs``: ``[(a, b, MeanCS)]`` of a − b; ``order``: the runs
    best first by their estimates; ``top_k`` and whether that order of the first ``top_k``
    is ``certified``; ``next_queries`` and ``more_needed`` (how many more labelled queries
    would likely certify it, ``None`` when no estimate can be given)."""

    n: int
    n_total: int
    alpha: float
    k: int
    runs: dict[str, MeanCS]
    pairs: list[tuple[str, str, MeanCS]]
    order: list[str]
    top_k: int
    top_certified: bool
    next_queries: list[str]
    more_needed: int | None
    notes: list[str] = field(default_factory=list)

    def verdict(self, cs: MeanCS) -> str:
        """``a-better``/``b-better`` when the pair's sequence leaves 0 out, else ``not-yet``."""
        return _verdict(cs)

    def to_dict(self) -> dict[str, Any]:
        """``{"n", "N", "alpha", "runs", "pairs", "top", "next"}``: what ``labeler certify
        --json`` prints."""
        def cs(c: MeanCS) -> list[float]:
            return [float(c.lo[-1]), float(c.hi[-1])]

        return {
            "n": self.n, "N": self.n_total, "alpha": self.alpha,
            "runs": {t: {"estimate": float(c.estimate[-1]), "cs": cs(c)}
                     for t, c in self.runs.items()},
            "pairs": [{"a": a, "b": b, "delta": float(c.estimate[-1]), "cs": cs(c),
                       "certified": self.verdict(c)} for a, b, c in self.pairs],
            "top": {"k": self.top_k, "order": self.order[:self.top_k],
                    "certified": self.top_certified},
            "next": {"queries": list(self.next_queries), "more_needed": self.more_needed},
        }

    def details(self) -> dict[str, Any]:
        """:meth:`to_dict` plus what the words need: NDCG cut-off, the level of each
        sequence, known values per pair, notes."""
        out = self.to_dict()
        m = len(self.runs) + len(self.pairs)
        out.update({"k": self.k, "alpha_each": self.alpha / max(m, 1), "notes": self.notes,
                    "known": {f"{a} − {b}": c.n_known for a, b, c in self.pairs}})
        return out

    def to_text(self) -> str:
        """The terminal text."""
        from labeler.report.certify import render_text

        return render_text(self.details())

    def to_markdown(self) -> str:
        """The report section, Markdown."""
        from labeler.report.certify import render_markdown

        return render_markdown(self.details())

    def to_html(self) -> str:
        """The report section, HTML (escaped)."""
        from labeler.report.certify import render_html

        return render_html(self.details())

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return (f"Certification(n={self.n}, N={self.n_total}, top={self.order[:self.top_k]}, "
                f"certified={self.top_certified})")


# ---------------------------------------------------------------------- inputs

def labelled_front(design: QueryDesign, labelled: set[str],
                   source: str | os.PathLike[str] | None = None) -> int:
    """How many queries from the front of the design's order are labelled; the labelled
    queries must be exactly that front (else :class:`~labeler.errors.InputError`)."""
    order = design.permutation
    outside = sorted(labelled - set(order) - set(design.excluded))
    if outside:
        raise InputError(f"the human labels cover {len(outside)} queries the design does not "
                         f"hold ({_some(outside)}): they were labelled outside the design's "
                         f"order", path=source)
    inside = [q in labelled for q in order]
    n = inside.index(False) if False in inside else len(order)
    later = [i for i in range(n, len(order)) if inside[i]]
    if later:
        gap = order[n]
        raise InputError(f"the labelled queries are not a front of the design's order: "
                         f"query {order[later[0]]} (position {later[0] + 1}) is labelled but "
                         f"query {gap} (position {n + 1}) is not. Label the design's queries "
                         f"in its order (the sheets of `labeler sample --unit query` and "
                         f"`--more`), or certify only the front", path=source)
    return n


def _design(design: QueryDesign | str | os.PathLike[str] | None,
            human: Any) -> tuple[QueryDesign, str | None]:
    if isinstance(design, QueryDesign):
        return design, None
    if design is None:
        first = human[0] if isinstance(human, (list, tuple)) and human else human
        if not isinstance(first, (str, os.PathLike)) or str(first).startswith("irds:"):
            raise ConfigError("certify needs the sample design (design.json) whose random "
                              "order the queries were labelled in: give `design`")
        design = design_path(first)
    return read_design(design), str(design)


def _ndcg(qrels: pd.DataFrame, run: pd.DataFrame, k: int, gain: str,
          queries: list[str], systems: list[str]) -> np.ndarray:
    from labeler.scoring.results import evaluate

    if qrels.empty:
        return np.zeros((len(queries), len(systems)))
    pq = evaluate(qrels, run, k=k, gain=gain, include_empty=True).per_query
    pq = pq.loc[pq["k"] == k] if "k" in pq.columns else pq
    wide = pq.pivot_table(index="query_id", columns="system", values="ndcg", aggfunc="first")
    return wide.reindex(index=queries, columns=systems).fillna(0.0).to_numpy(dtype="float64")


def top_lists(run: pd.DataFrame, k: int, queries: list[str], systems: list[str]
              ) -> list[list[tuple[str, ...] | None]]:
    """Each run's top k of each query in trec_eval's order (score descending, then chunk id
    descending); ``None`` where the run lacks the query.

    Usage: ``top_lists(io.as_runs("a.run"), 10, ["q1"], ["a"])``
    """
    r = run.loc[run["query_id"].isin(set(queries))].sort_values(
        ["system", "query_id", "score", "chunk_id"], ascending=[True, True, False, False],
        kind="stable")
    tops = {(s, q): tuple(g["chunk_id"].astype(str).head(k))
            for (s, q), g in r.groupby(["system", "query_id"], sort=False)}
    return [[tops.get((s, q)) for s in systems] for q in queries]


# ---------------------------------------------------------------------- certification

def certify(*, human: QrelsLike | Sequence[QrelsLike], llm: QrelsLike, runs: RunsLike,
            design: QueryDesign | str | os.PathLike[str] | None = None, top: int = 1,
            alpha: float = 0.05, k: int = 10, gain: str = "linear",
            seed: int | None = None) -> Certification:
    """Confidence sequences of every run's mean NDCG@``k`` and every pair's difference over
    the design's queries, from the queries labelled so far (a front of the design's order),
    valid at every look and over all of them at once (level ``1 − alpha``), and whether the
    order of the best ``top`` runs is proven.

    ``human``: one or several label sources (the sheets of the design); ``design``: the
    ``design.json`` (default: next to the first sheet). Raises
    :class:`~labeler.errors.InputError` for labels outside the design's order, a labelled set
    that is not a front of it, or partly labelled queries.

    Usage: ``certify(human="sheet.csv", llm="labels.jsonl", runs=["a.run", "b.run"]).to_text()``
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ConfigError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ConfigError(f"top must be a whole number of runs, at least 1, got {top!r}")
    plan, source = _design(design, human)
    human_q = combine_human(list(human) if isinstance(human, (list, tuple)) else [human])
    llm_q = io.as_qrels(llm, any_grade=True)
    run = io.as_runs(runs)
    if run.empty:
        raise InputError("no run rows to certify")
    systems = [str(s) for s in dict.fromkeys(run["system"])]
    queries = list(plan.permutation)
    cov = query_coverage(human_q.loc[human_q["query_id"].isin(set(queries))], llm_q)
    if cov.partial:
        raise InputError(cov.message("certify"))
    labelled = set(human_q["query_id"].astype(str))
    n = labelled_front(plan, labelled, source)
    notes = []
    early = sorted(labelled & set(plan.excluded))
    if early:
        notes.append(f"{len(early)} queries labelled before the design was drawn are not "
                     f"part of it and are left out")
    front = queries[:n]
    y = _ndcg(human_q.loc[human_q["query_id"].isin(set(front))], run, k, gain, front, systems)
    yhat = _ndcg(llm_q, run, k, gain, queries, systems)
    lists = top_lists(run, k, queries, systems)
    has = np.array([[t is not None for t in row] for row in lists], dtype=bool)
    pairs_ix = list(itertools.combinations(range(len(systems)), 2))
    m = len(systems) + len(pairs_ix)
    each = alpha / m
    run_cs = {}
    for j, s in enumerate(systems):
        known = ~has[:, j]              # a run lacking a query scores 0 there
        lo_b, hi_b = np.zeros(len(queries)), np.where(known, 0.0, 1.0)
        run_cs[s] = mean_cs(y[:, j], np.where(known, 0.0, yhat[:, j]), lo_b, hi_b, alpha=each)
    pair_cs = []
    bounds = {}
    for a, b in pairs_ix:
        lo_b, hi_b = pair_bounds(lists, has, a, b)
        bounds[(a, b)] = (lo_b, hi_b)
        zero = lo_b == hi_b
        d_hat = np.where(zero, 0.0, yhat[:, a] - yhat[:, b])
        d = np.where(zero[:n], 0.0, y[:, a] - y[:, b])
        pair_cs.append((systems[a], systems[b], mean_cs(d, d_hat, lo_b, hi_b, alpha=each)))
    est = {s: float(c.estimate[-1]) for s, c in run_cs.items()}
    order = sorted(systems, key=lambda s: (-est[s], s))
    top_k = min(top, len(systems))
    better = {(a, b) if v == "a-better" else (b, a)
              for a, b, c in pair_cs for v in [_verdict(c)] if v != "not-yet"}
    certified = _top_certified(order, top_k, better)
    more = None
    if not certified and n < len(queries):
        rng_seed = plan.seed if seed is None else seed
        more = _more_needed(y, yhat, lists, has, bounds, systems, order, top_k, n, each,
                            rng_seed)
    shown = more if more is not None else NEXT_SHOWN
    nxt = [] if certified else queries[n:n + shown]
    return Certification(n, len(queries), float(alpha), int(k), run_cs, pair_cs, order, top_k,
                         certified, nxt, more, notes)


def _verdict(cs: MeanCS) -> str:
    lo, hi = float(cs.lo[-1]), float(cs.hi[-1])
    return "a-better" if lo > 0 else "b-better" if hi < 0 else "not-yet"


def pair_bounds(lists: list[list[tuple[str, ...] | None]], has: np.ndarray, a: int, b: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of NDCG_a − NDCG_b per query known before any label: 0 when both runs return
    the same top k (or both lack the query), else [−1 if b has a list, 1 if a has one].

    Usage: ``lo, hi = pair_bounds(top_lists(run, 10, queries, systems), has, 0, 1)``
    """
    same = np.array([row[a] == row[b] for row in lists], dtype=bool)
    lo_b = np.where(same | ~has[:, b], 0.0, -1.0)
    hi_b = np.where(same | ~has[:, a], 0.0, 1.0)
    return lo_b, hi_b


def _top_certified(order: list[str], top_k: int, better: set[tuple[str, str]]) -> bool:
    """Each of the first ``top_k`` runs is proven better than every run after it (through a
    chain of certified pairs: the sequences hold together)."""
    if len(order) < 2:
        return True
    beats = {s: {b for a, b in better if a == s} for s in order}
    changed = True
    while changed:      # transitive closure
        changed = False
        for s in order:
            extra = set().union(*(beats[t] for t in beats[s])) - beats[s] if beats[s] else set()
            if extra:
                beats[s] |= extra
                changed = True
    return all(set(order[i + 1:]) <= beats[order[i]] for i in range(min(top_k, len(order) - 1)))


def _more_needed(y: np.ndarray, yhat: np.ndarray, lists: list[list[tuple[str, ...] | None]],
                 has: np.ndarray, bounds: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]],
                 systems: list[str], order: list[str], top_k: int, n: int, each: float,
                 seed: int) -> int | None:
    """How many more queries of the design would likely certify the top ``top_k``: the
    median, over simulated continuations, of the first look at which every pair the top
    needs is certified. A continuation gives each query not yet labelled its LLM value plus
    the human − LLM residuals of a labelled query drawn at random (all runs together), kept
    within the query's bounds. ``None`` with fewer than 2 labelled queries or when the
    median continuation does not certify the top."""
    big_n = yhat.shape[0]
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, n, size=(_SIMS, big_n - n))
    resid = y - yhat[:n]
    known = ~has
    sim_y = np.empty((_SIMS, big_n, len(systems)))
    sim_y[:, :n] = y
    sim_y[:, n:] = np.clip(yhat[n:][None] + resid[pick], 0.0, 1.0)
    sim_y[:, known] = 0.0
    index = {s: i for i, s in enumerate(systems)}
    need = [(order[i], order[j]) for i in range(min(top_k, len(order) - 1))
            for j in range(i + 1, len(order))]
    done = np.full((_SIMS, big_n + 1), True)
    for hi_run, lo_run in need:
        a, b = sorted((index[hi_run], index[lo_run]))
        lo_b, hi_b = bounds[(a, b)]
        info = lo_b < hi_b
        if not info.any():
            return None          # an exact tie: never certified
        d = np.clip(sim_y[:, :, a] - sim_y[:, :, b], lo_b, hi_b)[:, info]
        d_hat = (yhat[:, a] - yhat[:, b])[info]
        share = float(info.mean())
        lo, hi = batch_cs(d, np.broadcast_to(d_hat, d.shape), np.broadcast_to(lo_b[info],
                          d.shape), np.broadcast_to(hi_b[info], d.shape), n=int(info.sum()),
                          alpha=each)
        t_info = np.concatenate([[0], np.cumsum(info)])
        lo, hi = share * lo[:, t_info], share * hi[:, t_info]
        sign = 1 if index[hi_run] == a else -1
        ok = lo > 0 if sign > 0 else hi < 0
        done &= ok
    hit = done[:, n + 1:]
    first = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, big_n + 1)
    med = float(np.median(first))
    return None if med > big_n - n else int(np.ceil(med))
