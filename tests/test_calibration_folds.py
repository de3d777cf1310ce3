"""Calibration is judged on whole held-out queries (GroupKFold by query), and applied only
where that held-out agreement beats the raw grades. Real LLMJudge labels (tests/data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labeler import io
from labeler.errors import ConfigError
from labeler.reconciliation.agreement import alpha
from labeler.reconciliation.calibrate import calibrate, query_folds

DATA = Path(__file__).parent / "data" / "llmjudge"


@pytest.fixture(scope="module")
def human() -> pd.DataFrame:
    return io.read_qrels(DATA / "test-human.qrels")


@pytest.mark.parametrize("folds", [2, 5, 25])
def test_no_query_is_in_both_the_fit_and_the_test_of_a_fold(human: pd.DataFrame,
                                                            folds: int) -> None:
    groups = human["query_id"].to_numpy()
    tested = np.zeros(len(groups), dtype=int)
    splits = query_folds(groups, folds, seed=1)
    assert len(splits) == folds
    for fit, test in splits:
        assert not set(groups[fit]) & set(groups[test])
        assert len(fit) + len(test) == len(groups)
        tested[test] += 1
    assert (tested == 1).all()  # every pair is held out exactly once
    assert [t.tolist() for _, t in splits] == [t.tolist() for _, t in query_folds(groups,
                                                                                  folds, 1)]


def test_the_report_figures_are_predictions_for_held_out_queries(human: pd.DataFrame) -> None:
    llm = io.read_qrels(DATA / "RMITIR-llama38b.qrels")
    cal = calibrate(llm=llm, human=human, folds=5, seed=0, method="ordinal")
    rep = cal.report
    assert rep["held_out"] == "query" and rep["n_queries"] == 25
    # Rebuild the held-out predictions by hand: each fold's map fitted on the other queries.
    both = human.merge(llm, on=["query_id", "chunk_id"], suffixes=("_h", "_l"))
    groups = both["query_id"].astype(str).to_numpy()
    h, g = both["grade_h"].to_numpy(int), both["grade_l"].to_numpy(int)
    held = np.empty(len(h), dtype=int)
    for (fit, test), mapping in zip(query_folds(groups, 5, 0), rep["fold_mappings"]):
        fitted = calibrate(llm=both.iloc[fit][["query_id", "chunk_id", "grade_l"]]
                           .rename(columns={"grade_l": "grade"}),
                           human=both.iloc[fit][["query_id", "chunk_id", "grade_h"]]
                           .rename(columns={"grade_h": "grade"}), folds=2, method="ordinal")
        assert fitted.mapping == mapping
        held[test] = np.array([mapping[v] for v in g[test]])
    assert rep["after"]["krippendorff_alpha_ordinal"] == pytest.approx(alpha(h, held), abs=1e-12)


def test_calibration_is_kept_only_where_it_wins_on_held_out_queries(human: pd.DataFrame) -> None:
    seen = set()
    for seed in range(4):
        rng = np.random.default_rng(seed)
        # Half the cases: a judge off by one grade (calibration helps); half: noise.
        shift = np.minimum(human["grade"] + 1, 3) if seed % 2 else rng.integers(0, 4, len(human))
        llm = human.assign(grade=shift)
        cal = calibrate(llm=llm, human=human, folds=5, seed=seed, method="ordinal")
        rep = cal.report
        won = (rep["after"]["krippendorff_alpha_ordinal"]
               > rep["before"]["krippendorff_alpha_ordinal"]
               and all(f["calibrated"] > f["raw"] for f in rep["fold_alpha"]))
        assert cal.applied is won is rep["applied"]
        if not won:  # the raw grades are kept, and the report says so
            assert rep["reason"].startswith("not applied, the raw grades are kept")
            out = cal.apply(llm.assign(status="ok"))
            assert (out["calibrated_grade"].to_numpy() == llm["grade"].to_numpy()).all()
        seen.add(won)
    assert seen == {True, False}


def test_more_folds_than_queries_is_refused(human: pd.DataFrame) -> None:
    few = human.loc[human["query_id"].isin(["q49", "q0", "q1"])]
    with pytest.raises(ConfigError, match="3 queries"):
        calibrate(llm=few, human=few, folds=5)
