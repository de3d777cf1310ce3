"""Calibration of LLM grades: recovers a known shift on held-out labels, claims no gain on
noise, round-trips as JSON and applies to the next night's labels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labeler import io
from labeler.reconciliation.calibrate import Calibration, calibrate, evaluate
from labeler.reconciliation.calibrate import _fit_ordinal as fit_ordinal
from labeler.errors import ConfigError, InputError


@pytest.fixture(scope="module")
def human() -> pd.DataFrame:
    return io.read_qrels(Path(__file__).parent / "data" / "llmjudge" / "test-human.qrels")


def test_a_lenient_judge_shifted_by_one_is_recovered_on_held_out_labels(
        human: pd.DataFrame) -> None:
    llm = human.assign(grade=np.minimum(human["grade"] + 1, 3))
    cal = calibrate(llm=llm, human=human, folds=5, seed=0, method="ordinal")
    rep = cal.report
    share_3 = float(np.mean(human["grade"] == 3))  # clipping merged human 2 and 3 into LLM 3
    assert rep["before"]["exact_agreement"] == pytest.approx(share_3)
    assert rep["after"]["exact_agreement"] == pytest.approx(1 - share_3, abs=0.005)
    assert rep["after"]["cohen_kappa_quadratic"] > 0.9
    assert abs(rep["after"]["mean_signed_difference"]) < 0.1 < rep["before"][
        "mean_signed_difference"]
    assert cal.mapping == {0: 0, 1: 0, 2: 1, 3: 2}
    assert len(rep["fold_mappings"]) == 5 and rep["n"] == len(human)


@pytest.mark.parametrize("method", ["ordinal", "isotonic"])
def test_random_llm_grades_gain_nothing_on_held_out_labels(human: pd.DataFrame,
                                                           method: str) -> None:
    rng = np.random.default_rng(3)
    llm = human.assign(grade=rng.integers(0, 4, len(human)))
    rep = calibrate(llm=llm, human=human, folds=5, seed=0, method=method).report  # type: ignore[arg-type]
    before, after = rep["before"], rep["after"]
    assert abs(before["cohen_kappa_quadratic"]) < 0.05
    for key in ("cohen_kappa", "cohen_kappa_quadratic"):
        assert (after[key] or 0.0) <= before[key] + 0.02
        assert (after[key] or 0.0) < 0.05   # nothing gained on held-out queries
    assert rep["applied"] is False


def test_the_fit_is_evaluated_out_of_sample(human: pd.DataFrame) -> None:
    # On noise, the mapping fitted on all labels looks better in sample than held out.
    rng = np.random.default_rng(11)
    sub = human.sample(400, random_state=0)
    llm = sub.assign(grade=rng.integers(0, 4, len(sub)))
    cal = calibrate(llm=llm, human=sub, folds=5, seed=0, method="ordinal")
    forced = cal.model_copy(update={"applied": True})  # the mapping itself, in sample
    in_sample = evaluate(forced, llm=llm, human=sub)["after"]["cohen_kappa_quadratic"] or 0.0
    assert (cal.report["after"]["cohen_kappa_quadratic"] or 0.0) < in_sample


def test_isotonic_uses_expected_grades_when_the_records_have_them(human: pd.DataFrame) -> None:
    # A judge whose votes compress the scale: integer grades lose information the
    # expected grade (vote mean) keeps.
    rng = np.random.default_rng(5)
    expected = np.clip(1.0 + 0.4 * human["grade"] + rng.normal(0, 0.05, len(human)), 0, 3)
    llm = human.assign(grade=np.rint(expected).astype(int), expected_grade=expected,
                       status="ok")
    cal = calibrate(llm=llm, human=human, method="isotonic", seed=0)
    assert cal.feature == "expected_grade"
    rep = cal.report
    assert rep["after"]["exact_agreement"] > 0.95 > rep["before"]["exact_agreement"]


def test_saved_calibration_applies_to_the_next_nights_labels(tmp_path: Path,
                                                            human: pd.DataFrame) -> None:
    llm = human.assign(grade=np.minimum(human["grade"] + 1, 3))
    cal = calibrate(llm=llm, human=human, seed=0, method="ordinal")
    path = cal.save(tmp_path / "calibration.json")
    saved = json.loads(path.read_text())
    assert saved["mapping"] == {"0": 0, "1": 0, "2": 1, "3": 2}
    assert saved["report"]["after"]["exact_agreement"] == cal.report["after"]["exact_agreement"]
    again = Calibration.load(path)
    assert again.mapping == cal.mapping
    tonight = pd.DataFrame({"query_id": ["9", "9", "9"], "chunk_id": ["a", "b", "c"],
                            "grade": pd.array([3, 1, pd.NA], dtype="Int64"),
                            "status": ["ok", "ok", "failed"]})
    out = again.apply(tonight)
    assert out["calibrated_grade"].tolist() == [2, 0, pd.NA]
    assert out["grade"].tolist() == [3, 1, pd.NA]  # the raw grade is kept
    assert "calibrated_grade" not in tonight.columns


def test_isotonic_calibration_round_trips(tmp_path: Path, human: pd.DataFrame) -> None:
    llm = human.assign(grade=np.minimum(human["grade"] + 1, 3))
    cal = calibrate(llm=llm, human=human, method="isotonic", seed=0)
    again = Calibration.load(cal.save(tmp_path / "iso.json"))
    grades = np.array([0, 1, 2, 3])
    assert again.predict(grades).tolist() == cal.predict(grades).tolist() == [0, 0, 1, 2]


def test_a_broken_calibration_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "cal.json"
    bad.write_text('{"method": "ordinal", "feature": "grade", "mapping": {"0": 7}}')
    with pytest.raises(InputError, match="not a labeler calibration file"):
        Calibration.load(bad)


def test_more_folds_than_pairs_is_a_config_error(human: pd.DataFrame) -> None:
    few = human.head(3)
    with pytest.raises(ConfigError, match="folds"):
        calibrate(llm=few, human=few, folds=5)


def test_isotonic_falls_back_to_vote_means_then_grades(human: pd.DataFrame) -> None:
    rng = np.random.default_rng(2)
    votes = [[int(np.clip(g + d, 0, 3)) for d in rng.integers(-1, 2, 3)] for g in human["grade"]]
    llm = human.assign(votes=votes, status="ok")
    cal = calibrate(llm=llm, human=human, method="isotonic", seed=0)
    assert cal.feature == "vote_mean"
    tonight = pd.DataFrame({"query_id": ["9", "9"], "chunk_id": ["a", "b"], "grade": [2, 1],
                            "status": ["ok", "ok"], "votes": [[3, 3, 3], None]})
    out = cal.model_copy(update={"applied": True}).apply(tonight)
    # the reference: scikit-learn's own isotonic fit of the human grades on the vote means,
    # asked at 3.0 (the first pair's votes) and 1.0 (the second has none: its grade), rounded
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0, y_max=3, increasing=True, out_of_bounds="clip")
    iso.fit(np.array([np.mean(v) for v in votes]), human["grade"].to_numpy(dtype=float))
    expected = np.clip(np.floor(iso.predict([3.0, 1.0]) + 0.5), 0, 3).astype(int).tolist()
    assert out["calibrated_grade"].tolist() == expected


@pytest.mark.parametrize("seed", range(6))
def test_the_ordinal_map_is_the_best_of_every_monotone_map_by_scikit_learns_kappa(
        seed: int) -> None:
    """A brute force over all 35 monotone maps, scored by scikit-learn; ties go to the map
    closest to the identity, then to the first in lexicographic order."""
    import itertools

    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    human_grades = rng.integers(0, 4, 80)
    llm = np.clip(human_grades + rng.integers(-1, 3, 80), 0, 3)  # lenient, noisy
    if seed == 5:
        llm = np.minimum(llm, 1)  # the LLM uses two grades only: many maps tie

    def key(cand: tuple[int, ...]) -> tuple[float, int]:
        mapped = np.array(cand)[llm]
        score = cohen_kappa_score(human_grades, mapped, labels=[0, 1, 2, 3], weights="quadratic")
        return (round(score, 12) if np.isfinite(score) else -np.inf,
                -sum(abs(t - g) for g, t in enumerate(cand)))

    with np.errstate(all="ignore"):
        maps = list(itertools.combinations_with_replacement(range(4), 4))
        best = max(maps, key=key)
    assert fit_ordinal(llm, human_grades)["mapping"] == dict(enumerate(best))
