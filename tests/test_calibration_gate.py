"""Calibration that never hurts, on real LLM labels (LLMJudge 2024).

The setting of the issue: a random 10% human sample to calibrate on, the other 90% to judge
the result. Every method, as applied (calibrated only where its k-fold held-out alpha beat the
raw grades, else raw), must be no worse on the 90% than the raw grades — measured with the
krippendorff package, not with our own code.
"""

from __future__ import annotations

from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest

from labeler import io
from labeler.reconciliation.calibrate import METHODS, alpha_from_counts, calibrate

LLMJUDGE = Path(__file__).parent / "data" / "llmjudge"
SETS = ["Olz-gpt4o", "RMITIR-llama38b", "willia-umbrela1"]
KEYS = ["query_id", "chunk_id"]


def _alpha(h: np.ndarray, g: np.ndarray) -> float:
    return float(krippendorff.alpha(reliability_data=[h, g], level_of_measurement="ordinal",
                                    value_domain=[0, 1, 2, 3]))


@pytest.fixture(scope="module")
def human() -> pd.DataFrame:
    return io.read_qrels(LLMJUDGE / "test-human.qrels")


def _split(human: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    sample = human.sample(frac=0.1, random_state=seed)
    return sample, human.drop(sample.index)


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("seed", [0, 1])
def test_every_method_as_applied_is_never_worse_on_the_held_out_90_percent(
        human: pd.DataFrame, name: str, seed: int) -> None:
    llm = io.read_labels(LLMJUDGE / f"{name}.qrels")
    sample, rest = _split(human, seed)
    for method in METHODS:
        cal = calibrate(llm=llm, human=sample, folds=5, seed=0, method=method)  # type: ignore[arg-type]
        both = rest.merge(cal.apply(llm), on=KEYS, suffixes=("_h", ""))
        h = both["grade_h"].to_numpy(int)
        raw, applied = both["grade"].to_numpy(int), both["calibrated_grade"].to_numpy(int)
        assert _alpha(h, applied) >= _alpha(h, raw) - 1e-12, (method, cal.report["reason"])
        if not cal.applied:
            assert (applied == raw).all() and cal.report["reason"].startswith("not applied")


def test_isotonic_collapse_of_the_issue_is_caught_and_the_raw_grades_kept(
        human: pd.DataFrame) -> None:
    llm = io.read_labels(LLMJUDGE / "RMITIR-llama38b.qrels")
    sample, rest = _split(human, 0)
    cal = calibrate(llm=llm, human=sample, folds=5, seed=0, method="isotonic")
    forced = cal.model_copy(update={"applied": True}).apply(llm)  # what it would have done
    both = rest.merge(forced, on=KEYS, suffixes=("_h", ""))
    h, raw = both["grade_h"].to_numpy(int), both["grade"].to_numpy(int)
    assert _alpha(h, both["calibrated_grade"].to_numpy(int)) < _alpha(h, raw) - 0.1
    rep = cal.report
    assert not cal.applied and "not applied" in rep["reason"]
    assert rep["after"]["krippendorff_alpha_ordinal"] < rep["before"]["krippendorff_alpha_ordinal"]
    kept = rest.merge(cal.apply(llm), on=KEYS, suffixes=("_h", ""))
    assert (kept["calibrated_grade"] == kept["grade"]).all()


def test_spread_preserving_methods_keep_the_spread_isotonic_collapses(
        human: pd.DataFrame) -> None:
    llm = io.read_labels(LLMJUDGE / "RMITIR-llama38b.qrels")
    sample, _ = _split(human, 0)
    spread = {}
    for method in METHODS:
        cal = calibrate(llm=llm, human=sample, folds=5, seed=0, method=method)  # type: ignore[arg-type]
        forced = cal.model_copy(update={"applied": True}).apply(llm)
        spread[method] = float(forced["calibrated_grade"].astype(float).std())
    human_sd = float(sample["grade"].std())
    assert spread["thresholds"] > 0.8 * human_sd and spread["distribution"] > 0.8 * human_sd
    assert spread["isotonic"] < 0.5 * human_sd  # rounding a regression pulls toward the mean


def test_distribution_matching_gives_the_human_grade_distribution() -> None:
    rng = np.random.default_rng(4)
    h = rng.choice(4, size=2000, p=[0.45, 0.28, 0.18, 0.09])
    expected = np.clip(0.8 + 0.5 * h + rng.normal(0, 0.35, len(h)), 0, 3)  # lenient, squeezed
    frame = pd.DataFrame({"query_id": [f"q{i % 40}" for i in range(len(h))],
                          "chunk_id": [f"c{i}" for i in range(len(h))],
                          "grade": np.rint(expected).astype(int), "expected_grade": expected,
                          "status": "ok"})
    human = frame[KEYS].assign(grade=h)
    cal = calibrate(llm=frame, human=human, method="distribution", seed=0)
    assert cal.feature == "expected_grade"
    got = np.bincount(cal.predict(expected), minlength=4) / len(h)
    assert np.abs(got - np.bincount(h, minlength=4) / len(h)).max() < 0.01
    assert cal.applied and cal.report["after"]["krippendorff_alpha_ordinal"] > \
        cal.report["before"]["krippendorff_alpha_ordinal"]


@pytest.mark.parametrize("name", SETS)
def test_the_fitting_objective_equals_krippendorff(human: pd.DataFrame, name: str) -> None:
    llm = io.read_qrels(LLMJUDGE / f"{name}.qrels")
    both = human.merge(llm, on=KEYS, suffixes=("_h", "_l"))
    h, g = both["grade_h"].to_numpy(int), both["grade_l"].to_numpy(int)
    table = np.zeros((4, 4))
    np.add.at(table, (g, h), 1)
    assert alpha_from_counts(table) == pytest.approx(_alpha(h, g), abs=1e-12)
