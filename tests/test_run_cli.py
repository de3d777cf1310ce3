"""`labeler run CONFIG.toml` against the local fake OpenAI server: outputs, cache, drift, lock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from labeler import io
from labeler.cli import main
from labelkit import write_job
from labeler.pipeline.rundir import hold_lock
from labeler.testing import FaultPlan

SECRET = "sk-test-never-write-me-0123456789"


def _job(tmp_path: Path, base_url: str, cache: str = "cache", extra: str = "",
         key_env: str | None = None) -> Path:
    return write_job(tmp_path, f"""\
out_dir = "out"
cache_dir = "{cache}"
k = [10, 5]
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 2
[judge]
model = "fake-judge"
base_url = "{base_url}"
{f'api_key_env = "{key_env}"' if key_env else ""}
concurrency = 4
max_retries = 1
{extra}
[human]
qrels = "data/human.qrels"
bootstrap = 0
""")


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", *args], catch_exceptions=False)


def _latest(out: Path) -> Path:
    return out / (out / "latest.txt").read_text().strip()


def test_nightly_job_outputs_cache_and_drift(tmp_path: Path, fake_llm,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIGHTLY_KEY", SECRET)
    fake_llm.set(api_key=SECRET)  # answers 401 to any other key: api_key_env is honoured
    config = _job(tmp_path, fake_llm.base_url, key_env="NIGHTLY_KEY")
    first = _run(str(config))
    assert first.exit_code == 0, first.output
    out = tmp_path / "out"
    run1 = _latest(out)
    n_pairs = len(io.read_labels(run1 / "labels.jsonl"))
    assert fake_llm.calls == n_pairs > 0
    for name in ("labels.jsonl", "labels.qrels", "merged.jsonl", "merged.qrels",
                 "agreement.json", "scores.json", "comparison.json", "drift.json",
                 "manifest.json", "run.log", "report/report.html", "report/report.md",
                 "report/report.json"):
        assert (run1 / name).is_file(), name
    manifest = json.loads((run1 / "manifest.json").read_text())
    assert manifest["counts"]["pairs"] == n_pairs and manifest["counts"]["judged"] == n_pairs
    assert manifest["judge"]["api_key_env"] == "NIGHTLY_KEY"
    assert manifest["config"]["hash"].startswith("sha256:")
    assert manifest["packages"]["pandas"] and manifest["python"]
    assert set(json.loads((run1 / "comparison.json").read_text())["runs"]) == {
        "bm25tuned_p", "p_exp_bert", "ICT-CKNRM_B"}
    assert (out / "latest").resolve() == run1.resolve()
    assert "report:" in first.output and "bm25tuned_p" in first.output

    # the same night's job again: all from the cache, nothing drifted
    fake_llm.reset()
    second = _run(str(config), "--fail-on-drift")
    assert second.exit_code == 0, second.output
    assert fake_llm.calls == 0
    run2 = _latest(out)
    assert run2 != run1
    drift = json.loads((run2 / "drift.json").read_text())
    assert drift["previous"] == run1.name
    assert drift["labels"]["n_compared"] == n_pairs and drift["labels"]["n_changed"] == 0
    assert drift["drifted"] is False

    # the model changes its mind (fresh cache): every grade that was not 3 drifts
    fake_llm.set(grade_fn=lambda text: 3)
    before = io.read_labels(run2 / "labels.jsonl")
    expect_changed = int((before["grade"] != 3).sum())
    third = _run(str(_job(tmp_path, fake_llm.base_url, cache="cache-2", key_env="NIGHTLY_KEY")),
                 "--fail-on-drift",
                 "--drift-threshold", "1")
    assert third.exit_code == 4, third.output
    assert "drift past the thresholds" in third.stderr
    table = [line for line in third.output.splitlines() if "LLM grades changed" in line]
    assert len(table) == 1 and "YES" in table[0] and "5.0%" in table[0]
    lines = third.output.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("drift vs"))
    block = lines[start:next(i for i, x in enumerate(lines) if x.startswith("report:"))]
    assert len(block) <= 10 and max(map(len, block)) < 130  # a short table, not one long line
    run3 = _latest(out)
    html = (run3 / "report" / "report.html").read_text()
    assert "Drift since the previous run" in html and run2.name in html
    assert "Drift since the previous run" in (run3 / "report" / "report.md").read_text()
    drift = json.loads((run3 / "drift.json").read_text())
    assert drift["previous"] == run2.name and drift["drifted"] is True
    assert drift["labels"]["n_changed"] == expect_changed > 0
    assert drift["thresholds"]["max_ndcg_delta"] == 1.0  # --drift-threshold
    assert drift["reasons"][0].endswith("LLM grades changed "
                                        f"({expect_changed / n_pairs:.1%} > 5.0%)")
    assert len(drift["labels"]["changed"]) == expect_changed
    assert all(c["current"] == 3 for c in drift["labels"]["changed"])

    # the key itself is written nowhere
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="ignore"), path


def test_failed_pairs_exit_3_with_every_pair_in_the_output(tmp_path: Path, fake_llm) -> None:
    fake_llm.set(faults=FaultPlan(malformed=0.3))
    config = _job(tmp_path, fake_llm.base_url)
    config.write_text(config.read_text().replace("max_retries = 1", "max_retries = 0"))
    result = _run(str(config), "--out", str(tmp_path / "elsewhere"))
    assert result.exit_code == 3, result.output
    assert not (tmp_path / "out").exists()  # --out overrides out_dir
    labels = io.read_labels(_latest(tmp_path / "elsewhere") / "labels.jsonl")
    failed = labels["status"] == "failed"
    assert failed.any() and (~failed).any()
    assert labels.loc[failed, "grade"].isna().all()
    assert "pairs failed" in result.stderr


def test_config_errors_name_the_key_and_exit_2(tmp_path: Path) -> None:
    config = _job(tmp_path, "http://127.0.0.1:9/v1", extra="concurrency = 0\n")
    config.write_text(config.read_text().replace("concurrency = 4\n", ""))
    result = _run(str(config))
    assert result.exit_code == 2
    assert "job.toml: judge.concurrency: Input should be greater than 0" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_a_second_concurrent_run_is_refused(tmp_path: Path, fake_llm) -> None:
    config = _job(tmp_path, fake_llm.base_url)
    with hold_lock(tmp_path / "out"):
        result = _run(str(config))
    assert result.exit_code == 2
    assert "another run holds the lock" in result.stderr
    assert fake_llm.calls == 0
    assert not (tmp_path / "out" / "runs").exists()


def test_unreachable_endpoint_exits_2_and_leaves_nothing_behind(tmp_path: Path) -> None:
    config = _job(tmp_path, "http://127.0.0.1:9/v1")
    result = _run(str(config), "--log-level", "error")
    assert result.exit_code == 2, result.output
    assert "127.0.0.1:9" in result.stderr and "run failed" in result.stderr
    out = tmp_path / "out"
    assert not (out / "latest.txt").exists()
    assert not (out / "runs").exists()  # a job that never started leaves no run directory


def test_a_named_key_variable_that_is_unset_stops_before_the_run(tmp_path: Path,
                                                                 fake_llm) -> None:
    result = _run(str(_job(tmp_path, fake_llm.base_url, key_env="NIGHTLY_KEY")))
    assert result.exit_code == 2
    assert "judge.api_key_env: the variable NIGHTLY_KEY is not set" in result.stderr
    assert fake_llm.calls == 0 and not (tmp_path / "out").exists()


def test_summary_strips_control_characters_from_run_tags(tmp_path: Path) -> None:
    from labeler.cli.run_cmd import summary_text
    from labeler.pipeline.drift import compute_drift
    from labeler.labelling.result import LabelResult, LabelSummary
    from labeler.pipeline.nightly import RunOutcome
    from labeler.scoring.results import score

    labels = io.read_labels(Path(__file__).parent / "data" / "llmjudge" / "Olz-gpt4o.qrels")
    qrels = {"q1": {"d1": 1, "d2": 0}}
    scores = score(qrels, {"evil\x1b[2Jtag": {"q1": {"d2": 2.0, "d1": 1.0}}}, k=10)
    summary = LabelSummary(model="lexical", prompt_id="default-0", n_pairs=2, judged=2,
                           cached=0, failed=0, input_tokens=0, output_tokens=0, cost_usd=0.0,
                           wall_s=0.1, calls=0)
    outcome = RunOutcome(run_dir=tmp_path, files={}, manifest={},
                         drift=compute_drift(None, labels, None, scores.to_dict()),
                         labels=LabelResult(records=labels, summary=summary), scores=scores)
    text = summary_text(outcome)
    assert "evil[2Jtag: ndcg@10 0.6309" in text and "\x1b" not in text
