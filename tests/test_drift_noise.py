"""Drift says whether a run's move in mean NDCG since the previous job is beyond noise: a
paired test of the per-query NDCG over the queries both jobs scored, checked against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from labeler.pipeline.drift import compute_drift


def _labels() -> pd.DataFrame:
    return pd.DataFrame({"query_id": ["1"], "chunk_id": ["a"],
                         "grade": pd.array([2], dtype="Int64"), "status": ["ok"]})


def _scores(per_query: dict[str, dict[str, float]]) -> dict:
    return {"k": [10], "runs": {tag: {"ndcg@10": {"mean": float(np.mean(list(v.values()))),
                                                  "per_query": v}}
                                for tag, v in per_query.items()}}


def test_a_uniform_move_is_beyond_noise_and_one_odd_query_is_not() -> None:
    rng = np.random.default_rng(0)
    before = rng.uniform(0.3, 0.8, 30)
    shifted = before + 0.03 + rng.normal(0, 0.01, 30)  # every query a little better
    one_odd = before.copy()
    one_odd[0] += 0.9  # one query jumps: the mean moves 0.03 too
    q = [f"q{i}" for i in range(30)]
    prev = _scores({"steady": dict(zip(q, before)), "odd": dict(zip(q, before))})
    now = _scores({"steady": dict(zip(q, shifted)),
                   "odd": dict(zip(q[:29], one_odd[:29]))})  # one query fewer scored now
    d = compute_drift(_labels(), _labels(), prev, now, max_ndcg_delta=0.02)
    rows = {r["system"]: r for r in d.to_dict()["ndcg"]}
    assert rows["steady"]["drifted"] and rows["steady"]["beyond_noise"]
    assert rows["steady"]["n_queries"] == 30
    assert rows["steady"]["p"] == pytest.approx(sps.ttest_rel(shifted, before).pvalue, rel=1e-12)
    assert rows["odd"]["n_queries"] == 29
    assert rows["odd"]["p"] == pytest.approx(
        sps.ttest_rel(one_odd[:29], before[:29]).pvalue, rel=1e-12)
    assert rows["odd"]["drifted"] and not rows["odd"]["beyond_noise"]
    reasons = " | ".join(d.reasons)
    assert "run steady: NDCG@10 moved" in reasons
    assert "beyond noise: paired t-test over 30 queries" in reasons
    assert "within noise: paired t-test over 29 queries" in reasons


def test_the_randomization_test_and_alpha_are_honoured() -> None:
    rng = np.random.default_rng(1)
    before = rng.uniform(0.3, 0.8, 12)
    after = before + rng.normal(0.02, 0.03, 12)
    q = [f"q{i}" for i in range(12)]
    prev, now = _scores({"r": dict(zip(q, before))}, ), _scores({"r": dict(zip(q, after))})
    d = compute_drift(_labels(), _labels(), prev, now, test="randomization", alpha=0.5)
    row = d.to_dict()["ndcg"][0]
    signs = np.array(np.meshgrid(*[[1.0, -1.0]] * 12)).reshape(12, -1).T  # all 4,096 patterns
    diff = after - before
    means = (signs * diff).mean(axis=1)
    exact = 2 * min((means <= diff.mean() + 1e-12).mean(), (means >= diff.mean() - 1e-12).mean())
    assert row["p"] == pytest.approx(min(exact, 1.0))
    assert row["beyond_noise"] == (row["p"] < 0.5)
    assert d.to_dict()["thresholds"]["alpha"] == 0.5
