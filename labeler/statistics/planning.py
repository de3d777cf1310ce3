"""How many human-labelled queries does an interval of at most ±W need?

The intervals planned for are those of a mean over the N queries of a run, from a simple
random sample of n of them judged by hand, with the finite-population correction and a t
quantile::

    half-width = t(0.975, n − 1) · sqrt((1 − n/N) · s² / n)

where s² is the sample variance of the per-query values the interval averages: Δ = human −
LLM NDCG for the prediction-powered (difference) estimator, the human NDCG itself for the
human-only interval, and the same of the differences a − b for a pair of runs.

The spread s² of the queries judged so far (the pilot, at least :data:`MIN_LABELLED`) stands
in for the spread of the sample still to be drawn, with a margin for how little a few queries
say about it (a two-stage design in the spirit of Stein's): the variance planned for is s²
times :func:`margin`, the :data:`ASSURANCE` quantile (:data:`ASSURANCE_HUMAN`,
:data:`ASSURANCE_PAIR`, :data:`ASSURANCE_HUMAN_PAIR` for the others) of the ratio of a fresh
sample's variance to the pilot's — an F law whose degrees of freedom allow for heavy tails:
excess kurtosis :data:`KURTOSIS_RUN` for a run's human − LLM error, :data:`KURTOSIS_HUMAN`
for its human NDCG, and :data:`KURTOSIS_PAIR` for a difference between two runs (mostly near
0, where both rank alike, and now and then large); :func:`settings` picks them. They are
tuned so that the number named for several runs at once reaches ±W in about 80–90% of draws
on TREC DL 2019 (``benchmarks/bench_plan.py``; the measured table is in the docs' planning
page), not far more: a plan that always over-asks costs people hours.

Pure numpy/scipy. Usage::

    from labeler.statistics.planning import half_width, queries_needed
    need = queries_needed(human_minus_llm, n_total=43, half_width=0.05)
    need.n, need.more, need.reason
    half_width(0.12, 21, 43)                 # the ± of 21 of 43 queries with spread 0.12
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

LEVEL = 0.95
"""The level of the intervals planned for."""
ASSURANCE = 0.7
"""The quantile of the variance ratio planned for, for PPI (see the module's text)."""
KURTOSIS_RUN = 1.0
"""The excess kurtosis assumed for per-query values of one run (NDCG, human − LLM NDCG)."""
KURTOSIS_PAIR = 6.0
"""The excess kurtosis assumed for per-query differences between two runs."""
ASSURANCE_HUMAN = 0.65
"""The quantile of the variance ratio planned for, for the human-only interval of a run."""
ASSURANCE_PAIR = 0.75
"""The same for the PPI interval of a difference between two runs."""
ASSURANCE_HUMAN_PAIR = 0.72
"""The same for the human-only interval of a difference between two runs."""
KURTOSIS_HUMAN = 1.0
"""The excess kurtosis assumed for a run's human NDCG per query (the human-only interval)."""
TARGET_WORDS = "about 80–90%"
"""The measured share of draws of the number named that reach ±W, in words."""


def settings(kind: str, pair: bool = False) -> tuple[float, float]:
    """``(assurance, kurtosis)`` of the margin for an interval of ``kind`` (``"ppi"`` or
    ``"human_only"``) of a run, or with ``pair`` of a difference between two runs.

    Usage: ``queries_needed(x, 43, 0.05, **dict(zip(("assurance", "kurtosis"),
    settings("ppi"))))``
    """
    if kind not in ("ppi", "human_only"):
        raise ValueError(f"kind must be 'ppi' or 'human_only', got {kind!r}")
    if pair:
        return (ASSURANCE_PAIR if kind == "ppi" else ASSURANCE_HUMAN_PAIR), KURTOSIS_PAIR
    return (ASSURANCE, KURTOSIS_RUN) if kind == "ppi" else (ASSURANCE_HUMAN, KURTOSIS_HUMAN)
MIN_LABELLED = 5
"""Fewer labelled queries than this say too little about the spread to plan from."""


@dataclass(frozen=True)
class Need:
    """How many labelled queries (in all, those so far included) an interval needs.

    ``n`` is ``None`` where no number can be given, and ``reason`` says why. ``now``: the
    queries labelled so far; ``n_total``: the queries there are (``None``: no finite-
    population correction); ``sd``: the spread of the values so far; ``sd_planned``: the
    spread planned for (with the margin); ``half_width_now``: the ± the sample so far gives.
    """

    n: int | None
    now: int
    n_total: int | None
    sd: float | None
    sd_planned: float | None
    half_width_now: float | None
    reason: str | None = None

    @property
    def more(self) -> int | None:
        """How many more queries to label (0 when the sample so far is enough)."""
        return None if self.n is None else max(0, self.n - self.now)

    def to_dict(self) -> dict[str, Any]:
        """``{"n", "more", "now", "n_total", "sd", "sd_planned", "half_width_now",
        "reason"}``."""
        return {"n": self.n, "more": self.more, "now": self.now, "n_total": self.n_total,
                "sd": self.sd, "sd_planned": self.sd_planned,
                "half_width_now": self.half_width_now, "reason": self.reason}


def _values(sample: ArrayLike) -> NDArray[np.float64]:
    a = np.asarray(sample, dtype="float64").reshape(-1)
    if not np.isfinite(a).all():
        raise ValueError("the sample must hold finite numbers (got NaN or infinity)")
    return a


def _check(level: float, n_total: int | None) -> None:
    if not 0 < level < 1:
        raise ValueError(f"the level must be between 0 and 1, got {level!r}")
    if n_total is not None and n_total < 1:
        raise ValueError(f"the number of queries must be positive, got {n_total!r}")


def _hw(sd: float, n: Any, n_total: int | None, level: float) -> NDArray[np.float64]:
    from scipy.special import stdtrit

    k = np.asarray(n, dtype="float64")
    fpc = 1.0 if n_total is None else np.clip(1.0 - k / n_total, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = stdtrit(np.maximum(k - 1, 1), (1 + level) / 2)
        return np.asarray(np.where(k >= 2, t * sd * np.sqrt(fpc / k), np.nan))


def half_width(sd: float, n: int | ArrayLike, n_total: int | None = None,
               level: float = LEVEL) -> Any:
    """The ± of a t interval of a mean over a simple random sample of ``n`` of ``n_total``
    queries whose values have standard deviation ``sd``: ``t(q, n − 1) · sd · sqrt((1 −
    n/N)/n)``, q = (1 + level)/2; no correction when ``n_total`` is ``None``. ``n`` may be an
    array (then an array); NaN below two queries.

    Usage: ``half_width(0.12, 21, 43)`` → 0.0391...
    """
    _check(level, n_total)
    out = _hw(sd, n, n_total, level)
    return float(out) if out.ndim == 0 else out


def effective_df(m: int | ArrayLike, kurtosis: float = KURTOSIS_RUN) -> Any:
    """Degrees of freedom of the chi-square law with the spread of the sample variance of
    ``m`` values of excess ``kurtosis``: 2 / (2/(m − 1) + κ/m) — m − 1 for normal data.

    Usage: ``effective_df(10, 0.0)`` → 9.0
    """
    k = np.maximum(np.asarray(m, dtype="float64"), 2.0)
    out = 2.0 / (2.0 / (k - 1) + max(float(kurtosis), 0.0) / k)
    return float(out) if np.ndim(out) == 0 else out


def margin(n: int | ArrayLike, n_pilot: int, assurance: float = ASSURANCE,
           kurtosis: float = KURTOSIS_RUN) -> Any:
    """The factor on the pilot's variance planned for, for a final sample of ``n``: the
    ``assurance`` quantile of F(df(n), df(n_pilot)) (:func:`effective_df`), the law of a
    fresh sample's variance over the pilot's.

    Usage: ``margin(20, 10)`` → about 2.0 (``margin(20, 10, 0.5, 0.0)`` → about 1.04)
    """
    from scipy.special import fdtri

    if not 0 < assurance < 1:
        raise ValueError(f"the assurance must be between 0 and 1, got {assurance!r}")
    if n_pilot < 2:
        raise ValueError(f"the pilot needs at least 2 queries, got {n_pilot}")
    out = fdtri(effective_df(n, kurtosis), effective_df(n_pilot, kurtosis), assurance)
    return float(out) if np.ndim(out) == 0 else out


def queries_needed(sample: ArrayLike, n_total: int | None, half_width: float, *,
                   level: float = LEVEL, assurance: float = ASSURANCE,
                   kurtosis: float = KURTOSIS_RUN, strict: bool = False,
                   max_n: int = 10_000_000) -> Need:
    """The smallest number n of labelled queries (in all) whose interval is at most
    ± ``half_width`` (below it with ``strict``), planning for the spread of ``sample`` — the
    per-query values labelled so far (Δ = human − LLM for PPI, the human values for the
    human-only interval) — times :func:`margin` (``kurtosis``: :data:`KURTOSIS_PAIR` for
    the differences of a pair of runs). ``n_total``: the run's number of queries
    (``None``: no finite-population correction, and n at most ``max_n``).

    ``Need.n`` is ``None``, with a reason, below :data:`MIN_LABELLED` values or when not even
    ``max_n`` queries would do. With a finite ``n_total`` judging every query leaves no
    sampling error, so then n ≤ ``n_total``.

    Usage: ``queries_needed(y - yhat, n_total=43, half_width=0.05).n``
    """
    _check(level, n_total)
    if not half_width > 0:
        raise ValueError(f"the half-width must be positive, got {half_width!r}")
    w = float(half_width)
    x = _values(sample)
    n0 = len(x)
    if n_total is not None and n0 > n_total:
        raise ValueError(f"{n0} labelled values but only {n_total} queries")
    if n0 < MIN_LABELLED:
        return Need(None, n0, n_total, None, None, None,
                    f"only {n0} human-labelled quer{'y' if n0 == 1 else 'ies'} (at least "
                    f"{MIN_LABELLED} are needed to plan from)")
    sd = float(np.std(x, ddof=1))
    now = float(_hw(sd, n0, n_total, level))
    top = n_total if n_total is not None else max_n
    n = _search(sd, n0, n_total, w, level, assurance, kurtosis, strict, top)
    if n is None:
        return Need(None, n0, n_total, sd, None, now,
                    f"even {top:,} labelled queries would not reach ±{w:g}")
    planned = sd * math.sqrt(float(margin(max(n, 2), n0, assurance, kurtosis)))
    return Need(n, n0, n_total, sd, planned, now, None)


def _search(sd: float, n0: int, n_total: int | None, w: float, level: float,
            assurance: float, kurtosis: float, strict: bool, top: int) -> int | None:
    """The smallest n in [:data:`MIN_LABELLED`, top] whose planned half-width reaches ``w``
    (all n of a block at once, blocks growing fourfold): never fewer than PPI needs for an
    interval."""
    lo, size = min(MIN_LABELLED, top), 256
    while lo <= top:
        ns = np.arange(lo, min(top, lo + size - 1) + 1, dtype="float64")
        hw = _hw(sd, ns, n_total, level) * np.sqrt(margin(ns, n0, assurance, kurtosis))
        if n_total is not None:
            hw = np.where(ns >= n_total, 0.0, hw)  # every query judged: no sampling error
        ok = hw < w if strict else hw <= w
        if ok.any():
            return int(ns[int(np.argmax(ok))])
        lo, size = int(ns[-1]) + 1, size * 4
    return None


def queries_to_resolve(sample: ArrayLike, n_total: int | None, delta: float, *,
                       level: float = LEVEL, assurance: float = ASSURANCE_PAIR,
                       kurtosis: float = KURTOSIS_PAIR) -> Need:
    """How many labelled queries would likely resolve a difference between two runs: the
    :func:`queries_needed` for an interval narrower than the observed ``|delta|`` (so that it
    leaves out 0 if the difference holds), from the pair's per-query values so far
    (``sample``: the differences a − b, or their human − LLM parts for PPI).

    Usage: ``queries_to_resolve(d_human - d_llm, n_total=43, delta=0.03).n``
    """
    if not (math.isfinite(delta) and delta != 0):
        x = _values(sample)
        sd = float(np.std(x, ddof=1)) if len(x) >= 2 else None
        now = None if sd is None else float(_hw(sd, len(x), n_total, level))
        return Need(None, len(x), n_total, sd, None, now,
                    "no difference seen, so no number of queries can show one")
    return queries_needed(sample, n_total, abs(delta), level=level, assurance=assurance,
                          kurtosis=kurtosis, strict=True)


def pair_advice(human_diff: ArrayLike, llm_diff: ArrayLike | None, n_total: int | None,
                delta: float) -> Need:
    """How many labelled queries would likely resolve one pair of runs (what ``labeler plan
    --per-pair`` computes, for a ± of ``|delta|``): from the per-query differences a − b of the
    labelled queries under human labels, minus those under LLM labels when given (PPI, with
    ``n_total`` the pair's queries), else alone (the paired t-test; ``n_total`` ``None``).
    ``Need.half_width_now`` is the ± the labelled queries give today.

    Usage: ``pair_advice(h_a - h_b, l_a - l_b, n_total=43, delta=0.02).n``
    """
    h = _values(human_diff)
    x = h if llm_diff is None else h - _values(llm_diff)
    return queries_to_resolve(x, n_total, delta)
