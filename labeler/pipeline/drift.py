"""Drift between two runs of a scheduled job: changed LLM grades and moved NDCG means.

A pair has drifted when both runs judged it (status ``ok``) and the grades differ; a run has
drifted when its mean NDCG@k under LLM labels moved by more than ``max_ndcg_delta``. The job as
a whole has drifted when the share of changed pairs exceeds ``max_changed_share`` or any run
moved too far. Each move is also tested over the queries both jobs scored (a paired test of
the per-query NDCG, two-sided, at ``alpha``): a move can be large and still within the noise
of a few queries, or small and real.

Usage::

    from labeler.pipeline.drift import compute_drift
    d = compute_drift(prev_labels, labels, prev_scores, scores, max_changed_share=0.05,
                      max_ndcg_delta=0.02)
    d.drifted, d.n_changed, d.to_dict()
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from labeler.schema import STATUS, STATUS_OK
from labeler import fmt

if TYPE_CHECKING:
    from labeler.pipeline.guard import JudgeCheck

__all__ = ["Drift", "compute_drift", "score_means"]

_KEYS = ["query_id", "chunk_id"]


@dataclass(frozen=True)
class Drift:
    """What changed since the previous run (``previous`` is None for a first run).

    - ``changed``: ``query_id, chunk_id, previous, current`` — pairs whose grade changed.
    - ``ndcg``: ``system, k, previous, current, delta, n_queries, p, beyond_noise`` — runs
      scored in both runs; ``p`` is the paired test of the per-query NDCG over the
      ``n_queries`` queries both scored, ``beyond_noise`` whether ``p < alpha``.
    - ``n_added``/``n_removed``: pairs graded now but not before / before but not now
      (new pairs, pairs gone from the input, pairs that failed this time).
    - ``judge``: the anchors, the guard and the leaderboard's shift
      (:class:`~labeler.pipeline.guard.JudgeCheck`), when the job has anchors.
    """

    previous: str | None
    n_compared: int
    n_added: int
    n_removed: int
    changed: pd.DataFrame
    ndcg: pd.DataFrame
    max_changed_share: float
    max_ndcg_delta: float
    notes: tuple[str, ...] = field(default=())
    alpha: float = 0.05
    test: str = "t"
    judge: JudgeCheck | None = None

    @property
    def judge_changed(self) -> bool:
        """True when the guard found the judge changed since the accepted run."""
        return self.judge is not None and self.judge.judge_changed

    @property
    def n_changed(self) -> int:
        """Pairs judged in both runs whose grade differs."""
        return len(self.changed)

    @property
    def changed_share(self) -> float:
        """``n_changed / n_compared`` (0 when nothing was compared)."""
        return self.n_changed / self.n_compared if self.n_compared else 0.0

    @property
    def moved(self) -> pd.DataFrame:
        """The rows of ``ndcg`` whose |delta| exceeds the threshold."""
        return self.ndcg.loc[self.ndcg["delta"].abs() > self.max_ndcg_delta]

    @property
    def reasons(self) -> list[str]:
        """One sentence per threshold crossed (empty when nothing drifted)."""
        out = []
        if self.changed_share > self.max_changed_share:
            out.append(f"{self.n_changed} of {self.n_compared} LLM grades changed "
                       f"({self.changed_share:.1%} > {self.max_changed_share:.1%})")
        for r in self.moved.itertuples():
            out.append(f"run {r.system}: NDCG@{r.k} moved {fmt.num(r.delta, signed=True)} "
                       f"(|Δ| > {self.max_ndcg_delta:g}; {self.noise_words(r.p, r.n_queries)})")
        return out

    def noise_words(self, p: Any, n_queries: Any) -> str:
        """``"beyond noise: paired t-test over 43 queries, p 0.0012"`` (or within noise)."""
        f = fmt.finite(p)
        queries = f"{fmt.count(n_queries)} quer{'y' if fmt.finite(n_queries) == 1 else 'ies'}"
        if f is None:
            return f"noise not testable: {queries} scored by both jobs"
        where = "beyond noise" if f < self.alpha else "within noise"
        name = "t-test" if self.test == "t" else "randomization test"
        return f"{where}: paired {name} over {queries}, p {fmt.pvalue(f)}"

    def rows(self) -> list[dict[str, Any]]:
        """The drift table: one row per check — ``what`` was compared, the ``change``, the
        ``threshold``, whether it is ``over`` it, and ``why`` (the noise test, for NDCG)."""
        out = [{"what": "LLM grades changed",
                "change": f"{self.n_changed} of {self.n_compared} ({self.changed_share:.1%})",
                "threshold": f"{self.max_changed_share:.1%}",
                "over": self.changed_share > self.max_changed_share, "why": ""}]
        for r in self.ndcg.itertuples():
            out.append({"what": f"NDCG@{r.k} of {r.system}",
                        "change": fmt.num(r.delta, signed=True),
                        "threshold": f"±{self.max_ndcg_delta:g}",
                        "over": bool(abs(r.delta) > self.max_ndcg_delta),
                        "why": self.noise_words(r.p, r.n_queries)})
        return out

    def to_text(self) -> str:
        """A short table of what changed since the previous run, and the likely causes."""
        rows = self.rows()
        head = (f"drift vs {self.previous}: "
                + ("past a threshold" if self.drifted else "within the thresholds"))
        w = [max(len(h), *(len(str(r[k])) for r in rows))
             for h, k in (("what", "what"), ("change", "change"), ("threshold", "threshold"))]
        lines = [head, f"  {'what':<{w[0]}}  {'change':>{w[1]}}  {'threshold':>{w[2]}}  over"]
        for r in rows:
            lines.append(f"  {r['what']:<{w[0]}}  {r['change']:>{w[1]}}  "
                         f"{r['threshold']:>{w[2]}}  {'YES' if r['over'] else 'no':<4}"
                         + (f"  {r['why']}" if r["why"] else ""))
        lines += [f"  why: {note}" for note in self.notes]
        if self.previous is None:
            lines = []
        if self.judge is not None:
            lines += self.judge.to_text().splitlines()
        return "\n".join(lines)

    @property
    def drifted(self) -> bool:
        """True when any threshold is crossed."""
        return bool(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        """The ``drift.json`` object."""
        return {
            "previous": self.previous,
            "drifted": self.drifted,
            "reasons": self.reasons,
            "thresholds": {"max_changed_share": self.max_changed_share,
                           "max_ndcg_delta": self.max_ndcg_delta, "alpha": self.alpha,
                           "test": self.test},
            "labels": {
                "n_compared": self.n_compared, "n_changed": self.n_changed,
                "changed_share": self.changed_share, "n_added": self.n_added,
                "n_removed": self.n_removed,
                "changed": [{"query_id": r.query_id, "chunk_id": r.chunk_id,
                             "previous": int(r.previous), "current": int(r.current)}
                            for r in self.changed.itertuples()],
            },
            "ndcg": [{"system": r.system, "k": int(r.k), "previous": _num(r.previous),
                      "current": _num(r.current), "delta": _num(r.delta),
                      "drifted": bool(abs(r.delta) > self.max_ndcg_delta),
                      "n_queries": int(r.n_queries), "p": _num(r.p),
                      "beyond_noise": bool(r.beyond_noise)}
                     for r in self.ndcg.itertuples()],
            "notes": list(self.notes),
            "table": self.rows(),
            **(self.judge.to_dict() if self.judge is not None else {"judge_changed": False}),
        }


_num = fmt.finite


def _graded(labels: pd.DataFrame) -> pd.DataFrame:
    ok = labels
    if "status" in labels.columns:
        ok = labels.loc[labels[STATUS].astype(str) == STATUS_OK]
    ok = ok.loc[ok["grade"].notna(), [*_KEYS, "grade"]]
    return ok.astype({"query_id": str, "chunk_id": str, "grade": "int64"})


def _per_query(scores: Mapping[str, Any], system: str, k: int) -> dict[str, float]:
    values = ((scores.get("runs") or {}).get(system) or {}).get(f"ndcg@{k}") or {}
    pq = values.get("per_query") if isinstance(values, Mapping) else None
    return {str(q): float(v) for q, v in (pq or {}).items() if v is not None}


def _moves_tested(ndcg: pd.DataFrame, prev_scores: Mapping[str, Any],
                  scores: Mapping[str, Any], alpha: float, test: str, permutations: int,
                  seed: int) -> pd.DataFrame:
    """``ndcg`` with ``n_queries, p, beyond_noise``: each run's per-query NDCG now vs before,
    paired over the queries both jobs scored."""
    from labeler.statistics.inference import paired_test

    n, p = [], []
    for r in ndcg.itertuples():
        before = _per_query(prev_scores, str(r.system), int(r.k))
        now = _per_query(scores, str(r.system), int(r.k))
        shared = sorted(set(before) & set(now))
        res = paired_test([now[q] for q in shared], [before[q] for q in shared], test=test,
                          permutations=permutations, seed=seed)
        n.append(res.n)
        p.append(math.nan if res.p is None else res.p)
    out = ndcg.assign(n_queries=pd.array(n, dtype="int64"), p=pd.array(p, dtype="float64"))
    return out.assign(beyond_noise=out["p"].lt(alpha).fillna(False).astype(bool))


def score_means(scores: Mapping[str, Any]) -> pd.DataFrame:
    """``system, k, mean`` from a ``labeler score --json`` object."""
    rows = []
    for system, measures in (scores.get("runs") or {}).items():
        for name, values in measures.items():
            if name.startswith("ndcg@") and isinstance(values, Mapping):
                rows.append((str(system), int(name.split("@", 1)[1]), values.get("mean")))
    return pd.DataFrame(rows, columns=["system", "k", "mean"]).astype({"mean": "float64"})


def compute_drift(prev_labels: pd.DataFrame | None, labels: pd.DataFrame,
                  prev_scores: Mapping[str, Any] | None, scores: Mapping[str, Any] | None, *,
                  max_changed_share: float = 0.05, max_ndcg_delta: float = 0.02,
                  previous: str | None = None, notes: tuple[str, ...] = (),
                  alpha: float = 0.05, test: str = "t", permutations: int = 10_000,
                  seed: int = 0) -> Drift:
    """Compare this run's label records and score JSON with the previous run's.

    Label frames need ``query_id, chunk_id, grade`` (``status`` honoured); failed pairs are
    left out on both sides. Each run's move in mean NDCG is tested over the queries both
    jobs scored (``test``: ``t`` or ``randomization``, at ``alpha``). Inputs are not modified.

    Usage: ``compute_drift(prev_labels, labels, prev_scores, scores, alpha=0.05)``
    """
    empty_changed = pd.DataFrame({c: pd.Series(dtype=t) for c, t in
                                  (("query_id", str), ("chunk_id", str),
                                   ("previous", "int64"), ("current", "int64"))})
    empty_ndcg = pd.DataFrame({c: pd.Series(dtype=t) for c, t in
                               (("system", str), ("k", "int64"), ("previous", "float64"),
                                ("current", "float64"), ("delta", "float64"),
                                ("n_queries", "int64"), ("p", "float64"),
                                ("beyond_noise", bool))})
    if prev_labels is None:
        return Drift(previous, 0, 0, 0, empty_changed, empty_ndcg, max_changed_share,
                     max_ndcg_delta, notes, alpha, test)
    cur, old = _graded(labels), _graded(prev_labels)
    both = old.merge(cur, on=_KEYS, how="outer", suffixes=("_prev", "_cur"), indicator=True)
    common = both.loc[both["_merge"] == "both"]
    changed = common.loc[common["grade_prev"] != common["grade_cur"]]
    changed = (changed.rename(columns={"grade_prev": "previous", "grade_cur": "current"})
               [["query_id", "chunk_id", "previous", "current"]]
               .astype({"previous": "int64", "current": "int64"})
               .sort_values(_KEYS, kind="stable").reset_index(drop=True))
    ndcg = empty_ndcg
    if prev_scores and scores:
        m = score_means(prev_scores).merge(score_means(scores), on=["system", "k"],
                                           suffixes=("_prev", "_cur"))
        ndcg = pd.DataFrame({"system": m["system"], "k": m["k"], "previous": m["mean_prev"],
                             "current": m["mean_cur"],
                             "delta": (m["mean_cur"] - m["mean_prev"]).fillna(0.0)})
        ndcg = ndcg.sort_values(["system", "k"], kind="stable").reset_index(drop=True)
        ndcg = _moves_tested(ndcg, prev_scores, scores, alpha, test, permutations, seed)
    return Drift(previous, len(common), int((both["_merge"] == "right_only").sum()),
                 int((both["_merge"] == "left_only").sum()), changed, ndcg,
                 max_changed_share, max_ndcg_delta, notes, alpha, test)
