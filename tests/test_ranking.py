"""The leaderboard's top: tau_AP, top-k overlap, the winner's query-bootstrap stability, and
the ``ranking`` block of ``labeler compare --json`` (TREC DL 2019 slice in tests/data/compare)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from labeler import io
from labeler.cli import main
from labeler.reconciliation.comparison import compare
from labeler.statistics.options import StatsOptions
from labeler.statistics.ranking import (kendall_tau, order_of, tau_ap, top_k_overlap,
                                        winner_stability)

COMPARE = Path(__file__).parent / "data" / "compare"


def _tau_ap_by_the_formula(order: list[str], truth: list[str]) -> float:
    """Yilmaz et al. 2008, eq. 1, written out: for i = 2..N, C(i) = items above position i
    of ``order`` that ``truth`` also puts above the item at i."""
    n = len(order)
    total = 0.0
    for i in range(2, n + 1):
        item = order[i - 1]
        c = sum(truth.index(above) < truth.index(item) for above in order[: i - 1])
        total += c / (i - 1)
    return 2 / (n - 1) * total - 1


def test_tau_ap_by_hand_weighs_an_error_at_the_top_more() -> None:
    truth = ["a", "b", "c", "d"]
    # Swapping the top two: C = 0, 2, 3 -> 2/3 (0/1 + 2/2 + 3/3) - 1 = 1/3.
    assert tau_ap(["b", "a", "c", "d"], truth) == pytest.approx(1 / 3)
    # Swapping the bottom two: C = 1, 2, 2 -> 2/3 (1 + 1 + 2/3) - 1 = 7/9.
    assert tau_ap(["a", "b", "d", "c"], truth) == pytest.approx(7 / 9)
    # Kendall's tau cannot tell the two apart: one discordant pair of six either way.
    for order in (["b", "a", "c", "d"], ["a", "b", "d", "c"]):
        assert stats.kendalltau([truth.index(x) for x in order], range(4)).statistic == \
            pytest.approx(2 / 3)
    assert tau_ap(truth, truth) == 1.0 and tau_ap(truth[::-1], truth) == -1.0
    assert tau_ap(["a"], ["a"]) is None


def test_tau_ap_equals_the_formula_on_every_order_of_five() -> None:
    truth = list("abcde")
    values = []
    for order in itertools.permutations(truth):
        values.append(tau_ap(list(order), truth))
        assert values[-1] == pytest.approx(_tau_ap_by_the_formula(list(order), truth))
    # Over all orders, tau_AP averages 0, like Kendall's tau (the paper's expectation).
    assert np.mean(values) == pytest.approx(0.0, abs=1e-12)


def test_tau_ap_refuses_orders_of_different_items() -> None:
    with pytest.raises(ValueError):
        tau_ap(["a", "b"], ["a", "c"])


def test_top_k_overlap_and_order() -> None:
    truth, order = ["a", "b", "c", "d"], ["b", "d", "a", "c"]
    assert top_k_overlap(order, truth, 1) == 0.0
    assert top_k_overlap(order, truth, 3) == pytest.approx(2 / 3)
    assert top_k_overlap(order, truth, 5) is None  # fewer than five runs
    assert order_of({"x": 0.2, "y": 0.5, "z": None, "w": 0.5}) == ["w", "y", "x", "z"]


def test_kendall_tau_equals_scipy() -> None:
    rng = np.random.default_rng(2)
    for _ in range(20):
        x, y = rng.random(7), rng.random(7)
        assert kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert kendall_tau([1.0], [2.0]) is None


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
def test_winner_stability_equals_a_hand_made_query_bootstrap() -> None:
    rng = np.random.default_rng(4)
    scores = rng.random((12, 3)) + np.array([0.1, 0.0, 0.05])
    scores[3, 1] = np.nan  # one run did not score one query
    seed, n = 9, 300
    draws = np.random.default_rng(seed).integers(0, 12, (n, 12))
    stays = 0
    for row in draws:
        means = np.nanmean(scores[row], axis=0)
        stays += int(np.argmax(means) == 0 and np.sum(means == means.max()) == 1)
    assert winner_stability(scores, 0, n_resamples=n, seed=seed) == pytest.approx(stays / n)
    # With a PPI correction each replicate adds the mean human - LLM gap of its labelled draws.
    gap = np.where(np.arange(12)[:, None] < 5, rng.normal(0, 0.1, (12, 3)), np.nan)
    stays = 0
    for row in draws:
        est = np.nanmean(scores[row], axis=0) + np.nanmean(gap[row], axis=0)
        stays += int(np.argmax(est) == 0 and np.sum(est == est.max()) == 1)
    got = winner_stability(scores, 0, n_resamples=n, seed=seed, correction=gap)
    assert got == pytest.approx(stays / n)
    assert winner_stability(scores, 0, n_resamples=0, seed=0) is None


@pytest.fixture(scope="module")
def human() -> pd.DataFrame:
    return io.read_qrels(COMPARE / "human.qrels")


def _noisy(human: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return human.assign(grade=np.clip(human["grade"] + rng.integers(-2, 2, len(human)), 0, 3))


def test_compare_json_ranking_block_against_scipy_and_the_formula(human: pd.DataFrame,
                                                                  tmp_path: Path) -> None:
    runs = sorted((COMPARE / "runs").glob("*.run"))
    llm = _noisy(human, 1)
    io.write_qrels(llm, tmp_path / "llm.qrels")
    res = CliRunner().invoke(main, ["compare", "--human", str(COMPARE / "human.qrels"), "--llm",
                                    str(tmp_path / "llm.qrels"),
                                    *[a for r in runs for a in ("--run", str(r))],
                                    "--bootstrap", "200", "--seed", "3", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    ranking = data["ranking"]
    assert set(ranking) >= {"kendall_tau", "tau_ap", "top_k_overlap", "winner"}
    assert set(ranking["top_k_overlap"]) == {"1", "3", "5"}
    assert set(ranking["winner"]) >= {"human", "llm", "ppi", "stability"}
    tags = list(data["runs"])
    # The runs are ordered by their means over the queries every run scores under both sets.
    mean = {label: {t: data["runs"][t]["shared"][label] for t in tags} for label in ("human",
                                                                                     "llm")}
    h, m = [mean["human"][t] for t in tags], [mean["llm"][t] for t in tags]
    assert ranking["kendall_tau"] == pytest.approx(stats.kendalltau(h, m).statistic)
    order_h = sorted(tags, key=lambda t: (-mean["human"][t], t))
    order_l = sorted(tags, key=lambda t: (-mean["llm"][t], t))
    assert order_h == data["order"]["human"] and order_l == data["order"]["llm"]
    assert ranking["tau_ap"] == pytest.approx(_tau_ap_by_the_formula(order_l, order_h))
    assert ranking["winner"]["human"] == order_h[0] and ranking["winner"]["llm"] == order_l[0]
    assert ranking["winner"]["ppi"] is None  # no PPI asked for
    for k in (1, 3):
        assert ranking["top_k_overlap"][str(k)] == len(set(order_h[:k]) & set(order_l[:k])) / k
    assert ranking["top_k_overlap"]["5"] is None  # four runs
    # The stability: resample the shared queries, the human winner keeps the highest mean.
    pq = pd.DataFrame([(t, q, v["human"], v["llm"]) for t, per in data["per_query"].items()
                       for q, v in per.items()], columns=["system", "query_id", "human", "llm"])
    matrix = pq.pivot(index="query_id", columns="system", values="human")[tags].to_numpy(float)
    llm = pq.pivot(index="query_id", columns="system", values="llm")[tags].to_numpy(float)
    matrix = matrix[np.isfinite(matrix).all(axis=1) & np.isfinite(llm).all(axis=1)]
    assert len(matrix) == data["shared_queries"]
    draws = np.random.default_rng(3).integers(0, len(matrix), (200, len(matrix)))
    best = tags.index(order_h[0])
    stays = np.mean([np.argmax(np.nanmean(matrix[row], axis=0)) == best for row in draws])
    assert ranking["winner"]["stability"] == pytest.approx(stays)


def test_report_views_show_the_top_of_the_ranking(human: pd.DataFrame) -> None:
    runs = sorted((COMPARE / "runs").glob("*.run"))
    c = compare(human=human, llm=_noisy(human, 2), runs=[str(r) for r in runs],
                stats=StatsOptions(bootstrap=100))
    assert c.to_dict()["ranking"]["bootstrap"] == 100
    winner = c.to_dict()["ranking"]["winner"]
    text, md, html = c.to_text(), c.to_markdown(), c.to_html()
    share = f"{winner['stability']:.0%}"
    for view in (text, md, html):
        assert "AP correlation" in view and share in view
    assert "## Top of the ranking" in md and 'id="ranking"' in html


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
def test_with_ppi_the_winner_and_its_stability_are_the_ppi_ones(human: pd.DataFrame) -> None:
    runs = sorted((COMPARE / "runs").glob("*.run"))
    sample = sorted(human["query_id"].unique())[:6]   # humans labelled 6 of the 10 queries
    c = compare(human=human.loc[human["query_id"].isin(sample)], llm=_noisy(human, 1),
                runs=[str(r) for r in runs], stats=StatsOptions(ppi=True, bootstrap=300, seed=4))
    data = c.to_dict()
    estimates = {t: r["ppi"]["estimate"] for t, r in data["runs"].items()}
    winner = data["ranking"]["winner"]
    assert winner["ppi"] == max(estimates, key=lambda t: estimates[t])
    tags = list(data["runs"])
    pq = pd.DataFrame([(t, q, v["human"], v["llm"]) for t, per in data["per_query"].items()
                       for q, v in per.items()], columns=["system", "query_id", "human", "llm"])
    llm = pq.pivot(index="query_id", columns="system", values="llm")[tags].to_numpy(float)
    gap = pq.pivot(index="query_id", columns="system", values="human")[tags].to_numpy(float) - llm
    draws = np.random.default_rng(4).integers(0, len(llm), (300, len(llm)))
    best = tags.index(winner["ppi"])
    stays = []
    for row in draws:  # each replicate: LLM mean + mean human - LLM gap of its labelled draws
        est = np.nanmean(llm[row], axis=0) + np.nanmean(gap[row], axis=0)
        stays.append(bool(np.isfinite(est).all() and np.argmax(est) == best
                          and np.sum(est == est.max()) == 1))
    assert winner["stability"] == pytest.approx(np.mean(stays))
