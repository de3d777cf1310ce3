"""`labeler label` from the command line: outputs, exit codes, messages, the key never leaks."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main
from labeler.schema import LABEL_COLUMNS
from labeler.testing import FakeLLMServer, FaultPlan

from labelkit import make_pairs, server_grades, write_pairs

SAMPLE = Path(__file__).resolve().parent.parent / "data"
FAST = ["--backoff-base", "0.005", "--backoff-max", "0.05"]


def _run(*args: str | Path) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("ext", ["jsonl", "csv", "parquet"])
def test_label_against_a_server_writes_every_format_and_qrels(tmp_path: Path, ext: str) -> None:
    pairs = write_pairs(make_pairs(12), tmp_path / "pairs.jsonl")
    out, qrels = tmp_path / f"labels.{ext}", tmp_path / "labels.qrels"
    with FakeLLMServer(answer_style="grade_colon", structured="ignore") as srv:
        res = _run("label", "--pairs", pairs, "--model", "fake-judge", "--base-url",
                   srv.base_url, "--out", out, "--qrels-out", qrels, *FAST)
        expected = server_grades(srv)
    assert res.exit_code == 0, res.output
    assert "12 judged, 0 cached, 0 failed" in res.stderr
    assert "tokens" in res.stderr and "cost unknown" in res.stderr
    labels = io.read_labels(out)
    assert list(labels.columns[:len(LABEL_COLUMNS)]) == list(LABEL_COLUMNS)
    assert [int(g) for g in labels["grade"]] == [expected[c] for c in labels["chunk_id"]]
    q = io.read_qrels(qrels)
    assert dict(zip(q["chunk_id"], q["grade"])) == expected


def test_base_url_from_the_environment_and_a_rerun_from_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = write_pairs(make_pairs(6), tmp_path / "pairs.jsonl")
    with FakeLLMServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        first = _run("label", "--pairs", pairs, "--model", "fake-judge", "--out",
                     tmp_path / "a.jsonl")
        srv.reset()
        second = _run("label", "--pairs", pairs, "--model", "fake-judge", "--out",
                      tmp_path / "b.jsonl")
        assert srv.calls == 0
    assert first.exit_code == 0 and second.exit_code == 0
    assert "0 judged, 6 cached" in second.stderr
    assert io.read_labels(tmp_path / "a.jsonl")["grade"].tolist() == \
        io.read_labels(tmp_path / "b.jsonl")["grade"].tolist()


def test_exhausted_retries_exit_3_and_the_output_holds_every_pair(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(12), tmp_path / "pairs.jsonl")
    out = tmp_path / "labels.jsonl"
    with FakeLLMServer(faults=FaultPlan(unavailable=0.5)) as srv:
        res = _run("label", "--pairs", pairs, "--model", "fake-judge", "--base-url",
                   srv.base_url, "--out", out, "--max-retries", "0", "--structured",
                   "json_schema", *FAST)
        expected = server_grades(srv)
    assert res.exit_code == 3, res.output
    labels = io.read_labels(out)
    failed = labels[labels["status"] == "failed"]
    assert len(labels) == 12 and 0 < len(failed) < 12
    assert f"{len(failed)} failed" in res.stderr and "re-run" in res.stderr
    assert failed["grade"].isna().all() and failed["error"].str.contains("HTTP 503").all()
    ok = labels[labels["status"] == "ok"]
    assert [int(g) for g in ok["grade"]] == [expected[c] for c in ok["chunk_id"]]


def test_a_rejected_key_exits_2_within_seconds(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-the-right-one")
    pairs = write_pairs(make_pairs(200), tmp_path / "pairs.jsonl")
    with FakeLLMServer(api_key="sk-right", latency=0.1) as srv:  # the whole job: 10 s
        started = time.monotonic()
        res = _run("label", "--pairs", pairs, "--model", "fake-judge", "--base-url",
                   srv.base_url, "--out", tmp_path / "labels.jsonl", "--concurrency", "2",
                   *FAST)
        assert time.monotonic() - started < 5 and srv.calls == 1
    assert res.exit_code == 2
    assert "rejected the API key (HTTP 401" in res.stderr and "OPENAI_API_KEY" in res.stderr
    assert "Traceback" not in res.output
    assert not (tmp_path / "labels.jsonl").exists()


def test_an_unreachable_endpoint_exits_2_within_seconds(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        url = srv.base_url  # the port is free again once the server stops
    pairs = write_pairs(make_pairs(5), tmp_path / "pairs.jsonl")
    started = time.monotonic()
    res = _run("label", "--pairs", pairs, "--model", "m", "--base-url", url, "--out",
               tmp_path / "labels.jsonl")
    assert time.monotonic() - started < 5
    assert res.exit_code == 2 and "cannot reach the endpoint" in res.stderr


def test_no_key_for_openai_is_a_config_error(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(2), tmp_path / "pairs.jsonl")
    res = _run("label", "--pairs", pairs, "--model", "gpt-4o-mini", "--out",
               tmp_path / "labels.jsonl")
    assert res.exit_code == 2 and "OPENAI_API_KEY" in res.stderr


def test_lexical_model_works_offline_with_pooled_runs(tmp_path: Path) -> None:
    out = tmp_path / "labels.csv"
    runs = sorted((SAMPLE / "runs").glob("*.run"))
    res = _run("label", "--queries", SAMPLE / "queries.tsv", "--corpus",
               SAMPLE / "corpus.jsonl", *[x for r in runs for x in ("--run", r)],
               "--depth", "3", "--model", "lexical", "--out", out, "--qrels-out",
               tmp_path / "lexical.qrels")
    assert res.exit_code == 0, res.output
    labels = pd.read_csv(out, dtype={"query_id": str, "chunk_id": str})
    assert (labels["model"] == "lexical-baseline").all()
    assert labels["query_id"].nunique() == 10 and not labels.duplicated(
        ["query_id", "chunk_id"]).any()
    assert len(io.read_qrels(tmp_path / "lexical.qrels")) == len(labels)
    assert "with lexical-baseline" in res.stderr


def test_pooling_names_the_run_whose_chunk_is_not_in_the_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"chunk_id": "d1", "chunk": "text"}\n')
    run = tmp_path / "mine.run"
    run.write_text("q1 Q0 d1 1 2.0 mine\nq1 Q0 d9 2 1.0 mine\n")
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tsome query\n")
    res = _run("label", "--queries", queries, "--corpus", corpus, "--run", run, "--model",
               "lexical", "--out", tmp_path / "o.jsonl")
    assert res.exit_code == 2
    assert "mine.run" in res.stderr and "'d9'" in res.stderr and "corpus" in res.stderr
    assert "--skip-missing" in res.stderr


def test_skip_missing_pools_what_has_texts_and_says_what_it_left_out(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"chunk_id": "d1", "chunk": "text"}\n{"chunk_id": "d3", "chunk": "more"}\n')
    run = tmp_path / "mine.run"
    run.write_text("q1 Q0 d1 1 3.0 mine\nq1 Q0 d9 2 2.0 mine\nq1 Q0 d3 3 1.0 mine\n"
                   "q2 Q0 d1 1 1.0 mine\n")
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tsome query\n")
    out = tmp_path / "o.jsonl"
    res = _run("label", "--queries", queries, "--corpus", corpus, "--run", run, "--model",
               "lexical", "--out", out, "--skip-missing")
    assert res.exit_code == 0, res.output
    labels = io.read_labels(out)
    assert sorted(labels["chunk_id"]) == ["d1", "d3"] and set(labels["query_id"]) == {"q1"}
    assert ("skipped 2 pooled pairs without a text: 1 chunks missing from the corpus, "
            "1 queries missing from the queries") in res.stderr
    pooled = tmp_path / "pairs.jsonl"
    res = _run("pool", "--queries", queries, "--corpus", corpus, "--run", run, "--out", pooled,
               "--skip-missing")
    assert res.exit_code == 0 and "skipped 2 pooled pairs" in res.stderr
    assert len(io.read_pairs(pooled)) == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "lexical"], "--pairs FILE"),
    (["--model", "lexical", "--pairs", "P", "--run", "r.run"], "not both"),
    (["--model", "lexical", "--pairs", "missing.jsonl"], "no such file"),
])
def test_bad_invocations_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    pairs = write_pairs(make_pairs(2), tmp_path / "pairs.jsonl")
    args = [str(pairs) if a == "P" else a for a in args]
    res = _run("label", *args, "--out", tmp_path / "o.jsonl")
    assert res.exit_code == 2 and message in res.stderr


def test_the_api_key_is_never_written_anywhere(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = f"sk-SENTINEL-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    pairs = write_pairs(make_pairs(10), tmp_path / "pairs.jsonl")
    cache = tmp_path / "cache"
    faults = FaultPlan(rate_limit=0.2, malformed=0.1, retry_after=0.01)
    with FakeLLMServer(api_key=sentinel, faults=faults) as srv:
        res = _run("label", "--pairs", pairs, "--model", "fake-judge", "--base-url",
                   srv.base_url, "--out", tmp_path / "labels.jsonl", "--qrels-out",
                   tmp_path / "labels.qrels", "--cache-dir", cache, "--samples", "2",
                   "--logprobs", *FAST)
        assert all(r["headers"]["authorization"] == f"Bearer {sentinel}" for r in srv.requests)
    assert res.exit_code == 0, res.output  # the server took the key: it was really used
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.parent == cache for p in files)
    for path in files:
        assert sentinel.encode() not in path.read_bytes(), path
    assert sentinel not in res.output


def test_samples_and_logprobs_columns_from_the_cli(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(5), tmp_path / "pairs.jsonl")
    with FakeLLMServer() as srv:
        res = _run("label", "--pairs", pairs, "--model", "fake-judge", "--base-url",
                   srv.base_url, "--out", tmp_path / "l.jsonl", "--samples", "3",
                   "--logprobs", "--temperature", "0.5", *FAST)
        assert {r["body"]["temperature"] for r in srv.requests} == {0.5}
    assert res.exit_code == 0, res.output
    labels = pd.read_json(tmp_path / "l.jsonl", lines=True, dtype={"chunk_id": str})
    assert labels["votes"].map(len).eq(3).all()
    assert labels["expected_grade"].between(0, 3).all()
    assert {"vote_spread", "expected_grade"} <= set(labels.columns)
