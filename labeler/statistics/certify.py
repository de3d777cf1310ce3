"""Confidence sequences for a mean over a finite set of queries labelled in random order.

People label the queries of a design one after another, in the design's random order (a
sample drawn without replacement), and look at the result as often as they like. A
confidence sequence (CS) is a sequence of intervals, one after every labelled query, that
holds its target at *every* look at once with probability at least ``1 − alpha``
(time-uniform), so stopping when it looks good keeps the guarantee.

The target is the mean of the human values Y over all ``N`` queries (a run's NDCG@k, or the
difference of two runs' NDCG@k). The LLM values Ŷ are known for all ``N``. Every query has
bounds known before any human label: ``lower_i ≤ Y_i ≤ upper_i`` (``[0, 1]`` for a run's
NDCG; for a pair what the two top-k lists allow). A query whose bounds are equal is a known
value (e.g. a known zero: both runs return the same top k) and is not estimated: the CS runs
over the informative queries and is scaled by their share of the ``N``.

Construction (Waudby-Smith & Ramdas, "Estimating means of bounded random variables by
betting", JRSS-B 2024, §6: sampling without replacement). For a candidate mean ``m`` of Y
over the ``N'`` informative queries, the t-th draw has conditional mean
``μ_t(m) = (N'·m − S_{t−1}) / (N' − t + 1)`` (``S`` the sum so far). Two bet streams:

- on the human values alone, ``x_t = Y_t`` with mean ``m``;
- on the PPI residuals, ``x_t = Y_t − Ŷ_t`` with mean ``m − mean(Ŷ)`` (the LLM mean over the
  ``N'`` is known, so the CS of the residual mean is a CS of ``m``: prediction-powered).

Each stream's capital ``K^±_t(m) = Π_s (1 ± λ^±_s (x_s − μ_s(m)))`` uses predictable plug-in
empirical-Bernstein bets ``λ_s`` (variance-adaptive: ``confseq``'s ``lambda_predmix_eb`` on the
values rescaled to [0, 1]), truncated so that every factor stays ≥ ``1 − truncation`` whatever
value the next query can take: the range of the next value is the range of the bounds of the
queries not yet labelled (known before the draw). Under the null each capital is a
non-negative martingale; the mixture ``K^± = ½(K^±_human + K^±_residual)`` is one too, and is
monotone in ``m`` (``K^+`` falls, ``K^−`` rises), so the set
``{m: K^+_t(m) < 2/alpha and K^−_t(m) < 2/alpha}`` is an interval whose ends are found by
bisection (Ville's inequality: it misses ``m`` at some t with probability ≤ ``alpha``). It is
intersected with the logical bounds (what the labelled values and the bounds of the rest
allow; with every query labelled that is the exact value) and with the earlier intervals
(running intersection).

Usage::

    from labeler.statistics.certify import mean_cs
    cs = mean_cs(human, llm, lower, upper, alpha=0.05)   # the queries in the design's order
    cs.lo[-1], cs.hi[-1]                                   # the interval after the last label
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeler.errors import ConfigError, InputError

TRUNCATION = 0.9
"""Every betting factor stays at least ``1 − TRUNCATION`` (``confseq``'s ``trunc_scale``). Any value
below 1 is valid; on DL 2019, 0.9 certified the best run of a clear-winner board about 5
queries sooner than confseq's 0.5."""
STREAMS: tuple[str, ...] = ("human", "residual")
"""The bet streams mixed: the human values alone, and the PPI residuals human − LLM."""
_TOL = 1e-9
_ITER = 60


@dataclass(frozen=True)
class MeanCS:
    """A confidence sequence of a mean over ``n_total`` queries: ``lo[t]``, ``hi[t]`` after
    ``t`` labelled queries (``t = 0 … n``), the prediction-powered point estimate ``estimate[t]``
    (mean LLM value plus mean residual so far; the exact value at ``t = n_total``),
    ``n_known`` queries whose value is known without a label."""

    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    estimate: NDArray[np.float64]
    n_total: int
    n_known: int

    @property
    def n(self) -> int:
        """How many queries are labelled (the last look)."""
        return len(self.lo) - 1


def _vec(values: ArrayLike, what: str) -> NDArray[np.float64]:
    a = np.asarray(values, dtype="float64")
    if not np.isfinite(a).all():
        raise InputError(f"{what} must be finite numbers (got NaN or infinity)")
    return a


def predmix_bets(x: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
    """Predictable plug-in empirical-Bernstein bets for values ``x`` in [0, 1] (last axis is
    time): ``λ_t = sqrt(2·log(1/alpha) / (t·log(1 + t)·σ̂²_{t−1}))``, σ̂² the regularised
    running variance (prior mean ½, variance ¼, one pseudo-observation) — the bets of
    ``confseq.betting_strategies.lambda_predmix_eb``.

    Usage: ``predmix_bets(np.array([0.2, 0.9, 0.4]), alpha=0.025)``
    """
    t = np.arange(1, x.shape[-1] + 1, dtype="float64")
    mu = np.minimum((0.5 + np.cumsum(x, axis=-1)) / (t + 1), 1.0)
    sig = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    prev = np.concatenate([np.full((*x.shape[:-1], 1), 0.25), sig[..., :-1]], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.sqrt(2 * math.log(1 / alpha) / (t * np.log1p(t) * prev))
    return np.nan_to_num(lam, nan=0.0, posinf=0.0)


@dataclass(frozen=True)
class _Stream:
    """One bet stream of a batch of trajectories (rows), informative queries only, laid out
    over the pairs (look t, draw s ≤ t) in ``_Tril`` order: the value of draw s, the sum
    before it, the range of the values still to come before it (``low``, ``high``), its bet,
    and the shift between the stream's mean and the target mean (mean of x = m − offset)."""

    x: NDArray[np.float64]
    prev: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    lam: NDArray[np.float64]
    offset: NDArray[np.float64]


@dataclass(frozen=True)
class _Tril:
    """The pairs (t, s ≤ t) of looks and draws, by look: ``rows`` (t − 1), ``cols`` (s − 1),
    ``starts`` (where each look's run begins) and ``denom`` (N − s + 1 of each draw)."""

    rows: NDArray[np.int64]
    cols: NDArray[np.int64]
    starts: NDArray[np.int64]
    denom: NDArray[np.float64]


def _tril(n: int, big_n: int) -> _Tril:
    rows, cols = np.tril_indices(n)
    starts = np.concatenate([[0], np.cumsum(np.arange(1, n))]).astype("int64")
    return _Tril(rows.astype("int64"), cols.astype("int64"), starts,
                 (big_n - cols).astype("float64"))


def _stream(x: NDArray[np.float64], lower: NDArray[np.float64], upper: NDArray[np.float64],
            offset: NDArray[np.float64], n: int, alpha: float, tri: _Tril) -> _Stream:
    # range of the queries not yet drawn, before each draw s = 1..n: suffix min / max
    low = np.flip(np.minimum.accumulate(np.flip(lower, -1), -1), -1)[:, :n]
    high = np.flip(np.maximum.accumulate(np.flip(upper, -1), -1), -1)[:, :n]
    g_lo, g_hi = lower.min(axis=1, keepdims=True), upper.max(axis=1, keepdims=True)
    span = np.maximum(g_hi - g_lo, 1e-300)
    z = np.clip((x[:, :n] - g_lo) / span, 0.0, 1.0)
    lam = predmix_bets(z, alpha) / span
    b = x.shape[0]
    prev = np.concatenate([np.zeros((b, 1)), np.cumsum(x[:, :n], axis=1)[:, :-1]], axis=1)
    c = tri.cols
    return _Stream(x[:, c], prev[:, c], low[:, c], high[:, c], lam[:, c], offset)


def _log_capital(s: _Stream, m: NDArray[np.float64], big_n: int, sign: int,
                 truncation: float, tri: _Tril) -> NDArray[np.float64]:
    """log K^±_t(m_t) for every trajectory and look t (``m`` is (B, T): one candidate per
    look); the factors of the draws s ≤ t evaluated at m_t."""
    mu = (big_n * (m - s.offset)[:, tri.rows] - s.prev) / tri.denom
    with np.errstate(divide="ignore"):
        if sign > 0:
            cap = truncation / np.maximum(mu - s.low, 0.0)
        else:
            cap = truncation / np.maximum(s.high - mu, 0.0)
    step = sign * np.minimum(s.lam, cap) * (s.x - mu)
    logf = np.log1p(np.maximum(step, -truncation))
    return np.add.reduceat(logf, tri.starts, axis=1)


def _mixture(streams: list[_Stream], m: NDArray[np.float64], big_n: int, sign: int,
             truncation: float, tri: _Tril) -> NDArray[np.float64]:
    logs = [_log_capital(s, m, big_n, sign, truncation, tri) for s in streams]
    out = logs[0]
    for extra in logs[1:]:
        out = np.logaddexp(out, extra)
    return out - math.log(len(logs))


def batch_cs(y: ArrayLike, yhat: ArrayLike, lower: ArrayLike, upper: ArrayLike, *, n: int,
             alpha: float = 0.05, truncation: float = TRUNCATION,
             streams: tuple[str, ...] = STREAMS, running: bool = True
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The confidence sequence of the mean of ``y`` over the ``N`` columns, for a batch of
    trajectories (rows: the ``N`` informative queries in the order drawn), after 0…``n``
    draws: ``(lo, hi)``, each of shape (B, n + 1). ``y`` is only read in its first ``n``
    columns; ``yhat``, ``lower`` and ``upper`` are known for all ``N`` (``lower < upper``).

    Usage: ``lo, hi = batch_cs(y[None], yhat[None], lo_b[None], hi_b[None], n=10)``
    """
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    if not 0 < truncation < 1:
        raise ConfigError(f"truncation must be strictly between 0 and 1, got {truncation!r}")
    if not streams or set(streams) - set(STREAMS):
        raise ConfigError(f"streams must be some of {', '.join(STREAMS)}, got {streams!r}")
    yv, yh = np.atleast_2d(_vec(y, "human values")), np.atleast_2d(_vec(yhat, "LLM values"))
    lw, up = np.atleast_2d(_vec(lower, "lower bounds")), np.atleast_2d(_vec(upper, "upper bounds"))
    b, big_n = lw.shape
    if not 0 <= n <= big_n:
        raise ConfigError(f"n must be between 0 and {big_n}, got {n}")
    if yh.shape != lw.shape or up.shape != lw.shape or yv.shape[0] != b or yv.shape[1] < n:
        raise InputError("the human values, LLM values and bounds disagree in shape")
    if (up < lw).any():
        raise InputError("a lower bound is above its upper bound")
    seen = yv[:, :n]
    if ((seen < lw[:, :n] - 1e-9) | (seen > up[:, :n] + 1e-9)).any():
        raise InputError("a human value lies outside the bounds known for its query")
    seen = np.clip(seen, lw[:, :n], up[:, :n])
    full_y = np.concatenate([seen, np.zeros((b, big_n - n))], axis=1)
    # logical bounds: the values seen plus the bounds of the rest
    cum = np.concatenate([np.zeros((b, 1)), np.cumsum(seen, axis=1)], axis=1)
    rest_lo = np.concatenate([np.cumsum(lw[:, ::-1], axis=1)[:, ::-1], np.zeros((b, 1))], 1)
    rest_hi = np.concatenate([np.cumsum(up[:, ::-1], axis=1)[:, ::-1], np.zeros((b, 1))], 1)
    log_lo = (cum + rest_lo[:, :n + 1]) / big_n
    log_hi = (cum + rest_hi[:, :n + 1]) / big_n
    lo, hi = log_lo.copy(), log_hi.copy()
    if n > 0:
        side = alpha / 2
        tri = _tril(n, big_n)
        built: list[_Stream] = []
        if "human" in streams:
            built.append(_stream(full_y, lw, up, np.zeros((b, 1)), n, side, tri))
        if "residual" in streams:
            mean_hat = yh.mean(axis=1, keepdims=True)
            built.append(_stream(full_y - yh, lw - yh, up - yh, mean_hat, n, side, tri))
        thr = math.log(2 / alpha)
        a, z = log_lo[:, 1:], log_hi[:, 1:]

        def g(m: NDArray[np.float64], sign: int) -> NDArray[np.float64]:
            return _mixture(built, m, big_n, sign, truncation, tri) - thr

        lo[:, 1:] = _root(lambda m: g(m, +1), a, z, rejected_left=True)
        hi[:, 1:] = _root(lambda m: g(m, -1), a, z, rejected_left=False)
    lo, hi = np.maximum(lo, log_lo), np.minimum(hi, log_hi)
    if running:
        lo, hi = np.maximum.accumulate(lo, axis=1), np.minimum.accumulate(hi, axis=1)
    if n == big_n:  # every query labelled: the exact value
        exact = seen.mean(axis=1)
        lo[:, -1] = hi[:, -1] = exact
    return lo, np.maximum(hi, lo)


def _root(g: Callable[[NDArray[np.float64]], NDArray[np.float64]], a: NDArray[np.float64],
          z: NDArray[np.float64], *, rejected_left: bool) -> NDArray[np.float64]:
    """The end of the accepted set ``{m in [a, z]: g(m) < 0}`` for a monotone ``g`` (log
    capital minus the threshold): with ``rejected_left`` the lower end (g falls in m), else
    the upper one (g rises). A bracketing root search (Illinois regula falsi) that returns
    the bracket's rejected side, so the interval errs toward wide; ``a`` when all of
    ``[a, z]`` is accepted on that side, the far end when none is."""
    ga, gz = g(a), g(z)
    if not rejected_left:   # mirror: search over −m so that g falls
        out = -_root(lambda m: g(-m), -z, -a, rejected_left=True)
        return out
    edge_ok, none_ok = ga < 0, gz >= 0
    left, right = a.copy(), z.copy()        # left rejected (g ≥ 0), right accepted (g < 0)
    gl, gr = np.where(edge_ok, -1.0, ga), np.where(none_ok, -1.0, gz)
    active = ~(edge_ok | none_ok)
    side = np.zeros(a.shape, dtype="int64")
    for i in range(_ITER):
        active &= (right - left) > _TOL
        if not active.any():
            break
        with np.errstate(invalid="ignore", divide="ignore"):
            secant = right - gr * (right - left) / (gr - gl)
        mid = (left + right) / 2
        guess = secant if i % 4 != 3 else mid
        guess = np.where(np.isfinite(guess) & (guess > left) & (guess < right), guess, mid)
        guess = np.where(active, guess, left)
        gm = g(guess)
        rej = (gm >= 0) & active
        acc = (gm < 0) & active
        # Illinois: halve the stale end's value when the same end moves twice
        gl = np.where(acc & (side == 1), gl / 2, gl)
        gr = np.where(rej & (side == -1), gr / 2, gr)
        left, gl = np.where(rej, guess, left), np.where(rej, gm, gl)
        right, gr = np.where(acc, guess, right), np.where(acc, gm, gr)
        side = np.where(rej, -1, np.where(acc, 1, side))
    out = np.where(edge_ok, a, left)
    return np.where(none_ok, z, out)


def mean_cs(human: ArrayLike, llm: ArrayLike, lower: ArrayLike, upper: ArrayLike, *,
            alpha: float = 0.05, truncation: float = TRUNCATION,
            streams: tuple[str, ...] = STREAMS) -> MeanCS:
    """The (1 − ``alpha``) confidence sequence of the mean of the human values over all
    ``N`` queries, the queries given in the design's order: ``human`` for the first ``n``
    (labelled), ``llm``, ``lower`` and ``upper`` for all ``N``. Queries with ``lower ==
    upper`` are known values (not estimated; their human value, if given, must equal it).

    Usage: ``mean_cs([0.4, 0.7], [0.5, 0.6, 0.3], [0, 0, 0], [1, 1, 1]).hi``
    """
    y = _vec(human, "human values").reshape(-1)
    yh = _vec(llm, "LLM values").reshape(-1)
    lw, up = _vec(lower, "lower bounds").reshape(-1), _vec(upper, "upper bounds").reshape(-1)
    big_n, n = len(yh), len(y)
    if len(lw) != big_n or len(up) != big_n or n > big_n:
        raise InputError(f"{n} human values, {big_n} LLM values, {len(lw)} lower and "
                         f"{len(up)} upper bounds: give the LLM value and bounds of every "
                         f"query and the human values of a front of them")
    if big_n == 0:
        raise InputError("no queries")
    known = lw == up
    if (np.abs(y - lw[:n])[known[:n]] > 1e-9).any():
        raise InputError("a human value differs from the value known for its query")
    info = ~known
    big_ni = int(info.sum())
    known_sum = float(lw[known].sum())
    # looks: after each of the n labels; informative labels so far at each look
    t_info = np.concatenate([[0], np.cumsum(info[:n])]).astype(int)
    n_info = int(t_info[-1])
    if big_ni == 0:
        value = known_sum / big_n
        flat = np.full(n + 1, value)
        return MeanCS(flat, flat.copy(), flat.copy(), big_n, big_n)
    yi, yhi = y[info[:n]], yh[info]
    lo_i, hi_i = batch_cs(yi[None], yhi[None], lw[info][None], up[info][None], n=n_info,
                          alpha=alpha, truncation=truncation, streams=streams)
    share = big_ni / big_n
    lo = known_sum / big_n + share * lo_i[0][t_info]
    hi = known_sum / big_n + share * hi_i[0][t_info]
    resid = np.concatenate([[0.0], np.cumsum(yi - yhi[:n_info])])
    steps = np.arange(n_info + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_resid = np.where(steps > 0, resid / np.maximum(steps, 1), 0.0)
    est_i = float(yhi.mean()) + mean_resid
    estimate = known_sum / big_n + share * est_i[t_info]
    if n_info == big_ni:
        exact = (known_sum + float(yi.sum())) / big_n
        last = t_info == n_info
        lo[last] = hi[last] = estimate[last] = exact
    estimate = np.clip(estimate, lo, hi)
    return MeanCS(lo, hi, estimate, big_n, big_n - big_ni)
