"""Agreement statistics on real LLM labels (LLMJudge 2024) equal scikit-learn / krippendorff /
scipy computed directly; counts, degenerate cases, the audit and the merged label set."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_score, recall_score

from labeler import io

from labeler.reconciliation import stage as reconciliation
from labeler.reconciliation.agreement import agreement, read_llm
from labeler.errors import InputError

SUBMISSIONS = ["Olz-gpt4o", "RMITIR-llama38b", "willia-umbrela1"]


@pytest.fixture(scope="module")
def llmjudge() -> Path:
    return Path(__file__).parent / "data" / "llmjudge"


@pytest.fixture(scope="module")
def human(llmjudge: Path) -> pd.DataFrame:
    return io.read_qrels(llmjudge / "test-human.qrels")


def _aligned(llm: pd.DataFrame, human: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    both = human.merge(llm, on=["query_id", "chunk_id"], suffixes=("_h", "_l"))
    return both["grade_h"].to_numpy(int), both["grade_l"].to_numpy(int)


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_statistics_equal_the_libraries_on_real_llm_labels(llmjudge: Path, human: pd.DataFrame,
                                                           name: str) -> None:
    path = llmjudge / f"{name}.qrels"
    r = agreement(llm=path, human=llmjudge / "test-human.qrels", bootstrap=0)
    h, ll = _aligned(io.read_qrels(path), human)
    assert r.n == len(h) == 4423
    assert r.exact_agreement == pytest.approx(np.mean(h == ll), abs=1e-12)
    labels = [0, 1, 2, 3]
    assert r.cohen_kappa == pytest.approx(cohen_kappa_score(h, ll, labels=labels), abs=1e-12)
    assert r.cohen_kappa_linear == pytest.approx(
        cohen_kappa_score(h, ll, labels=labels, weights="linear"), abs=1e-12)
    assert r.cohen_kappa_quadratic == pytest.approx(
        cohen_kappa_score(h, ll, labels=labels, weights="quadratic"), abs=1e-12)
    assert r.krippendorff_alpha_ordinal == pytest.approx(krippendorff.alpha(
        reliability_data=[h, ll], level_of_measurement="ordinal", value_domain=labels),
        abs=1e-12)
    assert r.confusion_matrix == confusion_matrix(h, ll, labels=labels).tolist()
    assert r.binary_agreement == pytest.approx(np.mean((h >= 2) == (ll >= 2)), abs=1e-12)
    assert r.binary_precision == pytest.approx(precision_score(h >= 2, ll >= 2), abs=1e-12)
    assert r.binary_recall == pytest.approx(recall_score(h >= 2, ll >= 2), abs=1e-12)
    assert r.binary_kappa == pytest.approx(cohen_kappa_score(h >= 2, ll >= 2), abs=1e-12)
    assert r.spearman == pytest.approx(stats.spearmanr(h, ll).statistic, abs=1e-12)
    assert r.mean_signed_difference == pytest.approx(np.mean(ll - h), abs=1e-12)
    assert sum(map(sum, r.confusion_matrix)) == r.n
    assert r.grade_counts["human"] == [2005, 1233, 808, 377]  # the published distribution


def test_per_query_figures_match_a_direct_computation(llmjudge: Path, human: pd.DataFrame) -> None:
    path = llmjudge / "Olz-gpt4o.qrels"
    r = agreement(llm=path, human=human, bootstrap=0)
    llm = io.read_qrels(path)
    for qid in human["query_id"].unique():
        h, ll = _aligned(llm, human.loc[human["query_id"] == qid])
        got = r.per_query[qid]
        assert got["n"] == len(h)
        assert got["exact_agreement"] == pytest.approx(np.mean(h == ll))
        assert got["mean_signed_difference"] == pytest.approx(np.mean(ll - h))
        assert got["mean_absolute_difference"] == pytest.approx(np.mean(np.abs(ll - h)))
        assert got["cohen_kappa_quadratic"] == pytest.approx(
            cohen_kappa_score(h, ll, labels=[0, 1, 2, 3], weights="quadratic"), abs=1e-12)
    assert sum(q["n"] for q in r.per_query.values()) == r.n
    assert len(r.per_query) == 25
    # a query where both give one grade: kappa is undefined there, null, not NaN or 0
    one = pd.DataFrame({"query_id": ["a"] * 3 + ["b"] * 3, "chunk_id": list("xyzxyz"),
                        "grade": [2, 2, 2, 0, 1, 3]})
    llm_one = one.assign(grade=[2, 2, 2, 1, 1, 3])
    per = agreement(llm=llm_one, human=one, bootstrap=0).per_query
    assert per["a"]["cohen_kappa_quadratic"] is None
    assert per["b"]["cohen_kappa_quadratic"] == pytest.approx(
        cohen_kappa_score([0, 1, 3], [1, 1, 3], labels=[0, 1, 2, 3], weights="quadratic"))


def test_failed_llm_labels_are_left_out_and_counted(llmjudge: Path, human: pd.DataFrame) -> None:
    llm = io.read_labels(llmjudge / "willia-umbrela1.qrels")
    llm.loc[:9, "grade"] = pd.NA
    llm.loc[:9, "status"] = "failed"
    extra = pd.DataFrame({"query_id": ["qX"], "chunk_id": ["pX"], "grade": [2], "status": ["ok"]})
    llm = pd.concat([llm.iloc[:-5], extra], ignore_index=True)  # 5 human-only, 1 LLM-only
    before = llm.copy()
    r = agreement(llm=llm, human=human, bootstrap=0)
    pd.testing.assert_frame_equal(llm, before)  # the caller's frame is untouched
    assert (r.n, r.n_llm_failed, r.n_only_llm, r.n_only_human) == (4423 - 15, 10, 1, 15)
    ok = llm.loc[llm["status"] == "ok"].astype({"grade": "int64"})
    h, ll = _aligned(ok, human)
    assert r.cohen_kappa_quadratic == pytest.approx(
        cohen_kappa_score(h, ll, labels=[0, 1, 2, 3], weights="quadratic"))


def test_undefined_statistics_are_null_in_json_not_nan() -> None:
    same = pd.DataFrame({"query_id": ["1"] * 4, "chunk_id": list("abcd"), "grade": [1] * 4})
    r = agreement(llm=same, human=same, bootstrap=20)
    assert r.exact_agreement == 1.0
    assert r.cohen_kappa is None and r.cohen_kappa_quadratic is None
    assert r.krippendorff_alpha_ordinal is None and r.spearman is None
    assert r.binary_precision is None  # nothing predicted relevant
    text = json.dumps(r.to_dict(), allow_nan=False)  # raises on NaN
    assert '"cohen_kappa": null' in text
    assert "Cohen's kappa            n/a" in r.to_text()  # one way to write a missing value


def test_bootstrap_ci_is_seeded_and_brackets_the_estimate(llmjudge: Path,
                                                          human: pd.DataFrame) -> None:
    sub = human.loc[human["query_id"].isin(["q49", "q0", "q1", "q2"])]
    path = llmjudge / "RMITIR-llama38b.qrels"
    a = agreement(llm=path, human=sub, bootstrap=60, seed=7)
    b = agreement(llm=path, human=sub, bootstrap=60, seed=7)
    c = agreement(llm=path, human=sub, bootstrap=60, seed=8)
    assert a.ci == b.ci
    assert a.ci != c.ci
    for key in ("cohen_kappa", "cohen_kappa_quadratic", "krippendorff_alpha_ordinal"):
        lo, hi = a.ci[key]
        assert lo < getattr(a, key) < hi
    assert a.ci["seed"] == 7 and a.ci["n_resamples"] == 60


def test_query_bootstrap_is_wider_than_pair_bootstrap(llmjudge: Path, human: pd.DataFrame) -> None:
    # Pairs of one query are not independent: resampling queries shows more uncertainty.
    path = llmjudge / "Olz-gpt4o.qrels"
    pair = agreement(llm=path, human=human, bootstrap=60, unit="pair").ci
    query = agreement(llm=path, human=human, bootstrap=60, unit="query").ci
    width = lambda ci: ci["cohen_kappa_quadratic"][1] - ci["cohen_kappa_quadratic"][0]  # noqa: E731
    assert width(query) > 2 * width(pair)


def test_out_of_range_llm_grade_is_refused_with_file_and_line(llmjudge: Path) -> None:
    path = llmjudge / "RMITIR-llama70B-q0.qrels"  # a real label set that contains a 5
    lines = path.read_text().splitlines()
    line = next(i for i, raw in enumerate(lines, 1) if raw.split()[3] == "5")
    with pytest.raises(InputError) as err:
        agreement(llm=path, human=llmjudge / "test-human.qrels", bootstrap=0)
    assert f"RMITIR-llama70B-q0.qrels, line {line}" in str(err.value)
    assert "got 5" in str(err.value)
    mapped = read_llm(path, grade_map={"5": 3})
    assert mapped["grade"].max() == 3


def test_no_overlap_names_both_files_and_shows_the_ids(tmp_path: Path, llmjudge: Path) -> None:
    other = tmp_path / "other.qrels"
    other.write_text("1001 0 D42 2\n1001 0 D43 0\n")
    with pytest.raises(InputError) as err:
        agreement(llm=other, human=llmjudge / "test-human.qrels")
    msg = str(err.value)
    assert "other.qrels" in msg and "test-human.qrels" in msg
    assert "1001/D42" in msg and "q49/p3659" in msg


def test_overlap_of_failed_labels_only_says_so(human: pd.DataFrame) -> None:
    llm = human.head(3).assign(grade=pd.NA, status="failed")
    with pytest.raises(InputError, match="all have failed LLM labels"):
        agreement(llm=llm, human=human)


def test_disagreements_lists_the_largest_gaps_first_with_texts(llmjudge: Path,
                                                               human: pd.DataFrame) -> None:
    path = llmjudge / "RMITIR-llama38b.qrels"
    h, ll = _aligned(io.read_qrels(path), human)
    pairs = human[["query_id", "chunk_id"]].assign(query=lambda d: "text of " + d["query_id"],
                                                  chunk=lambda d: "passage " + d["chunk_id"])
    audit = reconciliation.disagreements(llm=path, human=human, min_gap=2, pairs=pairs)
    assert len(audit) == int(np.sum(np.abs(ll - h) >= 2))
    assert list(audit.columns[:5]) == ["query_id", "chunk_id", "human", "llm", "gap"]
    assert (audit["gap"] == audit["llm"] - audit["human"]).all()
    gaps = audit["gap"].abs().to_numpy()
    assert (np.diff(gaps) <= 0).all() and gaps.min() >= 2
    row = audit.iloc[0]
    assert row["query"] == f"text of {row['query_id']}"
    assert row["chunk"] == f"passage {row['chunk_id']}"


def test_merge_prefers_human_and_keeps_failed_pairs_failed() -> None:
    llm = pd.DataFrame({"query_id": ["1", "1", "1", "2"], "chunk_id": ["a", "b", "c", "d"],
                        "grade": pd.array([3, 1, pd.NA, pd.NA], dtype="Int64"),
                        "status": ["ok", "ok", "failed", "failed"],
                        "error": ["", "", "timeout", "timeout"]})
    human = pd.DataFrame({"query_id": ["1", "2", "3"], "chunk_id": ["a", "d", "e"],
                          "grade": [0, 2, 1]})
    m = reconciliation.merge(llm=llm, human=human).set_index("chunk_id")
    assert m["source"].to_dict() == {"a": "human", "b": "llm", "c": "llm", "d": "human",
                                     "e": "human"}
    assert m["grade"].tolist() == [0, 1, pd.NA, 2, 1]
    assert m["status"].tolist() == ["ok", "ok", "failed", "ok", "ok"]
    assert m.loc["a", "llm_grade"] == 3 and m.loc["a", "human_grade"] == 0
    assert m.loc["c", "error"] == "timeout"


def test_merged_labels_round_trip_through_the_label_writer(tmp_path: Path, llmjudge: Path,
                                                           human: pd.DataFrame) -> None:
    half = human.iloc[::2]
    merged = reconciliation.merge(llm=llmjudge / "Olz-gpt4o.qrels", human=half)
    back = io.read_labels(io.write_labels(merged, tmp_path / "merged.jsonl"))
    assert len(back) == 4423
    assert back["source"].value_counts().to_dict() == {"human": len(half),
                                                       "llm": 4423 - len(half)}
    qrels = io.read_qrels(io.write_qrels(merged, tmp_path / "merged.qrels"))
    h = qrels.merge(half, on=["query_id", "chunk_id"], suffixes=("", "_h"))
    assert (h["grade"] == h["grade_h"]).all()


def test_a_label_frame_with_an_ok_label_but_no_grade_is_refused() -> None:
    llm = pd.DataFrame({"query_id": ["1", "1"], "chunk_id": ["a", "b"],
                        "grade": pd.array([2, pd.NA], dtype="Int64"), "status": ["ok", "ok"]})
    with pytest.raises(InputError, match="row 2"):
        read_llm(llm)


def test_reconcile_reads_and_checks_each_label_set_once(llmjudge: Path) -> None:
    """Agreement, calibration, audit and merge inside one reconcile all work on the same
    checked labels — the figures are those of the files read by hand (scikit-learn for the
    kappa); what comes back is plain pandas, and a frame the user edits is checked again."""
    from sklearn.metrics import cohen_kappa_score

    def by_hand(path: Path) -> dict[tuple[str, str], int]:
        rows = (line.split() for line in path.read_text().splitlines() if line.strip())
        return {(r[0], r[2]): int(r[3]) for r in rows}

    llm_file, human_file = llmjudge / "willia-umbrela1.qrels", llmjudge / "test-human.qrels"
    llm, human = by_hand(llm_file), by_hand(human_file)
    both = sorted(set(llm) & set(human))
    rec = reconciliation.reconcile(llm=llm_file, human=human_file, calibrate=True,
                                   audit=True, bootstrap=50)
    agreement = rec.agreement.to_dict()
    assert agreement["n"] == len(both)
    assert agreement["cohen_kappa"] == pytest.approx(
        cohen_kappa_score([llm[k] for k in both], [human[k] for k in both]), abs=1e-12)
    merged = {(q, c): (int(g), int(lg), int(hg)) for q, c, g, lg, hg in rec.merged[
        ["query_id", "chunk_id", "grade", "llm_grade", "human_grade"]].itertuples(index=False)}
    assert merged == {k: (human[k], llm[k], human[k]) for k in both}   # human wins
    for q, c, h, g in rec.audit[["query_id", "chunk_id", "human", "llm"]].itertuples(
            index=False):
        assert (int(h), int(g)) == (human[(q, c)], llm[(q, c)])
    assert type(rec.merged) is pd.DataFrame and type(rec.audit) is pd.DataFrame
    bad = read_llm(llmjudge / "willia-umbrela1.qrels")
    bad.loc[0, "grade"] = 9   # a frame the user edits is checked again
    with pytest.raises(InputError):
        reconciliation.reconcile(llm=bad, human=llmjudge / "test-human.qrels")
