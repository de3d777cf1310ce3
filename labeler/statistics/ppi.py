"""Prediction-powered inference (PPI) for a mean and for the difference of two means.

Humans label a simple random sample of ``n`` of ``N`` queries; the LLM labels cover all ``N``.
``y`` are the human values (e.g. NDCG@10) of the labelled queries, ``yhat`` the LLM values of
the same queries, ``yhat_unlabelled`` the LLM values of the other ``N − n`` queries. With
Δ = Y − Ŷ on the labelled queries:

- ``target="queries"`` (default): the interval is an interval of the mean of Y over these ``N``
  queries, what full human labelling of them would report. Difference estimator (plain PPI,
  λ = 1): θ̂ = mean_N(Ŷ) + mean_n(Δ), unbiased whatever the LLM's bias;
  se = sqrt((1 − n/N) · var_n(Δ) / n) (sample variance, ddof 1, finite-population
  correction), interval θ̂ ± t(1 − α/2, n − 1) · se.
- ``target="population"``: the mean of Y over the population of queries the ``N`` were drawn
  from. θ̂ = mean(Ŷ of the unlabelled) + mean_n(Δ), se² = var(Ŷ unlabelled)/(N − n) +
  var_n(Δ)/n: ``ppi_py``'s estimate and standard error (``lam=1``, its ddof-0 spreads), with
  the t(n − 1) quantile instead of its normal one (which undercovers with few labelled
  queries).
- ``tune=True``: Ŷ weighted by λ (PPI++), from :data:`MIN_TUNE` labelled queries on (below, λ =
  1). The labelled queries are split at random into two folds; each fold's λ is fitted on the
  *other* fold (cov(Y, Ŷ)/var(Ŷ), clipped to [0, 1]; population target: divided by 1 + n/(N − n)
  as in PPI++), so no λ is fitted and applied on the same queries. Queries target: fold j's
  estimate is λ_j · mean_N(Ŷ) plus the mean of the residuals Y − λ_j·Ŷ over all N queries, whose
  part on the other fold is known and whose rest fold j (a random sample of it) estimates; θ̂ is
  the mean of the two folds' estimates — exactly unbiased, and the plain estimator when λ = 1.
  Population target: θ̂ = λ̄ · mean(Ŷ unlabelled) + mean_n(Y − λ_fold·Ŷ). se as above from the
  residuals Y − λ_fold·Ŷ, each centred on its own fold's mean (the two folds' residuals have
  different means, which is no sampling noise); the reported ``lambda`` is the weight of mean(Ŷ)
  (the mean of the two λ, weighted by fold size for the population target).

Known zeros (:func:`ppi_mean_diff`'s ``n_known_zero``): queries whose difference is known to be
0 before any human label (two runs with the same top k there) are not estimated: the estimator
runs over the other, informative, queries and is scaled by their share of all queries
(post-stratification).

A sample never yields a zero-width interval: where the labelled Δ do not vary (and not every
query is labelled) there is no interval (``reason``: no spread among the labelled queries).

The ``p``-value comes from the same estimate, standard error and distribution as the interval,
so ``p < α`` exactly when the interval leaves 0 out (both use t(n − 1)). With ``bounds``
(e.g. ``(0, 1)`` for NDCG, ``(-1, 1)`` for a difference of two) the interval is clipped to
them: the truth is always inside the bounds, so clipping never lowers coverage. With fewer
than :data:`MIN_LABELLED` labelled queries there is no interval, and ``reason`` says why.

Usage::

    from labeler.statistics.ppi import ppi_mean, ppi_mean_diff
    r = ppi_mean(human_ndcg, llm_ndcg_labelled, llm_ndcg_unlabelled, bounds=(0, 1))
    r.estimate, r.ci, r.p
    d = ppi_mean_diff(y_a, y_b, yhat_a, yhat_b, yhat_u_a, yhat_u_b)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeler.errors import ConfigError, InputError

Target = Literal["queries", "population"]
TARGETS: tuple[str, ...] = ("queries", "population")
"""What a PPI interval is an interval of (``--ppi-target``)."""
MIN_LABELLED = 5
"""Fewer human-labelled queries than this: no PPI interval (a reason instead)."""
MIN_TUNE = 10
"""Fewer labelled queries than this: ``tune`` keeps λ = 1 (two folds of fewer than 5 queries
fit λ too noisily: measured, tuned intervals were 1.3× as wide as plain ones at n = 5)."""


def no_spread_reason(n: int) -> str:
    """The reason of a sample whose labelled values do not vary."""
    return f"no spread among the {n} labelled queries"


@dataclass(frozen=True)
class PPIEstimate:
    """One prediction-powered estimate: ``estimate`` with its ``ci`` (two-sided, ``1 − alpha``),
    standard error ``se`` and two-sided ``p`` against 0 (all ``None`` with a ``reason`` when
    there are too few labelled queries), ``lam`` (the weight of the LLM values; 1 = plain PPI,
    the fold-size weighted mean λ when tuned), the sample sizes and the ``target``."""

    estimate: float | None
    ci: tuple[float, float] | None
    se: float | None
    p: float | None
    lam: float | None
    n_labelled: int
    n_unlabelled: int
    target: str
    reason: str | None = None
    df: float | None = None
    """Degrees of freedom of the quantile and the p-value (labelled informative − 1)."""
    n_informative: int | None = None
    """Pairs: queries whose difference is not known in advance (labelled or not)."""
    n_known_zero: int = 0
    """Pairs: queries whose difference is known to be 0 (the two runs' top k are equal)."""

    def to_dict(self) -> dict[str, Any]:
        """``{"estimate", "ci", "se", "n_labelled", "n_unlabelled", "target", "lambda"}``,
        plus ``"n_known_zero"`` (queries known to score 0, not estimated) when there are
        some and ``"reason"`` when there is no interval."""
        out: dict[str, Any] = {
            "estimate": self.estimate, "ci": None if self.ci is None else list(self.ci),
            "se": self.se, "n_labelled": self.n_labelled, "n_unlabelled": self.n_unlabelled,
            "target": self.target, "lambda": self.lam}
        if self.n_known_zero:
            out["n_known_zero"] = self.n_known_zero
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def _vec(values: ArrayLike, what: str) -> NDArray[np.float64]:
    a = np.asarray(values, dtype="float64").reshape(-1)
    if not np.isfinite(a).all():
        raise InputError(f"{what} must be finite numbers (got NaN or infinity)")
    return a


def _check(alpha: float, target: str) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ConfigError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    if target not in TARGETS:
        raise ConfigError(f"unknown PPI target {target!r}; choose one of {', '.join(TARGETS)}")


def quantile(alpha: float, df: float | None) -> float:
    """The two-sided ``1 − alpha`` quantile: Student-t with ``df`` degrees of freedom, or the
    normal one when ``df`` is ``None``."""
    from scipy.special import ndtri, stdtrit

    q = 1 - alpha / 2
    return float(ndtri(q)) if df is None else float(stdtrit(df, q))


def two_sided_p(z: float, df: float | None) -> float:
    """Two-sided p-value of the statistic ``z`` under Student-t(``df``) or the normal."""
    from scipy.special import ndtr, stdtr

    a = -abs(z)
    return float(min(1.0, 2 * (ndtr(a) if df is None else stdtr(df, a))))


def clip_interval(lo: float, hi: float,
                  bounds: tuple[float, float] | None) -> tuple[float, float]:
    """``(lo, hi)`` clipped to ``bounds`` (unchanged when ``bounds`` is ``None``)."""
    if bounds is None:
        return lo, hi
    return min(max(lo, bounds[0]), bounds[1]), max(min(hi, bounds[1]), bounds[0])


def _folds(n: int, seed: int) -> NDArray[np.int64]:
    """Fold 0 or 1 of each of ``n`` labelled queries: a seeded random half each."""
    order = np.random.default_rng(seed).permutation(n)
    fold = np.zeros(n, dtype="int64")
    fold[order[n // 2:]] = 1
    return fold


def _fit_lambda(y: NDArray[np.float64], yhat: NDArray[np.float64], factor: float) -> float:
    """cov(Y, Ŷ) / (factor · var(Ŷ)) clipped to [0, 1]; 0 when Ŷ does not vary."""
    var = float(np.var(yhat, ddof=1)) if len(yhat) > 1 else 0.0
    if not var > 0:
        return 0.0
    cov = float(np.cov(y, yhat, ddof=1)[0, 1])
    return float(np.clip(cov / (factor * var), 0.0, 1.0))


def _no_spread(values: NDArray[np.float64]) -> bool:
    """True where the values do not vary beyond rounding error."""
    return bool(np.ptp(values) <= 1e-12 * max(1.0, float(np.abs(values).max(initial=0.0))))


def _within_fold_var(resid: NDArray[np.float64], folds: NDArray[np.int64]) -> float:
    """The residuals' variance, each centred on its own fold's mean (ddof: one per fold)."""
    dev = np.concatenate([resid[folds == j] - resid[folds == j].mean() for j in (0, 1)
                          if (folds == j).any()])
    k = int(sum((folds == j).any() for j in (0, 1)))
    return float((dev * dev).sum() / max(1, len(resid) - k))


def _cross_fit_estimate(y: NDArray[np.float64], yhat: NDArray[np.float64], mean_hat: float,
                        big_n: int, folds: NDArray[np.int64], lams: NDArray[np.float64]
                        ) -> float:
    """The mean of the two folds' estimates. Fold j's λ_j was fitted on the other fold, whose
    residuals Y − λ_j·Ŷ are known exactly; fold j, a random sample of the queries outside
    the other fold, estimates the residual mean there. Each fold's estimate is therefore
    unbiased for the mean over all queries; at λ = 1 the average is the plain estimator."""
    out = 0.0
    for j in (0, 1):
        r = y - lams[j] * yhat
        other = folds != j
        share = other.sum() / big_n
        out += lams[j] * mean_hat + share * float(r[other].mean()) + (1 - share) * float(
            r[~other].mean())
    return out / 2


def ppi_mean(y: ArrayLike, yhat: ArrayLike, yhat_unlabelled: ArrayLike, *,
             n_total: int | None = None, target: str = "queries", tune: bool = False,
             alpha: float = 0.05, seed: int = 0,
             bounds: tuple[float, float] | None = None, n_known_zero: int = 0) -> PPIEstimate:
    """The prediction-powered estimate of the mean of Y (see the module's docstring).

    ``n_total``: the number of queries the interval is about (``target="queries"``); default
    ``n + len(yhat_unlabelled) + n_known_zero``. ``seed`` draws the folds of ``tune``.
    ``bounds`` clips the interval (the estimate and ``p`` are not clipped). ``n_known_zero``:
    further queries whose Y is known to be 0 (they are not estimated; the estimate over the
    given queries is scaled by their share of all queries).

    Usage: ``ppi_mean(y, yhat, yhat_unlabelled, bounds=(0, 1)).ci``
    """
    _check(alpha, target)
    yv = _vec(y, "human values")
    yh = _vec(yhat, "LLM values of the labelled queries")
    yu = _vec(yhat_unlabelled, "LLM values of the unlabelled queries")
    n, m, z = len(yv), len(yu), int(n_known_zero)
    if len(yh) != n:
        raise InputError(f"PPI needs a human and an LLM value for every labelled query "
                         f"({n} vs {len(yh)})")
    if z < 0:
        raise InputError(f"n_known_zero must be 0 or more, got {n_known_zero!r}")
    big_n = n + m + z if n_total is None else int(n_total)
    if big_n < n + m + z:
        raise InputError(f"n_total ({big_n}) is smaller than the labelled, unlabelled and "
                         f"known-zero queries together ({n + m + z})")
    info = big_n - z  # the queries estimated (informative)
    share = info / big_n if big_n else 0.0
    facts: dict[str, Any] = {"n_informative": info if z else None, "n_known_zero": z}
    if info == 0:  # every query's value is known: 0
        return PPIEstimate(0.0, (0.0, 0.0), 0.0, 1.0, None, n, m, target, None, None, **facts)
    everything = target == "queries" and n == info
    if n < MIN_LABELLED and not everything:
        return PPIEstimate(None, None, None, None, None, n, m, target,
                           f"only {n} human-labelled {'informative ' if z else ''}"
                           f"quer{'y' if n == 1 else 'ies'}", None, **facts)
    if target == "population" and m == 0:
        return PPIEstimate(None, None, None, None, None, n, m, target,
                           "no queries without human labels", None, **facts)
    if tune and n >= MIN_TUNE:
        folds = _folds(n, seed)
        factor = 1.0 if target == "queries" else 1.0 + n / max(m, 1)
        lams = np.array([_fit_lambda(yv[folds != j], yh[folds != j], factor) for j in (0, 1)])
        lam_i = lams[folds]
        # the weight of mean(Ŷ): each fold's λ counts by its size in the population form,
        # by half in the queries form (the mean of the two folds' estimates)
        lam = float(lams.mean()) if target == "queries" else float(lam_i.mean())
    else:
        tune = False
        lam_i = np.full(n, 1.0)
        lam = 1.0
    resid = yv - lam_i * yh
    df: float = max(n - 1, 1)
    if not everything and _no_spread(resid):
        mean_hat = float(np.concatenate([yh, yu]).mean())
        point = (_cross_fit_estimate(yv, yh, mean_hat, n + m, folds, lams) if tune
                 else mean_hat + float(resid.mean()))
        return PPIEstimate(share * point, None, None, None, lam, n, m, target,
                           no_spread_reason(n), df, **facts)
    var = _within_fold_var(resid, folds) if tune else float(np.var(resid, ddof=1)) if n > 1 \
        else 0.0
    if target == "queries":
        mean_hat = float(np.concatenate([yh, yu]).mean())
        if tune:
            estimate = _cross_fit_estimate(yv, yh, mean_hat, n + m, folds, lams)
        else:
            estimate = mean_hat + float(resid.mean())
        se = math.sqrt(max(0.0, 1 - n / info) * var / n)
        estimate, se = share * estimate, share * se
    else:
        ddof0 = var * (n - (2 if tune else 1)) / n
        estimate = lam * float(yu.mean()) + float(resid.mean())
        se = math.sqrt(lam * lam * float(np.var(yu)) / m + ddof0 / n)
        if z:  # the informative share is itself estimated for the population (delta method)
            se = math.sqrt(share * share * se * se + estimate * estimate
                           * share * (1 - share) / big_n)
            estimate = share * estimate
    half = quantile(alpha, df) * se
    if se > 0:
        p = two_sided_p(estimate / se, df)
    else:
        p = 1.0 if estimate == 0 else 0.0
    ci = clip_interval(estimate - half, estimate + half, bounds)
    return PPIEstimate(estimate, ci, se, p, lam, n, m, target, None, df, **facts)


def ppi_mean_diff(y_a: ArrayLike, y_b: ArrayLike, yhat_a: ArrayLike, yhat_b: ArrayLike,
                  yhat_unlabelled_a: ArrayLike, yhat_unlabelled_b: ArrayLike, *,
                  n_total: int | None = None, target: str = "queries", tune: bool = False,
                  alpha: float = 0.05, seed: int = 0,
                  bounds: tuple[float, float] | None = None,
                  n_known_zero: int = 0) -> PPIEstimate:
    """The prediction-powered estimate of mean(Y_a − Y_b): :func:`ppi_mean` on the per-query
    differences a − b (the same queries, in the same order, for both runs). The values are
    those of the informative queries; ``n_known_zero`` more queries have a difference known
    to be 0 (the two runs' top k are the same there) and are not estimated.

    Usage: ``ppi_mean_diff(y_a, y_b, yhat_a, yhat_b, yu_a, yu_b, bounds=(-1, 1)).p``
    """
    def diff(a: ArrayLike, b: ArrayLike, what: str) -> NDArray[np.float64]:
        x, z = _vec(a, what), _vec(b, what)
        if len(x) != len(z):
            raise InputError(f"{what}: run a has {len(x)} values, run b {len(z)}")
        return x - z

    return ppi_mean(diff(y_a, y_b, "human values"),
                    diff(yhat_a, yhat_b, "LLM values of the labelled queries"),
                    diff(yhat_unlabelled_a, yhat_unlabelled_b,
                         "LLM values of the unlabelled queries"),
                    n_total=n_total, target=target, tune=tune, alpha=alpha, seed=seed,
                    bounds=bounds, n_known_zero=n_known_zero)


@dataclass(frozen=True)
class PairFamily:
    """PPI pair estimates with multiplicity control: per pair ``p_adjusted`` (Holm over the
    family), ``ci_simultaneous`` (Bonferroni, level ``1 − alpha/m`` each for ``m`` pairs) and
    ``verdict`` (``a-better``, ``b-better`` or ``unresolved``, from ``p_adjusted``)."""

    estimates: tuple[PPIEstimate, ...]
    p_adjusted: tuple[float | None, ...]
    ci_simultaneous: tuple[tuple[float, float] | None, ...]
    verdicts: tuple[str, ...]

    def to_dicts(self) -> list[dict[str, Any] | None]:
        """Each pair's ``{"delta", "ci", "ci_simultaneous", "p", "p_adjusted", "verdict"}``
        (``None`` plus a reason where there is no estimate)."""
        out: list[dict[str, Any] | None] = []
        for e, q, cs, v in zip(self.estimates, self.p_adjusted, self.ci_simultaneous,
                               self.verdicts):
            item: dict[str, Any] = {
                "delta": e.estimate, "ci": None if e.ci is None else list(e.ci),
                "ci_simultaneous": None if cs is None else list(cs), "p": e.p,
                "p_adjusted": q, "verdict": v}
            if e.n_informative is not None:
                item["n_informative"] = e.n_informative
                item["n_known_zero"] = e.n_known_zero
            if e.reason is not None:
                item["reason"] = e.reason
            out.append(item)
        return out


def pair_family(estimates: list[PPIEstimate], *, alpha: float = 0.05,
                interval_alpha: float = 0.05,
                bounds: tuple[float, float] | None = (-1.0, 1.0)) -> PairFamily:
    """Holm-adjusted p-values, Bonferroni simultaneous intervals and verdicts of a family of
    PPI pair estimates (pairs without an estimate are left out of the family). A verdict is
    ``a-better``/``b-better`` where ``p_adjusted < alpha``; the ``m`` simultaneous intervals
    are each at level ``1 − interval_alpha/m``, so all of them hold together at least
    ``1 − interval_alpha`` of the time.

    Usage: ``pair_family([ppi_mean_diff(y_a, y_b, yhat_a, yhat_b, yu_a, yu_b)]).verdicts``
    """
    from labeler.statistics.pairs import holm

    ok = [e.p is not None for e in estimates]
    m = sum(ok)
    adjusted = holm([e.p for e in estimates])
    sim: list[tuple[float, float] | None] = []
    verdicts: list[str] = []
    for e, q in zip(estimates, adjusted):
        if e.p is None or e.se is None or e.estimate is None:
            sim.append(None)
            verdicts.append("unresolved")
            continue
        half = quantile(interval_alpha / m, e.df) * e.se
        sim.append(clip_interval(e.estimate - half, e.estimate + half, bounds))
        if q is not None and q < alpha:
            verdicts.append("a-better" if e.estimate > 0 else "b-better")
        else:
            verdicts.append("unresolved")
    return PairFamily(tuple(estimates), tuple(adjusted), tuple(sim), tuple(verdicts))
