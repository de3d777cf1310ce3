"""Judges over time: anchors re-judged every `labeler run`, the guard that holds `latest` back
when the judge changed (exit 4, `--accept`), and "would the leaderboard change?" — four nights
against the local fake OpenAI server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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
depth = 1
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
bootstrap = 100
[drift]
anchors = "anchors.jsonl"
[statistics]
bootstrap = 100
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
    checked = _cli("run", "--check", str(config))
    assert checked.exit_code == 0 and f"{N_ANCHORS} anchors (judged every run)" in checked.output
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
    manifest1 = json.loads((run1 / "manifest.json").read_text())
    assert manifest1["inputs"]["anchors"]["digest"].startswith("sha256:")
    assert "anchors.jsonl" in manifest1["files"] and manifest1["judge_changed"] is False
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
        assert "accepted order" in text and "tonight's order" in text
        assert "fp-2024-new" in text
    table = html[html.index('id="leaderboard-orders"'):]
    rows = re.findall(r'<tr><td class="num">\d+</td><td>([^<]+)</td><td class="num">[^<]+'
                      r'</td><td>([^<]+)</td>', table[:table.index("</table>")])
    assert rows == list(zip(lb["order_before"], lb["order_now"]))
    assert "would the leaderboard change?" in third.output and "τ_AP" in third.output

    # accepting night 3 moves latest; the next run compares with it
    accepted = _cli("run", str(config), "--accept", str(run3))
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
    # a finished run of another output directory than the config's
    other = tmp_path / "other" / "runs" / "20260101T000000Z"
    other.mkdir(parents=True)
    (other / "manifest.json").write_text("{}")
    config = _job(tmp_path, "http://127.0.0.1:9/v1")
    got = CliRunner().invoke(main, ["run", str(config), "--accept", str(other)])
    assert got.exit_code == 2 and "out/runs/" in got.output
    assert CliRunner().invoke(main, ["run", "--accept", str(other)]).exit_code == 0
    assert (tmp_path / "other" / "latest.txt").read_text().strip() == "runs/20260101T000000Z"


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


# --------------------------------------------------------------------------- the parts

def _ask_once(judge: Any) -> int:
    """One pair judged by ``judge`` (its connections closed after)."""
    import asyncio

    async def ask() -> int:
        try:
            return (await judge.judge("what is a qrel", "A qrel is a judgement.")).grade
        finally:
            await judge.aclose()

    return asyncio.run(ask())


def test_fake_server_reports_its_identity_and_shifts_a_share_of_grades(
        fake_llm: FakeLLMServer) -> None:

    from labeler.testing.behaviour import default_grade
    from labelkit import judge_for

    texts = [f"<query>q{i}</query><chunk>c{i}</chunk>" for i in range(400)]
    fake_llm.set(shift=0.3, shift_seed=7)
    moved = [fake_llm.state.grade(t) != default_grade(t) for t in texts]
    assert 0.25 < np.mean(moved) < 0.35  # a share of pairs, each to another grade
    fake_llm.set(shift=0.0)
    assert all(fake_llm.state.grade(t) == default_grade(t) for t in texts)

    # over HTTP, through the real client: the identity the judge sees, and the moved grade
    fake_llm.set(fingerprint="fp-2", reported_model="fake-judge-2025-06", shift=1.0)
    judge = judge_for(fake_llm)
    grade = _ask_once(judge)
    asked = fake_llm.requests[-1]
    assert grade == asked["grade"] != default_grade(question_text(asked["body"]["messages"]))
    assert dict(judge.reported) == {("fake-judge-2025-06", "fp-2"): 1}
    fake_llm.set(fingerprint=None, reported_model=None)
    _ask_once(judge)
    assert judge.reported[("fake-judge", None)] == 1


def test_a_server_in_its_own_process_takes_the_same_controls() -> None:

    from labeler.testing.behaviour import default_grade
    from labelkit import judge_for

    with FakeLLMServer(in_process=False, fingerprint="fp-sub", reported_model="m-2025",
                       shift=1.0) as srv:
        judge = judge_for(srv)
        grade = _ask_once(judge)
        text = question_text(srv.requests[-1]["body"]["messages"])
        assert grade != default_grade(text)
        assert dict(judge.reported) == {("m-2025", "fp-sub"): 1}
        srv.set(fingerprint=None, shift=0.0)
        assert _ask_once(judge) == default_grade(text)
        assert judge.reported[("m-2025", None)] == 1


def test_vectorised_tau_ap_equals_the_reference_and_the_interval_covers_it() -> None:
    from labeler.pipeline.shift import _tau_ap_idx, tau_ap_interval

    rng = np.random.default_rng(3)
    for n in (2, 3, 7, 20):
        for _ in range(20):
            a, b = list(rng.permutation(n)), list(rng.permutation(n))
            assert _tau_ap_idx(a, b) == pytest.approx(tau_ap(a, b))
    before = rng.random((40, 5)) + np.arange(5) * 0.05  # run 4 best, then 3, ...
    now = before.copy()
    now[:, [3, 4]] = now[:, [4, 3]]  # tonight the top two swap
    lo, hi = tau_ap_interval(before, now, list("abcde"), n_resamples=300, seed=0)
    point = tau_ap(list("dceba"), list("edcba"))
    assert lo <= point <= hi < 1.0
    assert tau_ap_interval(before, before, list("abcde"), n_resamples=50, seed=0) == [1.0, 1.0]


def test_guard_compares_only_what_the_endpoint_reports() -> None:
    from labeler.pipeline.guard import judge_changes

    def block(fps: list[str], share: float = 0.0, drop: float | None = 0.0) -> dict:
        return {"identity": {"model": "m", "prompt_id": "p-1", "reported_models": ["m"],
                             "system_fingerprints": fps},
                "since": {"n_changed": int(share * 100), "n_compared": 100,
                          "changed_share": share, "alpha_drop": drop,
                          "agreement_before": {"krippendorff_alpha_ordinal": 0.8},
                          "agreement_now": {"krippendorff_alpha_ordinal": 0.8 - (drop or 0)}}}

    limits = {"max_anchor_flips": 0.1, "max_agreement_drop": 0.05}
    accepted = block(["fp-a"])["identity"]
    assert judge_changes(block(["fp-a"], 0.1, 0.05), accepted, **limits) == []
    assert judge_changes(block([]), accepted, **limits) == []  # tonight says nothing
    assert judge_changes(block(["fp-b"]), {**accepted, "system_fingerprints": []},
                         **limits) == []  # the accepted run said nothing
    assert judge_changes(block(["fp-a", "fp-b"]), accepted, **limits) == [
        "system_fingerprint changed: fp-a → fp-a, fp-b"]
    got = judge_changes(block(["fp-a"], 0.11, 0.06), accepted, **limits)
    assert got[0] == "11 of 100 anchor grades changed (11.0% > 10.0%)"
    assert got[1].startswith("anchors' agreement with the human grades fell: α 0.8000 → 0.7400")
    unjudged = {**block(["fp-a"]), "n": 60, "n_judged": 29}
    assert judge_changes(unjudged, accepted, **limits) == [
        "only 29 of 60 anchors could be judged: the judge cannot be checked"]
    assert judge_changes({**unjudged, "n_judged": 30}, accepted, **limits) == []
    renamed = {**accepted, "prompt_id": "p-0"}
    assert judge_changes(block(["fp-a"]), renamed, **limits) == ["prompt changed: p-0 → p-1"]


def test_anchor_sample_gives_each_grade_an_equal_share_and_rare_grades_their_all() -> None:
    from labeler.reconciliation.sample import anchor_sample

    rows = [(f"q{i % 6}", f"c{i}", g) for i, g in enumerate([0] * 40 + [1] * 40 + [2] * 40
                                                            + [3] * 4)]
    human = pd.DataFrame(rows, columns=["query_id", "chunk_id", "grade"])
    texts = human.assign(query=lambda d: "text of " + d["query_id"],
                         chunk=lambda d: "chunk " + d["chunk_id"]).drop(columns="grade")
    got = anchor_sample(human, texts, n=40, seed=1)
    assert got["grade"].value_counts().to_dict() == {3: 4, 0: 12, 1: 12, 2: 12}
    assert list(got.columns) == ["query_id", "query", "chunk_id", "chunk", "grade"]
    assert got.equals(anchor_sample(human, texts, n=40, seed=1))
    assert got["query_id"].nunique() == 6
    assert not got.equals(anchor_sample(human, texts, n=40, seed=2))


def test_check_reads_the_anchors_and_names_a_bad_row(tmp_path: Path) -> None:
    config = _job(tmp_path, "http://127.0.0.1:9/v1")
    rows = [{"query_id": "q1", "query": "a", "chunk_id": f"c{i}", "chunk": "b", "grade": 2}
            for i in range(3)]
    rows[2]["grade"] = 7
    io.write_table(pd.DataFrame(rows), tmp_path / "anchors.jsonl")
    got = CliRunner().invoke(main, ["run", "--check", str(config)])
    assert got.exit_code == 2 and "anchors.jsonl" in got.output and "7" in got.output


def test_leaderboard_shift_shows_a_reversed_pair(tmp_path: Path) -> None:
    from labeler.pipeline.shift import leaderboard_shift

    for tag, first, second in (("runA", "a", "b"), ("runB", "b", "a")):
        (tmp_path / f"{tag}.run").write_text("".join(
            f"q{q} Q0 {first}{q} 1 2.0 {tag}\nq{q} Q0 {second}{q} 2 1.0 {tag}\n"
            for q in range(12)))
    runs = io.read_runs([str(tmp_path / "runA.run"), str(tmp_path / "runB.run")])
    qs = [f"q{q}" for q in range(12)]
    before = pd.DataFrame({"query_id": qs * 2, "chunk_id": [f"a{q}" for q in range(12)]
                           + [f"b{q}" for q in range(12)], "grade": [3] * 12 + [1] * 12})
    now = before.assign(grade=[1] * 12 + [3] * 12)
    got = leaderboard_shift(before, now, runs, k=10, previous="r1")
    assert got is not None
    assert got["order_before"] == ["runA", "runB"] and got["order_now"] == ["runB", "runA"]
    assert got["tau_ap"] == -1.0 and got["order_changed"] is True
    assert [(p["a"], p["b"], p["change"]) for p in got["changed_pairs"]] == [
        ("runA", "runB", "reversed")]
    assert leaderboard_shift(before.iloc[:0], now, runs, k=10) is None  # nothing judged then
    same = leaderboard_shift(before, before, runs, k=10)
    assert same is not None and same["changed_pairs"] == [] and same["tau_ap"] == 1.0


def test_api_pairs_only_job_guards_without_a_report(tmp_path: Path,
                                                    fake_llm: FakeLLMServer) -> None:
    from labeler.pipeline import load_config, run_pipeline
    from labelkit import make_pairs, write_pairs

    write_pairs(make_pairs(30), tmp_path / "pairs.jsonl")
    anchors = make_pairs(80, n_queries=8).iloc[30:].assign(grade=lambda d: d.index % 4)
    io.write_table(anchors, tmp_path / "anchors.csv")
    (tmp_path / "job.toml").write_text(f"""\
out_dir = "out"
[inputs]
pairs = "pairs.jsonl"
[judge]
model = "fake-judge"
base_url = "{fake_llm.base_url}"
backoff_base = 0
[drift]
anchors = "anchors.csv"
max_anchor_flips = 0.2
""")
    first = run_pipeline(load_config(tmp_path / "job.toml"))
    assert first.exit_code == 0 and first.report_html is None
    assert first.drift.judge is not None and first.drift.judge.leaderboard is None
    fake_llm.reset()
    fake_llm.set(shift=0.5, shift_seed=3)
    second = run_pipeline(load_config(tmp_path / "job.toml"))
    assert fake_llm.calls == 50  # the pairs from the cache, the anchors asked again
    assert second.exit_code == 4 and second.drift.judge_changed
    assert not any("fingerprint" in c for c in second.drift.judge.changes)
    assert _latest(tmp_path / "out") == first.run_dir
    text = second.drift.to_text()
    assert "JUDGE CHANGED" in text and "anchor grades changed" in text
