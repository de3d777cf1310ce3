"""The without-replacement betting confidence sequence, pinned on populations small enough to
enumerate every order of drawing, and against confseq (the method's authors' code)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from labeler.errors import InputError
from labeler.statistics.certify import batch_cs, mean_cs, predmix_bets


def _orders(counts: list[int]) -> Iterator[tuple[int, ...]]:
    """Every distinct sequence of a multiset (type i appears counts[i] times); each is one
    equally likely class of orders of the population."""
    total = sum(counts)
    if total == 0:
        yield ()
        return
    for i, c in enumerate(counts):
        if c:
            counts[i] -= 1
            for rest in _orders(counts):
                yield (i, *rest)
            counts[i] += 1


# a 10-query population of four kinds of query: (human value, LLM value, lower, upper);
# pair-like: values are differences of two runs' NDCG with per-query bounds, one known zero
KINDS = np.array([[0.30, 0.10, -0.2, 1.0],
                  [-0.10, 0.05, -1.0, 0.4],
                  [0.55, 0.60, 0.0, 1.0],
                  [0.00, 0.00, 0.0, 0.0]])
COUNTS = [5, 3, 1, 1]


def _population_orders() -> np.ndarray:
    seqs = np.array(list(_orders(list(COUNTS))))
    assert len(seqs) == math.factorial(10) // (120 * 6)    # 5,040 classes of orders
    return seqs


def _coverage(alpha: float, truncation: float = 0.5) -> tuple[float, np.ndarray, np.ndarray]:
    seqs = _population_orders()
    pop = KINDS[seqs]                                            # (orders, 10, 4)
    truth = float((KINDS[:, 0] * COUNTS).sum() / 10)
    info = KINDS[:, 2] < KINDS[:, 3]
    # the known zero is exact: the sequence runs over the 9 informative queries
    keep = info[seqs]
    inf_pop = pop[keep].reshape(len(seqs), 9, 4)
    lo, hi = batch_cs(inf_pop[..., 0], inf_pop[..., 1], inf_pop[..., 2], inf_pop[..., 3],
                      n=9, alpha=alpha, truncation=truncation)
    lo, hi = lo * 0.9, hi * 0.9                                  # share of informative queries
    held = ((lo[:, 1:] <= truth + 1e-12) & (truth - 1e-12 <= hi[:, 1:])).all(axis=1)
    return float(held.mean()), lo, hi


@pytest.mark.parametrize(("alpha", "truncation"), [(0.05, 0.5), (0.5, 0.5), (0.05, 0.9),
                                                   (0.5, 0.9)])
def test_covers_at_every_look_in_at_least_1_minus_alpha_of_all_orders(
        alpha: float, truncation: float) -> None:
    covered, lo, hi = _coverage(alpha, truncation)
    assert covered >= 1 - alpha
    truth = float((KINDS[:, 0] * COUNTS).sum() / 10)
    # all labelled: the exact value in every order
    assert np.allclose(lo[:, -1], truth, atol=1e-12) and np.allclose(hi[:, -1], truth, atol=1e-12)
    # not vacuous: the sequences narrow well before the end
    assert float(np.median(hi[:, 6] - lo[:, 6])) < 0.6


def test_the_enumeration_sees_misses_where_betting_is_bold() -> None:
    # values at their bounds: the bets are at their boldest and some orders do miss, never
    # more than alpha of them
    kinds = np.array([[1.0, 0.9, 0.0, 1.0], [0.0, 0.1, 0.0, 1.0], [0.5, 0.5, 0.0, 1.0]])
    counts = [5, 4, 1]
    seqs = np.array(list(_orders(list(counts))))
    pop = kinds[seqs]
    truth = float((kinds[:, 0] * counts).sum() / 10)
    for alpha, truncation in ((0.5, 0.5), (0.9, 0.5), (0.5, 0.9), (0.9, 0.9)):
        lo, hi = batch_cs(pop[..., 0], pop[..., 1], pop[..., 2], pop[..., 3], n=10,
                          alpha=alpha, truncation=truncation)
        held = ((lo[:, 1:] <= truth + 1e-12) & (truth - 1e-12 <= hi[:, 1:])).all(axis=1)
        assert 1 - alpha <= held.mean() < 1.0


def test_with_every_query_labelled_the_sequence_is_the_exact_value() -> None:
    rng = np.random.default_rng(3)
    y = rng.uniform(0, 1, 25)
    yhat = np.clip(y + rng.normal(0, 0.2, 25), 0, 1)
    cs = mean_cs(y, yhat, np.zeros(25), np.ones(25))
    assert cs.lo[-1] == cs.hi[-1] == cs.estimate[-1] == pytest.approx(y.mean(), abs=1e-15)
    assert (np.diff(cs.lo) >= 0).all() and (np.diff(cs.hi) <= 0).all()   # running intersection
    assert (cs.lo <= cs.estimate).all() and (cs.estimate <= cs.hi).all()
    assert (cs.lo[0], cs.hi[0]) == (0.0, 1.0)


def test_known_zeros_are_exact_and_scale_the_rest_by_their_share() -> None:
    # every query a known zero: the sequence is [0, 0] from the start
    zero = mean_cs([0.0, 0.0], [0.0] * 5, [0.0] * 5, [0.0] * 5)
    assert (zero.lo == 0).all() and (zero.hi == 0).all() and zero.n_known == 5
    # two known zeros among six: the logical bounds before any label are 4/6 of [-1, 1]
    lower, upper = np.array([-1, 0, -1, -1, 0, -1.0]), np.array([1, 0, 1, 1, 0, 1.0])
    cs = mean_cs([0.5, 0.0], [0.4, 0.1, 0.2, 0.3, 0.0, 0.1], lower, upper)
    assert cs.lo[0] == pytest.approx(-4 / 6) and cs.hi[0] == pytest.approx(4 / 6)
    # the known zero labelled second changes nothing
    assert (cs.lo[2], cs.hi[2]) == (cs.lo[1], cs.hi[1])
    with pytest.raises(InputError, match="differs from the value known"):
        mean_cs([0.5, 0.3], [0.4, 0.1, 0.2], [-1, 0, -1], [1, 0, 1])


def test_per_query_bounds_narrow_the_sequence() -> None:
    rng = np.random.default_rng(5)
    n_q = 40
    yhat = rng.uniform(0, 0.3, n_q)
    y = np.clip(yhat + rng.normal(0.05, 0.05, n_q), 0, 0.4)
    wide = mean_cs(y[:20], yhat, np.full(n_q, -1.0), np.full(n_q, 1.0))
    tight = mean_cs(y[:20], yhat, np.zeros(n_q), np.full(n_q, 0.4))
    assert tight.hi[-1] - tight.lo[-1] < 0.7 * (wide.hi[-1] - wide.lo[-1])


def test_the_residual_bets_pay_when_the_llm_values_are_close() -> None:
    rng = np.random.default_rng(7)
    n_q, b = 43, 60
    y = np.clip(rng.choice([0.05, 0.95], n_q) + rng.normal(0, 0.03, n_q), 0, 1)
    yhat = np.clip(y + rng.normal(0, 0.02, n_q), 0, 1)
    perm = np.array([rng.permutation(n_q) for _ in range(b)])
    bounds = np.zeros((b, n_q)), np.ones((b, n_q))

    def width(streams: tuple[str, ...]) -> float:
        lo, hi = batch_cs(y[perm], yhat[perm], *bounds, n=20, truncation=0.9, streams=streams)
        return float(np.median(hi[:, 20] - lo[:, 20]))

    assert width(("human", "residual")) < 0.8 * width(("human",))


def test_a_value_outside_its_bounds_is_refused() -> None:
    with pytest.raises(InputError, match="outside the bounds"):
        mean_cs([1.5], [0.5, 0.5], [0, 0], [1, 1])


def _confseq_betting() -> object:
    pytest.importorskip("multiprocess")
    try:
        from confseq import betting
    except (ImportError, AttributeError):   # not installed / made for NumPy < 2 (np.float_)
        pytest.skip("confseq's betting module does not import here")
    return betting


def test_one_stream_matches_confseq_hedged_capital_without_replacement() -> None:
    betting = _confseq_betting()
    from confseq.betting_strategies import lambda_predmix_eb  # type: ignore[import-not-found]

    rng = np.random.default_rng(1)
    n_total, n, breaks = 30, 25, 1000
    x = rng.beta(2, 5, n_total)
    assert np.allclose(predmix_bets(x, 0.025), lambda_predmix_eb(x, alpha=0.025))
    ref_lo, ref_hi = betting.betting_cs(  # type: ignore[attr-defined]
        x[:n], N=n_total, alpha=0.05, breaks=breaks, running_intersection=False,
        trunc_scale=0.5, theta=0.5)
    lo, hi = batch_cs(x[None], np.zeros((1, n_total)), np.zeros((1, n_total)),
                      np.ones((1, n_total)), n=n, streams=("human",), running=False,
                      truncation=0.5)
    # confseq searches a grid of step 1/breaks and widens by one step
    assert np.all(ref_lo <= lo[0, 1:] + 1e-9) and np.all(lo[0, 1:] - ref_lo <= 2 / breaks)
    assert np.all(hi[0, 1:] <= ref_hi + 1e-9) and np.all(ref_hi - hi[0, 1:] <= 2 / breaks)
