"""How many human-labelled queries does an interval of at most ±W need?

The intervals planned for are those of a mean over the N queries of a run, from a simple
random sample of n of them judged by hand, with the finite-population correction and a t
quantile::

    half-width = t(0.975, n − 1) · sqrt((1 − n/N) · s² / n)

where s² is the sample variance of the per-query values the interval averages: Δ = human −
LLM NDCG for the prediction-powered (difference) estimator, the human NDCG itself for the
human-only interval, and the same of the differences a − b for a pair of runs. The spread s²
of the queries judged so far (at least :data:`MIN_LABELLED`) stands in for the spread of the
sample still to be drawn, with a margin for how little a few queries say about it (a
two-stage design in the spirit of Stein's): the planned variance is s² times the
:data:`ASSURANCE` quantile of F(n − 1, n₀ − 1), the law of the ratio of a fresh sample's
variance to the pilot's under normal data, so that the number named reaches ±W with about
that chance; :data:`ASSURANCE` is set above 80% so that real, skewed NDCG differences reach
±W in at least 80% of draws (checked by ``benchmarks/bench_plan.py``).

Pure numpy/scipy. Usage::

    from labeler.statistics.planning import queries_needed, half_width
    need = queries_needed(human_minus_llm, n_total=43, half_width=0.05)
    need.n, need.reason                      # 21, None
    half_width(sd=0.12, n=21, n_total=43)    # the interval's ±, for a spread of 0.12
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

LEVEL = 0.95
"""The level of the intervals planned for."""
ASSURANCE = 0.9
"""The F quantile that sets the margin on the pilot's variance (see the module's text)."""
TARGET = 0.8
"""The share of draws of the number named that should reach ±W (what :data:`ASSURANCE` was
tuned for)."""
MIN_LABELLED = 5
"""Fewer labelled queries than this say too little about the spread to plan from."""


@dataclass(frozen=True)
class Need:
    """How many labelled queries (in all, the ones so far included) an interval needs.

    ``n`` is ``None`` where no number can be given; ``reason`` then says why. ``now`` is the
    number labelled so far, ``n_total`` the queries there are (``None``: a population too
    large to correct for), ``sd`` the spread of the values so far, ``sd_planned`` the spread
    planned for (with the margin), ``half_width_now`` the ± the sample so far gives.
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


