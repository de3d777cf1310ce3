"""Judges over time: anchors re-judged every `labeler run`, the guard that holds `latest` back
when the judge changed (exit 4, `--accept`), and "would the leaderboard change?" — four nights
against the local fake OpenAI server."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result
from sklearn.metrics import cohen_kappa_score

from labeler import io
from labeler.cli import main
from labeler.judges.prompts import load_prompt
from labeler.statistics.ranking import tau_ap
from labeler.testing import FakeLLMServer
from labeler.testing.behaviour import question_text
from labelkit import write_job

N_ANCHORS = 60


def _job(tmp_path: Path, base_url: str, *, cache: str = "cache", prompt: str = "default"
         ) -> Path:
    return write_job(tmp_path, f"""\
out_dir = "out"
cache_dir = "{cache}"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 3
[judge]
model = "fake-judge"
base_url = "{base_url}"
prompt = "{prompt}"
concurrency = 4
max_retries = 1
backoff_base = 0
backoff_max = 0
[human]
qrels = "data/human.qrels"
bootstrap = 200
[drift]
anchors = "anchors.jsonl"
[statistics]
bootstrap = 200
""")


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _latest(out: Path) -> Path:
    return out / (out / "latest.txt").read_text().strip()


def _newest(out: Path) -> Path:
    return sorted((out / "runs").iterdir())[-1]


def _drift(run: Path) -> dict:
    return json.loads((run / "drift.json").read_text())


def _anchor_grades(srv: FakeLLMServer, anchors: pd.DataFrame) -> dict[str, int]:
    """chunk_id -> the grade the server decided for each anchor asked this night (requests
    found by their exact prompt text)."""
    asked = {question_text(r["body"]["messages"]): r["grade"] for r in srv.requests
             if r["status"] == 200}
    prompt = load_prompt("default")
    out = {}
    for a in anchors.itertuples():
        text = question_text(prompt.render(a.query, a.chunk))
        if text in asked:
            out[str(a.chunk_id)] = asked[text]
    return out


@pytest.fixture
def anchors_file(tmp_path: Path) -> Path:
    write_job(tmp_path, "")  # the sample data in tmp_path/data
    got = _cli("sample", "--anchors", str(N_ANCHORS), "--human", str(tmp_path / "data/human.qrels"),
               "--queries", str(tmp_path / "data/queries.tsv"),
               "--corpus", str(tmp_path / "data/corpus.jsonl"),
               "--out", str(tmp_path / "anchors.jsonl"))
    assert got.exit_code == 0, got.output
    return tmp_path / "anchors.jsonl"


def test_four_nights_same_judge_silent_change_accept_and_prompt_change(
        tmp_path: Path, fake_llm: FakeLLMServer, anchors_file: Path) -> None:
    anchors = io.read_pairs(anchors_file)
    assert len(anchors) == N_ANCHORS
    assert anchors["grade"].astype(int).value_counts().to_dict() == {0: 15, 1: 15, 2: 15, 3: 15}
    out = tmp_path / "out"
    config = _job(tmp_path, fake_llm.base_url)

    # night 1: every pair and every anchor asked
    first = _cli("run", str(config))
    assert first.exit_code == 0, first.output
    run1 = _latest(out)
    n_pairs = len(io.read_labels(run1 / "labels.jsonl"))
    assert fake_llm.calls == n_pairs + N_ANCHORS
    d1 = _drift(run1)
    assert d1["judge_changed"] is False and d1["anchors"]["since"] is None
    assert d1["anchors"]["identity"]["system_fingerprints"] == ["fake"]
    assert d1["anchors"]["identity"]["reported_models"] == ["fake-judge"]
    # agreement with the human grades, checked against scikit-learn and krippendorff
    judged = io.read_labels(run1 / "anchors.jsonl").merge(
        anchors[["query_id", "chunk_id", "grade"]].astype({"grade": int}),
        on=["query_id", "chunk_id"], suffixes=("_llm", "_human"))
    h, m = judged["grade_human"].to_numpy(), judged["grade_llm"].astype(int).to_numpy()
    agree = d1["anchors"]["agreement"]
    assert agree["n"] == N_ANCHORS
    assert agree["cohen_kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(h, m, weights="quadratic", labels=[0, 1, 2, 3]))
    assert agree["krippendorff_alpha_ordinal"] == pytest.approx(krippendorff.alpha(
        reliability_data=np.vstack([h, m]).astype(float), level_of_measurement="ordinal",
        value_domain=[0, 1, 2, 3]))
    lo, hi = agree["ci"]["krippendorff_alpha_ordinal"]
    assert lo <= agree["krippendorff_alpha_ordinal"] <= hi
    cost = d1["anchors"]["cost"]
    assert cost["calls"] == N_ANCHORS and cost["input_tokens"] > 0
    assert f"anchors' cost: {N_ANCHORS} calls" in first.output

    # night 2: the same judge; the pairs come from the cache, the anchors are asked again
    fake_llm.reset()
    second = _cli("run", str(config))
    assert second.exit_code == 0, second.output
    assert fake_llm.calls == N_ANCHORS  # only the anchors: never from the cache
    run2 = _latest(out)
    assert run2 != run1
    night2 = _anchor_grades(fake_llm, anchors)
    assert len(night2) == N_ANCHORS
    since = _drift(run2)["anchors"]["since"]
    assert since["run"] == run1.name and since["n_compared"] == N_ANCHORS
    assert since["n_changed"] == 0 and since["changed_share"] == 0.0
    assert "judge unchanged since the accepted run" in second.output

    # night 3: the server changes silently (new fingerprint, 30% of grades move)
    fake_llm.reset()
    fake_llm.set(fingerprint="fp-2024-new", shift=0.3)
    third = _cli("run", str(_job(tmp_path, fake_llm.base_url, cache="cache-3")))
    assert third.exit_code == 4, third.output
    assert "--accept" in third.stderr and "judge changed" in third.stderr
    assert _latest(out) == run2  # latest stays on the accepted run
    run3 = _newest(out)
    assert run3 != run2 and (run3 / "manifest.json").is_file()
    night3 = _anchor_grades(fake_llm, anchors)
    flipped = sum(night3[c] != night2[c] for c in night2)
    assert 0.15 * N_ANCHORS < flipped < 0.45 * N_ANCHORS
    d3 = _drift(run3)
    assert d3["judge_changed"] is True
    assert d3["anchors"]["since"]["n_changed"] == flipped
    assert d3["anchors"]["since"]["run"] == run2.name
    changes = d3["guard"]["changes"]
    assert any(c.startswith("system_fingerprint changed: fake → fp-2024-new") for c in changes)
    assert any(f"{flipped} of {N_ANCHORS} anchor grades changed" in c for c in changes)
    manifest = json.loads((run3 / "manifest.json").read_text())
    assert manifest["judge_changed"] is True and manifest["exit_code"] == 4
    assert manifest["guard"]["latest_moved"] is False
    # would the leaderboard change: the accepted run's labels against tonight's
    lb = d3["leaderboard"]
    k = lb["k"]
    means_before = json.loads((run2 / "scores.json").read_text())["runs"]
    means_now = json.loads((run3 / "scores.json").read_text())["runs"]
    for r in lb["runs"]:
        assert r["before"] == pytest.approx(means_before[r["system"]][f"ndcg@{k}"]["mean"])
        assert r["now"] == pytest.approx(means_now[r["system"]][f"ndcg@{k}"]["mean"])
    assert sorted(lb["order_before"]) == sorted(lb["order_now"]) == sorted(means_now)
    assert lb["order_before"] == sorted(means_before, key=lambda s: -means_before[s][
        f"ndcg@{k}"]["mean"])
    assert lb["tau_ap"] == pytest.approx(tau_ap(lb["order_now"], lb["order_before"]))
    t_lo, t_hi = lb["tau_ap_ci"]
    assert -1.0 <= t_lo <= t_hi <= 1.0
    md = (run3 / "report" / "report.md").read_text()
    html = (run3 / "report" / "report.html").read_text()
    for text in (md, html):
        assert "The judge changed since the accepted run" in text
        assert "Would the leaderboard change?" in text and "τ_AP" in text
        assert "accepted order" in text and "tonight&#39;s order" in text or \
            "tonight's order" in text
        assert "fp-2024-new" in text
    assert "would the leaderboard change?" in third.output and "τ_AP" in third.output

    # accepting night 3 moves latest; the next run compares with it
    accepted = _cli("run", "--accept", str(run3))
    assert accepted.exit_code == 0, accepted.output
    assert _latest(out) == run3
    assert json.loads((run3 / "accepted.json").read_text())["latest_before"] == run2.name

    # night 4: the same server, a new prompt in the config: the guard trips again
    fake_llm.reset()
    fourth = _cli("run", str(_job(tmp_path, fake_llm.base_url, cache="cache-3",
                                  prompt="umbrela-style")))
    assert fourth.exit_code == 4, fourth.output
    assert _latest(out) == run3
    d4 = _drift(_newest(out))
    assert d4["guard"]["accepted"] == run3.name
    assert any(c.startswith("prompt changed: default-") and "umbrela-style-" in c
               for c in d4["guard"]["changes"])
    assert not any("system_fingerprint" in c for c in d4["guard"]["changes"])


def test_accept_refuses_what_is_not_a_finished_run(tmp_path: Path) -> None:
    (tmp_path / "out" / "runs" / "20260101T000000Z.partial").mkdir(parents=True)
    for target in (tmp_path / "nowhere", tmp_path / "out" / "runs" / "20260101T000000Z.partial",
                   tmp_path):
        got = CliRunner().invoke(main, ["run", "--accept", str(target)])
        assert got.exit_code == 2, got.output
        assert "--accept" in got.output
    assert not (tmp_path / "out" / "latest.txt").exists()


def test_anchors_as_qrels_take_their_texts_from_the_inputs(tmp_path: Path,
                                                          fake_llm: FakeLLMServer) -> None:
    config = _job(tmp_path, fake_llm.base_url)
    human = io.read_qrels(tmp_path / "data/human.qrels")
    corpus = {json.loads(line)["chunk_id"] for line in
              (tmp_path / "data/corpus.jsonl").read_text().splitlines()}
    some = human.loc[human["chunk_id"].isin(corpus)].head(12)
    io.write_qrels(some, tmp_path / "anchors.qrels")
    config.write_text(config.read_text().replace('anchors = "anchors.jsonl"',
                                                 'anchors = "anchors.qrels"'))
    got = _cli("run", str(config))
    assert got.exit_code == 0, got.output
    block = _drift(_latest(tmp_path / "out"))["anchors"]
    assert block["n"] == block["n_judged"] == 12
    # an id the texts lack is an error naming the anchors file, before any call
    fake_llm.reset()
    extra = pd.DataFrame({"query_id": ["no-such-query"], "chunk_id": [some["chunk_id"].iloc[0]],
                          "grade": [1]})
    io.write_qrels(pd.concat([some, extra]), tmp_path / "anchors.qrels")
    bad = CliRunner().invoke(main, ["run", str(config)])
    assert bad.exit_code == 2 and "anchors.qrels" in bad.output
    assert "no-such-query" in bad.output and fake_llm.calls == 0
