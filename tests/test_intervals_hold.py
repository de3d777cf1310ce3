"""The rules that make every interval hold on user-shaped data, each on a small hand case:
known zeros are not estimated, a sample without spread gives no interval, the best set of an
obvious board is one run, rank statistics carry query-bootstrap intervals, and the human-only
interval is the finite-population t interval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from labeler.reconciliation.comparison import compare
from labeler.statistics.bootstrap import query_resample_counts
from labeler.statistics.ppi import pair_family, ppi_mean, ppi_mean_diff
from labeler.statistics.ranking import best_set, rank_intervals, tau_ap, top_k_overlap
from labeler.statistics.verdicts import StatsOptions, significance


# ---------------------------------------------------------------------- zero spread

def test_a_sample_without_spread_gives_no_interval_and_no_p() -> None:
    # every labelled query shows the same human − LLM gap: nothing says how the others vary
    y = np.array([0.5, 0.6, 0.7, 0.4, 0.3, 0.8])
    r = ppi_mean(y, y - 0.1, np.linspace(0.2, 0.9, 20), bounds=(0, 1))
    assert r.ci is None and r.p is None and r.se is None
    assert r.reason == "no spread among the 6 labelled queries"
    assert r.to_dict()["reason"] == "no spread among the 6 labelled queries"
    # a pair whose labelled differences are all 0 (near-duplicates): unresolved, not "equal"
    d = ppi_mean_diff(y, y, y - 0.1, y - 0.1, np.zeros(20), np.full(20, 0.01))
    assert d.ci is None and d.p is None and d.reason == "no spread among the 6 labelled queries"
    fam = pair_family([d])
    assert fam.verdicts == ("unresolved",) and fam.p_adjusted == (None,)
    assert fam.to_dicts()[0]["ci_simultaneous"] is None
    # every query labelled: the mean is known, a point is then the honest answer
    whole = ppi_mean(y, y - 0.1, [])
    assert whole.ci == pytest.approx((y.mean(), y.mean()))


def test_a_constant_paired_difference_has_no_simultaneous_interval() -> None:
    base = np.random.default_rng(0).uniform(0.2, 0.6, 12)
    rows = [(s, f"q{i}", v, v) for s, vals in (("a", base + 0.1), ("b", base))
            for i, v in enumerate(vals)]
    pq = pd.DataFrame(rows, columns=["system", "query_id", "human", "llm"])
    sig = significance(pq, ["a", "b"])
    pair = sig.pairs_to_dicts()[0]
    assert pair["human"]["p"] == pytest.approx(0.0, abs=1e-12)   # scipy's ttest_rel
    assert pair["human"]["ci_simultaneous"] is None              # never width 0
    assert sig.best_set() == ["a", "b"]                          # so a is not shown best


# ---------------------------------------------------------------------- known zeros

def test_known_zeros_are_not_estimated_the_rest_is_post_stratified() -> None:
    rng = np.random.default_rng(4)
    ya, yb = rng.uniform(0, 1, 8), rng.uniform(0, 1, 8)      # 8 labelled informative
    ha, hb = ya + rng.normal(0, .1, 8), yb + rng.normal(0, .1, 8)
    ua, ub = rng.uniform(0, 1, 12), rng.uniform(0, 1, 12)    # 12 unlabelled informative
    r = ppi_mean_diff(ya, yb, ha, hb, ua, ub, n_known_zero=30)
    d, dh, du = ya - yb, ha - hb, ua - ub
    share = 20 / 50
    est = share * (np.concatenate([dh, du]).mean() + (d - dh).mean())
    se = share * math.sqrt((1 - 8 / 20) * np.var(d - dh, ddof=1) / 8)
    t = sps.t.ppf(0.975, 7)
    assert r.estimate == pytest.approx(est, abs=1e-12) and r.se == pytest.approx(se)
    assert r.ci == pytest.approx((est - t * se, est + t * se))
    assert (r.n_informative, r.n_known_zero, r.df) == (20, 30, 7)
    item = pair_family([r]).to_dicts()[0]
    assert (item["n_informative"], item["n_known_zero"]) == (20, 30)
    # fewer than 5 labelled informative queries: no interval, whatever the known zeros
    few = ppi_mean_diff(ya[:4], yb[:4], ha[:4], hb[:4], ua, ub, n_known_zero=30)
    assert few.ci is None and few.reason == "only 4 human-labelled informative queries"


def _board(n_queries: int = 20, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame,
                                                         pd.DataFrame]:
    """Human and LLM qrels of 20 queries × 6 chunks, and two runs that rank the same top 10
    on the even queries and differ on the odd ones."""
    rng = np.random.default_rng(seed)
    qrels, runs = [], []
    for q in range(n_queries):
        grades = rng.integers(0, 4, 6)
        grades[0] = 3
        for c, g in enumerate(grades):
            qrels.append((f"q{q}", f"d{c}", int(g), int(min(3, max(0, g + rng.integers(-1, 2))))))
        order_a = rng.permutation(6)
        order_b = order_a if q % 2 == 0 else rng.permutation(6)
        for tag, order in (("a", order_a), ("b", order_b)):
            for rank, c in enumerate(order):
                runs.append((tag, f"q{q}", f"d{c}", float(10 - rank)))
    q = pd.DataFrame(qrels, columns=["query_id", "chunk_id", "human", "llm"])
    human = q[["query_id", "chunk_id", "human"]].rename(columns={"human": "grade"})
    llm = q[["query_id", "chunk_id", "llm"]].rename(columns={"llm": "grade"})
    run = pd.DataFrame(runs, columns=["system", "query_id", "chunk_id", "score"])
    return human, llm, run


def test_compare_finds_the_known_zeros_of_near_duplicate_runs() -> None:
    human, llm, run = _board()
    labelled = [f"q{i}" for i in range(12)]                  # 6 identical, 6 informative
    c = compare(human=human.loc[human["query_id"].isin(labelled)], llm=llm, runs=run,
                stats=StatsOptions(ppi=True))
    pair = c.to_dict()["pairs"][0]["ppi"]
    assert (pair["n_informative"], pair["n_known_zero"]) == (10, 10)
    # by hand: PPI over the 10 informative (odd) queries, scaled by their share 10/20
    pq = c.per_query.set_index(["system", "query_id"])
    odd = [f"q{i}" for i in range(1, 20, 2)]
    lab = [q for q in odd if q in labelled]
    d = {col: np.array([pq.loc[("a", q), col] - pq.loc[("b", q), col] for q in odd])
         for col in ("human", "llm")}
    is_lab = np.array([q in lab for q in odd])
    est = 0.5 * (d["llm"].mean() + (d["human"][is_lab] - d["llm"][is_lab]).mean())
    se = 0.5 * math.sqrt((1 - 6 / 10) * np.var(d["human"][is_lab] - d["llm"][is_lab],
                                               ddof=1) / 6)
    assert pair["delta"] == pytest.approx(est, abs=1e-12)
    t = sps.t.ppf(0.975, 5)
    assert pair["ci"] == pytest.approx([est - t * se, est + t * se], abs=1e-12)
    # the per-query values of the known zeros are indeed equal under both label sets
    even = [f"q{i}" for i in range(0, 20, 2)]
    for q in even:
        assert pq.loc[("a", q), "llm"] == pq.loc[("b", q), "llm"]


def test_with_complete_a_query_both_runs_lack_is_a_known_zero() -> None:
    human, llm, run = _board()
    run = run.loc[~run["query_id"].isin(["q1", "q3"])]       # both runs lack two odd queries
    labelled = [f"q{i}" for i in range(14)]
    c = compare(human=human.loc[human["query_id"].isin(labelled)], llm=llm, runs=run,
                stats=StatsOptions(ppi=True), complete=True)
    d = c.to_dict()
    pair = d["pairs"][0]["ppi"]
    assert (pair["n_informative"], pair["n_known_zero"]) == (8, 12)
    # each run scores 0 on the two queries it lacks: known, not estimated
    run_a = d["runs"]["a"]["ppi"]
    assert run_a["n_known_zero"] == 2
    assert run_a["n_labelled"] + run_a["n_unlabelled"] == 18
    pq = c.per_query.set_index(["system", "query_id"])
    present = [f"q{i}" for i in range(20) if i not in (1, 3)]
    y = np.array([pq.loc[("a", q), "human"] if q in labelled else 0.0 for q in present])
    yhat = np.array([pq.loc[("a", q), "llm"] for q in present])
    lab = np.array([q in labelled for q in present])
    est = 18 / 20 * (yhat.mean() + (y[lab] - yhat[lab]).mean())
    assert run_a["estimate"] == pytest.approx(est, abs=1e-12)


# ---------------------------------------------------------------------- the best set

def test_the_best_set_of_an_obvious_board_is_one_run() -> None:
    rng = np.random.default_rng(1)
    base = rng.uniform(0.2, 0.5, 30)
    vals = {"top": base + 0.3 + rng.normal(0, .02, 30), "mid": base + rng.normal(0, .02, 30),
            "low": base - 0.1 + rng.normal(0, .02, 30)}
    pq = pd.DataFrame([(s, f"q{i}", v, v + 0.05) for s, x in vals.items()
                       for i, v in enumerate(x)],
                      columns=["system", "query_id", "human", "llm"])
    sig = significance(pq, list(vals))
    assert sig.best_set() == ["top"]
    # two runs a hair apart: neither is shown to beat the other, both stay
    close = pd.concat([pq, pq.loc[pq["system"] == "top"].assign(
        system="twin", human=lambda f: f["human"] + rng.normal(0, .01, 30))])
    assert sorted(significance(close, [*vals, "twin"]).best_set()) == ["top", "twin"]


def test_best_set_from_simultaneous_intervals() -> None:
    pairs = [("a", "b", 0.01, 0.2), ("a", "c", -0.1, 0.3), ("b", "c", float("nan"), None)]
    assert best_set(["a", "b", "c"], pairs, {"a": 0.5, "b": 0.3, "c": 0.4}) == ["a", "c"]
    assert best_set(["a", "b"], [("a", "b", -0.3, -0.1)], {"a": 0.2, "b": 0.5}) == ["b"]


def test_compare_json_has_the_best_set_and_the_stability() -> None:
    human, llm, run = _board()
    ranking = compare(human=human, llm=llm, runs=run).to_dict()["ranking"]
    assert set(ranking["best_set"]) <= {"a", "b"} and ranking["best_set"]
    assert "stability" in ranking["winner"] and "confidence" not in ranking["winner"]


# ---------------------------------------------------------------------- rank statistics

def test_rank_intervals_resample_the_same_queries_for_both_orders() -> None:
    rng = np.random.default_rng(2)
    h = rng.uniform(0, 1, (9, 4)) + np.array([0.3, 0.2, 0.1, 0.0])
    m = h + rng.normal(0, 0.2, h.shape)
    got = rank_intervals(h, m, n_resamples=200, seed=5)
    assert got is not None
    counts = query_resample_counts(9, 200, 5)
    taps, top1, taus = [], [], []
    for w in counts:  # by hand: both orders on the same drawn queries
        idx = np.repeat(np.arange(9), w)
        oh = [str(i) for i in np.argsort(-h[idx].mean(axis=0), kind="stable")]
        ol = [str(i) for i in np.argsort(-m[idx].mean(axis=0), kind="stable")]
        taps.append(tau_ap(ol, oh))
        top1.append(top_k_overlap(ol, oh, 1))
        taus.append(sps.kendalltau(h[idx].mean(axis=0), m[idx].mean(axis=0)).statistic)
    assert got["tau_ap"] == pytest.approx(list(np.percentile(taps, [2.5, 97.5])))
    assert got["kendall_tau"] == pytest.approx(list(np.percentile(taus, [2.5, 97.5])))
    assert got["top_k_overlap"]["1"] == pytest.approx(list(np.percentile(top1, [2.5, 97.5])))
    assert got["top_k_overlap"]["5"] is None and got["n_queries"] == 9


def test_compare_json_gives_rank_statistics_intervals() -> None:
    human, llm, run = _board()
    ranking = compare(human=human, llm=llm, runs=run).to_dict()["ranking"]
    ci = ranking["ci"]
    assert set(ci) == {"kendall_tau", "tau_ap", "top_k_overlap"}
    lo, hi = ci["tau_ap"]
    assert -1 <= lo <= hi <= 1 and ranking["ci_queries"] == 20


# ---------------------------------------------------------------------- human-only interval

def test_human_only_ci_is_the_finite_population_t_interval() -> None:
    human, llm, run = _board()
    labelled = [f"q{i}" for i in range(8)]
    c = compare(human=human.loc[human["query_id"].isin(labelled)], llm=llm, runs=run,
                stats=StatsOptions(ppi=True))
    d = c.to_dict()
    pq = c.per_query.set_index(["system", "query_id"])
    for tag in ("a", "b"):
        y = np.array([pq.loc[(tag, q), "human"] for q in labelled])
        half = sps.t.ppf(0.975, 7) * math.sqrt((1 - 8 / 20) * np.var(y, ddof=1) / 8)
        want = [max(y.mean() - half, 0), min(y.mean() + half, 1)]
        assert d["runs"][tag]["human_only_ci"] == pytest.approx(want, abs=1e-12)


def test_with_ppi_the_best_set_reads_the_ppi_simultaneous_intervals() -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.5, 24)
    vals = {"top": base + 0.35 + rng.normal(0, .03, 24), "mid": base + rng.normal(0, .03, 24),
            "low": base - 0.1 + rng.normal(0, .03, 24)}
    pq = pd.DataFrame([(s, f"q{i}", v, v + 0.05 + rng.normal(0, .02)) for s, x in vals.items()
                       for i, v in enumerate(x)], columns=["system", "query_id", "human", "llm"])
    queries = {f"q{i}" for i in range(24)}
    sig = significance(pq, list(vals), options=StatsOptions(ppi=True),
                       ppi_population={s: queries for s in vals},
                       ppi_labelled={f"q{i}" for i in range(8)})
    assert sig.best_set() == ["top"]
    # the set follows the simultaneous intervals, not the pair verdicts
    p = sig.pairs.set_index(["a", "b"])
    assert p.loc[("top", "mid"), "ppi_sim_lo"] > 0 and p.loc[("top", "low"), "ppi_sim_lo"] > 0


def test_the_paired_t_simultaneous_intervals_are_bonferroni_t_intervals() -> None:
    rng = np.random.default_rng(8)
    vals = {s: rng.uniform(0, 1, 15) for s in ("a", "b", "c")}
    pq = pd.DataFrame([(s, f"q{i}", v, v) for s, x in vals.items() for i, v in enumerate(x)],
                      columns=["system", "query_id", "human", "llm"])
    pairs = significance(pq, list(vals)).pairs_to_dicts()
    t = sps.t.ppf(1 - 0.05 / 6, 14)                      # 3 pairs: level 1 − 0.05/3
    for item in pairs:
        d = vals[item["a"]] - vals[item["b"]]
        half = t * d.std(ddof=1) / math.sqrt(15)
        want = [max(d.mean() - half, -1), min(d.mean() + half, 1)]
        assert item["human"]["ci_simultaneous"] == pytest.approx(want, abs=1e-12)


def test_with_another_measure_only_missing_queries_are_known_zeros() -> None:
    human, llm, run = _board()
    run = run.loc[~run["query_id"].isin(["q1", "q3"])]
    labelled = [f"q{i}" for i in range(14)]
    d = compare(human=human.loc[human["query_id"].isin(labelled)], llm=llm, runs=run,
                stats=StatsOptions(ppi=True), complete=True, measure="AP@10").to_dict()
    pair = d["pairs"][0]["ppi"]
    # another measure: only the queries both runs lack are known zeros (the top-k rule is
    # applied to NDCG@k alone)
    assert (pair["n_informative"], pair["n_known_zero"]) == (18, 2)
    assert d["runs"]["a"]["ppi"]["n_known_zero"] == 2