def half_width(sd: float, n: int | ArrayLike, n_total: int | None = None,
               level: float = LEVEL) -> Any:
    """The ± of a t interval of a mean over a simple random sample of ``n`` of ``n_total``
    queries whose values have standard deviation ``sd``: ``t(q, n − 1) · sd ·
    sqrt((1 − n/N)/n)`` with q = (1 + level)/2; no correction when ``n_total`` is ``None``.
    ``n`` may be an array; NaN below two queries.

    Usage: ``half_width(0.12, 21, 43)`` → 0.039...
    """
    from scipy.special import stdtrit

    _check(level, n_total)
    k = np.asarray(n, dtype="float64")
    fpc = 1.0 if n_total is None else np.clip(1.0 - k / n_total, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = stdtrit(np.maximum(k - 1, 1), (1 + level) / 2)
        out = np.where(k >= 2, t * sd * np.sqrt(fpc / k), np.nan)
    return float(out) if out.ndim == 0 else out


def effective_df(m: Any, kurtosis: float = 0.0) -> Any:
    """The degrees of freedom of a chi-square law with the spread of the sample variance of
    ``m`` values of excess ``kurtosis``: 2 / (2/(m − 1) + κ/m); m − 1 for normal data."""
    k = np.asarray(m, dtype="float64")
    return 2.0 / (2.0 / np.maximum(k - 1, 1) + max(float(kurtosis), 0.0) / k)


def margin(n: int | ArrayLike, n_pilot: int, assurance: float = ASSURANCE,
           kurtosis: float = 0.0) -> Any:
    """The factor on the pilot's variance planned for at a final sample of ``n``: the
    ``assurance`` quantile of F(n − 1, n_pilot − 1) (a fresh sample's variance over the
    pilot's, normal data). 1 with ``assurance`` 0.5-ish is no margin; ``assurance=None``-like
    callers pass 0.5 for the median.

    Usage: ``margin(20, 10)`` → about 2.0
    """
    from scipy.special import fdtri

    if not 0 < assurance < 1:
        raise ValueError(f"the assurance must be between 0 and 1, got {assurance!r}")
    if n_pilot < 2:
        raise ValueError(f"the pilot needs at least 2 queries, got {n_pilot}")
    k = np.asarray(n, dtype="float64")
    out = fdtri(effective_df(k, kurtosis), effective_df(n_pilot, kurtosis), assurance)
    return float(out) if np.ndim(out) == 0 else out


def queries_needed(sample: ArrayLike, n_total: int | None, half_width: float, *,
                   level: float = LEVEL, assurance: float = ASSURANCE,
                   strict: bool = False, max_n: int = 1_000_000,
                   kurtosis: float | None = 0.0) -> Need:
    """The smallest number n of labelled queries (in all) whose interval is at most
    ± ``half_width`` (below it with ``strict``), planning for the spread of ``sample`` (the
    per-query values labelled so far: Δ = human − LLM for PPI, the human values for the
    human-only interval) times :func:`margin`. ``n_total`` is the run's number of queries
    (``None``: no finite-population correction; then at most ``max_n``).

    ``Need.n`` is ``None`` (with a reason) when fewer than :data:`MIN_LABELLED` values are
    given or when not even all queries would do. With a finite ``n_total``, judging every
    query leaves no sampling error, so n ≤ ``n_total`` always.

    Usage: ``queries_needed(y - yhat, n_total=43, half_width=0.05).n``
    """
    _check(level, n_total)
    if not half_width > 0:
        raise ValueError(f"the half-width must be positive, got {half_width!r}")
    w = float(half_width)
    x = _values(sample)
    n0 = len(x)
    if n0 < MIN_LABELLED:
        return Need(None, n0, n_total, None, None, None,
                    f"only {n0} human-labelled quer{'y' if n0 == 1 else 'ies'} (at least "
                    f"{MIN_LABELLED} are needed to plan from)")
    if n_total is not None and n0 > n_total:
        raise ValueError(f"{n0} labelled values but only {n_total} queries")
    sd = float(np.std(x, ddof=1))
    now = half_width_fn(sd, n0, n_total, level)
    if n_total is not None and n0 == n_total:
        return Need(n0, n0, n_total, sd, sd, now, None)
    top = n_total if n_total is not None else max_n
    kurt = _kurtosis(x, kurtosis)
    n = _search(sd, n0, n_total, w, level, assurance, strict, top, kurt)
    if n is None:
        return Need(None, n0, n_total, sd, None, now,
                    f"even {top:,} labelled queries would not reach ±{w:g}")
    planned = sd * math.sqrt(float(margin(n, n0, assurance, kurt))) if n < (n_total or math.inf) \
        else sd
    return Need(n, n0, n_total, sd, planned, now, None)


half_width_fn = half_width


def _search(sd: float, n0: int, n_total: int | None, w: float, level: float,
            assurance: float, strict: bool, top: int, kurt: float) -> int | None:
    """The smallest n in [2, top] whose planned half-width reaches ``w`` (every n at once,
    in growing blocks)."""
    lo = 2
    size = 256
    while lo <= top:
        hi = min(top, lo + size - 1)
        ns = np.arange(lo, hi + 1, dtype="float64")
        with np.errstate(invalid="ignore"):
            hw = half_width_fn(sd, ns, n_total, level) * np.sqrt(margin(ns, n0, assurance, kurt))
        if n_total is not None:
            hw = np.where(ns >= n_total, 0.0, hw)
        ok = hw < w if strict else hw <= w
        if ok.any():
            return int(ns[int(np.argmax(ok))])
        lo, size = hi + 1, size * 4
    return None


def queries_to_resolve(sample: ArrayLike, n_total: int | None, delta: float, *,
                       level: float = LEVEL, assurance: float = ASSURANCE) -> Need:
    """How many labelled queries would likely resolve a difference between two runs: the
    :func:`queries_needed` for an interval narrower than the observed ``|delta|`` (so that
    it leaves out 0 if the difference stays the same), from the per-query values of the pair
    so far (``sample``: the differences a − b, or their human − LLM parts for PPI).

    Usage: ``queries_to_resolve(d_human - d_llm, n_total=43, delta=0.03)``
    """
    if not (math.isfinite(delta) and delta != 0):
        x = _values(sample)
        sd = float(np.std(x, ddof=1)) if len(x) >= 2 else None
        now = half_width_fn(sd, len(x), n_total, level) if sd is not None else None
        return Need(None, len(x), n_total, sd, None, now,
                    "no difference observed: no sample size can show one")
    return queries_needed(sample, n_total, abs(delta), level=level, assurance=assurance,
                          strict=True)


KURTOSIS_FLOOR = 0.0


def _kurtosis(x: NDArray[np.float64], kurtosis: float | None) -> float:
    if kurtosis is not None:
        return float(kurtosis)
    from scipy.stats import kurtosis as g2

    with np.errstate(all="ignore"):
        k = float(g2(x, bias=False)) if np.ptp(x) > 0 else 0.0
    return max(KURTOSIS_FLOOR, k if np.isfinite(k) else 0.0)
