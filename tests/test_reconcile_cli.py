"""`labeler reconcile` and `labeler sample` end to end on real LLMJudge label sets."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from labeler import io
from labeler.reconciliation.agreement import agreement
from labeler.cli import main

DATA = Path(__file__).parent / "data" / "llmjudge"
HUMAN = DATA / "test-human.qrels"
SPEC_KEYS = ("n", "exact_agreement", "cohen_kappa", "cohen_kappa_linear", "cohen_kappa_quadratic",
             "krippendorff_alpha_ordinal", "binary_agreement", "mean_signed_difference",
             "confusion_matrix")


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_report_holds_every_spec_key_with_the_library_values(tmp_path: Path) -> None:
    llm = DATA / "Olz-gpt4o.qrels"
    res = _run("reconcile", "--llm", llm, "--human", HUMAN, "--out", tmp_path / "merged.jsonl",
               "--report-json", tmp_path / "agreement.json", "--qrels-out",
               tmp_path / "merged.qrels", "--bootstrap", "40")
    assert res.exit_code == 0, res.stderr
    report = json.loads((tmp_path / "agreement.json").read_text())
    lib = agreement(llm=llm, human=HUMAN, bootstrap=40).to_dict()
    for key in SPEC_KEYS:
        assert report[key] == lib[key], key
    assert report["n"] == 4423 and len(report["confusion_matrix"]) == 4
    assert report["ci"]["n_resamples"] == 40 and report["ci"]["seed"] == 0
    assert len(report["per_query"]) == 25
    for line in ("exact agreement", "quadratic weighted", "Krippendorff", "confusion matrix",
                 "human 3"):
        assert line in res.stdout
    merged = io.read_labels(tmp_path / "merged.jsonl")
    assert (merged["source"] == "human").all() and len(merged) == 4423
    assert io.read_qrels(tmp_path / "merged.qrels").shape == (4423, 3)


def test_json_flag_prints_one_json_object(tmp_path: Path) -> None:
    res = _run("reconcile", "--llm", DATA / "willia-umbrela1.qrels", "--human", HUMAN,
               "--out", tmp_path / "m.jsonl", "--bootstrap", "0", "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert all(k in data for k in SPEC_KEYS)
    assert data["ci"] is None and data["merged"]["human"] == 4423


def test_a_label_set_with_a_5_is_refused_with_file_line_and_exit_2(tmp_path: Path) -> None:
    bad = DATA / "RMITIR-llama70B-q0.qrels"
    res = _run("reconcile", "--llm", bad, "--human", HUMAN, "--out", tmp_path / "m.jsonl")
    assert res.exit_code == 2
    assert "RMITIR-llama70B-q0.qrels, line 88" in res.stderr and "got 5" in res.stderr
    assert "--grade-map-llm 4=3" in res.stderr  # the hint names this command's flag
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "m.jsonl").exists()
    mapped = _run("reconcile", "--llm", bad, "--human", HUMAN, "--out", tmp_path / "m.jsonl",
                  "--grade-map-llm", "5=3", "--bootstrap", "0")
    assert mapped.exit_code == 0, mapped.stderr


def test_a_human_grade_of_10_is_refused_too(tmp_path: Path) -> None:
    human = tmp_path / "human.qrels"
    human.write_text("q0 0 p3021 2\nq0 0 p8935 10\n")
    res = _run("reconcile", "--llm", DATA / "Olz-gpt4o.qrels", "--human", human,
               "--out", tmp_path / "m.jsonl")
    assert res.exit_code == 2
    assert "human.qrels, line 2" in res.stderr and "got 10" in res.stderr


def test_ids_that_do_not_overlap_exit_2_naming_both_files(tmp_path: Path) -> None:
    llm = tmp_path / "numeric-ids.qrels"
    llm.write_text("49 0 3659 3\n49 0 11027 2\n")
    res = _run("reconcile", "--llm", llm, "--human", HUMAN, "--out", tmp_path / "m.jsonl")
    assert res.exit_code == 2
    assert "numeric-ids.qrels" in res.stderr and "test-human.qrels" in res.stderr
    assert "49/3659" in res.stderr and "q49/p3659" in res.stderr


def test_calibrate_then_apply_the_saved_mapping_next_night(tmp_path: Path) -> None:
    human = io.read_qrels(HUMAN)
    lenient = human.assign(grade=(human["grade"] + 1).clip(upper=3), status="ok")
    sample, tonight = human.iloc[:2000], lenient.iloc[2000:]
    io.write_labels(lenient.iloc[:2000], tmp_path / "night1.jsonl")
    io.write_qrels(sample, tmp_path / "sample.qrels")
    res = _run("reconcile", "--llm", tmp_path / "night1.jsonl",
               "--human", tmp_path / "sample.qrels",
               "--out", tmp_path / "m1.jsonl", "--calibrate", "--calibration-out",
               tmp_path / "cal.json", "--report", tmp_path / "r1.json", "--bootstrap", "0")
    assert res.exit_code == 0, res.stderr
    rep = json.loads((tmp_path / "r1.json").read_text())["calibration"]
    assert rep["after"]["exact_agreement"] > 0.85 > rep["before"]["exact_agreement"]
    assert "quadratic kappa" in res.stdout and "->" in res.stdout
    # night 2: new LLM labels, the same small human sample (which does not cover them)
    both = pd.concat([lenient.iloc[:100], tonight])
    io.write_labels(both, tmp_path / "night2.jsonl")
    res = _run("reconcile", "--llm", tmp_path / "night2.jsonl", "--human",
               tmp_path / "sample.qrels", "--out", tmp_path / "m2.jsonl",
               "--calibration-in", tmp_path / "cal.json", "--bootstrap", "0")
    assert res.exit_code == 0, res.stderr
    merged = io.read_labels(tmp_path / "m2.jsonl")
    llm_only = merged.loc[merged["source"] == "llm-calibrated"]
    assert len(llm_only) == len(tonight)
    truth = llm_only.merge(human, on=["query_id", "chunk_id"], suffixes=("", "_true"))
    assert (truth["grade"] == truth["grade_true"]).mean() > 0.85


def test_calibrate_and_calibration_in_together_is_a_config_error(tmp_path: Path) -> None:
    res = _run("reconcile", "--llm", DATA / "Olz-gpt4o.qrels", "--human", HUMAN,
               "--out", tmp_path / "m.jsonl", "--calibrate",
               "--calibration-in", tmp_path / "c.json")
    assert res.exit_code == 2 and "not both" in res.stderr


def test_audit_lists_disagreements_with_texts(tmp_path: Path) -> None:
    human = io.read_qrels(HUMAN)
    pairs = human.assign(query="query " + human["query_id"], chunk="passage " + human["chunk_id"])
    io.write_table(pairs[["query_id", "query", "chunk_id", "chunk"]], tmp_path / "pairs.csv")
    res = _run("reconcile", "--llm", DATA / "RMITIR-llama38b.qrels", "--human", HUMAN,
               "--out", tmp_path / "m.jsonl", "--audit", tmp_path / "audit.csv", "--min-gap", "3",
               "--pairs", tmp_path / "pairs.csv", "--bootstrap", "0")
    assert res.exit_code == 0, res.stderr
    audit = pd.read_csv(tmp_path / "audit.csv", dtype=str)
    assert len(audit) > 0 and set(audit["gap"].astype(int).abs()) == {3}
    assert (audit["chunk"] == "passage " + audit["chunk_id"]).all()


@pytest.mark.parametrize("show", [False, True])
def test_sample_writes_a_blind_sheet_skipping_labelled_pairs(tmp_path: Path, show: bool) -> None:
    done = io.read_qrels(HUMAN).iloc[:1500]
    io.write_qrels(done, tmp_path / "done.qrels")
    args = ["sample", "--labels", DATA / "willia-umbrela1.qrels", "--n", "40", "--out",
            tmp_path / "todo.csv", "--human", tmp_path / "done.qrels", "--seed", "3"]
    res = _run(*args, *(["--show-llm-grade"] if show else []))
    assert res.exit_code == 0, res.stderr
    sheet = pd.read_csv(tmp_path / "todo.csv", dtype=str, keep_default_na=False)
    assert len(sheet) == 40 and (sheet["grade"] == "").all()
    assert ("llm_grade" in sheet.columns) is show
    seen = set(zip(done["query_id"], done["chunk_id"]))
    assert not any(k in seen for k in zip(sheet["query_id"], sheet["chunk_id"]))
    assert "40 pairs" in res.stdout


def test_the_older_report_flag_still_writes_the_json_and_says_report_json(
        tmp_path: Path) -> None:
    common = ["reconcile", "--llm", DATA / "Olz-gpt4o.qrels", "--human", HUMAN, "--bootstrap",
              "0"]
    new = _run(*common, "--out", tmp_path / "a.jsonl", "--report-json", tmp_path / "new.json")
    old = _run(*common, "--out", tmp_path / "b.jsonl", "--report", tmp_path / "old.json")
    assert new.exit_code == 0 and old.exit_code == 0, old.stderr
    assert "deprecated" not in new.stderr
    assert "--report is deprecated; use --report-json" in old.stderr
    want = json.loads((tmp_path / "new.json").read_text())
    assert json.loads((tmp_path / "old.json").read_text())["n"] == want["n"] == 4423
    assert "--report FILE" not in _run("reconcile", "--help").stdout
