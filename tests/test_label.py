"""The labelling stage as a library: records, the offline judge, pooling, limits, prices."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pandas as pd
import pytest

from labeler import io
from labeler.errors import ConfigError, InputError
from labeler.judges import LexicalJudgeAdapter
from labeler.labelling.stage import label, label_pairs
from labeler.labelling.limits import RateLimiter, RetryPolicy, cost_usd, load_prices, price_of
from labeler.labelling.pooling import pool_pairs
from labeler.schema import LABEL_COLUMNS
from labeler.testing import FakeLLMServer

from labelkit import FAST, judge_for, make_pairs, server_grades

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data"


def test_lexical_baseline_labels_offline_and_says_so() -> None:
    pairs = make_pairs(20)
    result = label(pairs, model="lexical")
    rec = result.records
    assert list(rec.columns[:len(LABEL_COLUMNS)]) == list(LABEL_COLUMNS)
    assert (rec["model"] == "lexical-baseline").all()
    assert (rec["prompt_id"] == "lexical-baseline").all()
    assert (rec["status"] == "ok").all() and rec["grade"].between(0, 3).all()
    assert rec["chunk_id"].tolist() == pairs["chunk_id"].tolist()
    assert result.summary.calls == 0 and result.summary.cost_usd == 0.0
    assert result.exit_code == 0


def test_lexical_baseline_agrees_with_the_judge_one_pair_at_a_time() -> None:
    pairs = make_pairs(6)
    adapter = LexicalJudgeAdapter()
    one_by_one = [asyncio.run(adapter.judge(q, c)).grade
                  for q, c in zip(pairs["query"], pairs["chunk"])]
    assert label(pairs, model="lexical").records["grade"].tolist() == one_by_one


def test_records_keep_input_order_types_and_extra_columns() -> None:
    pairs = make_pairs(9).assign(split=list("abcabcabc"), grade=7)
    pairs = pairs.iloc[::-1].reset_index(drop=True)
    pairs["query_id"] = pairs["query_id"].str.replace("q", "00")  # "007"-style ids stay text
    with FakeLLMServer() as srv:
        rec = label_pairs(pairs, judge_for(srv), retry=FAST).records
        expected = server_grades(srv)
    assert rec["query_id"].tolist() == pairs["query_id"].tolist()
    assert rec["grade"].dtype == "Int64" and rec["attempts"].dtype == "int64"
    assert rec["cached"].dtype == bool and rec["latency_s"].dtype == "float64"
    assert rec["grade"].tolist() == [expected[c] for c in pairs["chunk_id"]]  # not the 7
    assert rec["split"].tolist() == pairs["split"].tolist()
    assert "chunk" not in rec.columns and "query" not in rec.columns
    assert (rec["input_tokens"] > 0).all() and (rec["output_tokens"] > 0).all()


def test_bad_pairs_are_refused() -> None:
    with pytest.raises(InputError, match="chunk_id"):
        label(pd.DataFrame({"query_id": ["1"], "query": ["q"], "chunk": ["c"]}), model="lexical")
    with pytest.raises(InputError, match="no pairs"):
        label(make_pairs(1).iloc[:0], model="lexical")
    with pytest.raises(ConfigError, match="concurrency") as err:
        label(make_pairs(1), model="lexical", concurrency=0)
    assert err.value.setting == "concurrency"


def test_label_has_no_default_model_and_names_unknown_settings() -> None:
    with pytest.raises(ConfigError, match="needs a model"):
        label(make_pairs(1))
    with pytest.raises(TypeError):
        label(make_pairs(1), "lexical")  # type: ignore[misc]  # model is keyword-only
    with pytest.raises(ConfigError, match="unknown judge setting.*sampels"):
        label(make_pairs(1), model="lexical", sampels=3)


def test_label_works_inside_a_running_event_loop() -> None:
    """Notebooks run a loop already: the sync API must still work there."""
    async def in_notebook() -> pd.DataFrame:
        with FakeLLMServer() as srv:
            return label_pairs(make_pairs(5), judge_for(srv), retry=FAST).records

    rec = asyncio.run(in_notebook())
    assert (rec["status"] == "ok").all() and len(rec) == 5


def test_label_convenience_reads_a_file_and_uses_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    make_pairs(7).to_json(path, orient="records", lines=True)
    with FakeLLMServer() as srv:
        first = label(path, model="fake-judge", base_url=srv.base_url,
                      cache_dir=tmp_path / "cache", backoff_base=0.01)
        srv.reset()
        again = label(path, model="fake-judge", base_url=srv.base_url,
                      cache_dir=tmp_path / "cache")
        assert srv.calls == 0
        uncached = label(path, model="fake-judge", base_url=srv.base_url,
                         cache_dir=tmp_path / "cache", no_cache=True)
        assert srv.calls == 7
    assert first.summary.judged == 7 and again.summary.cached == 7
    assert uncached.summary.judged == 7 and uncached.summary.cached == 0


def test_rpm_limit_spaces_requests() -> None:
    with FakeLLMServer() as srv:
        started = time.monotonic()
        result = label_pairs(make_pairs(14), judge_for(srv), retry=FAST, rpm=600,
                             concurrency=8)
        elapsed = time.monotonic() - started
    # 600 rpm = 10/s with one second of burst: 14 requests need at least 0.4 s.
    assert result.summary.failed == 0 and elapsed >= 0.35


def test_tpm_limit_spaces_requests_by_their_estimated_tokens() -> None:
    with FakeLLMServer() as srv:
        judge = judge_for(srv, max_tokens=10)
        pairs = make_pairs(8)
        need = sum(judge.estimate_tokens(q, c) for q, c in zip(pairs["query"], pairs["chunk"]))
        started = time.monotonic()
        result = label_pairs(pairs, judge, retry=FAST, tpm=60 * 1000, concurrency=8)
        elapsed = time.monotonic() - started
    # 1,000 tokens/s with one second of burst: everything past the burst waits its turn.
    assert result.summary.failed == 0 and need > 1500
    assert elapsed >= (need - 1000) / 1000 * 0.8


class VirtualClock:
    """Time that passes only when the code under test sleeps (no test waits for real)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


def test_rate_limiter_holds_the_long_run_rate() -> None:
    clock = VirtualClock()

    async def spend() -> float:
        limiter = RateLimiter(per_minute=60 * 200, clock=clock, sleep=clock.sleep)
        start = clock()                 # 200 tokens/s, burst 200
        for _ in range(5):
            await limiter.acquire(100)  # 500 tokens: 200 burst + 300 at 200/s
        spent = clock() - start
        limiter.adjust(-100)            # an over-estimate given back ...
        await limiter.acquire(100)      # ... is spent at once
        assert clock() - start == spent
        return spent

    elapsed = asyncio.run(spend())
    assert 1.0 <= elapsed < 3.0
    assert elapsed == pytest.approx(1.5)   # 300 tokens past the burst at 200/s
    with pytest.raises(ConfigError):
        RateLimiter(0)


def test_prices(tmp_path: Path) -> None:
    assert cost_usd("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert price_of("gpt-4o-mini-2024-07-18") == price_of("gpt-4o-mini")
    assert price_of("gpt-4o-2024-08-06") == price_of("gpt-4o")
    assert cost_usd("llama3.1:8b", 10, 10) is None
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"llama3.1:8b": {"input": 1.0, "output": 2.0},
                                 "gpt-4o-mini": [0.0, 0.0]}))
    prices = load_prices(table)
    assert cost_usd("llama3.1:8b", 1_000_000, 500_000, prices) == pytest.approx(2.0)
    assert cost_usd("gpt-4o-mini", 1000, 1000, prices) == 0.0
    table.write_text('{"m": {"input": "cheap"}}')
    with pytest.raises(ConfigError, match="bad price"):
        load_prices(table)


def test_retry_policy_validation() -> None:
    with pytest.raises(ConfigError, match="max_retries"):
        RetryPolicy(max_retries=-1)


# --------------------------------------------------------------------------- pooling

def _runs() -> pd.DataFrame:
    return pd.DataFrame({
        "query_id": ["1", "1", "1", "1", "2", "1", "1", "1"],
        "chunk_id": ["a", "b", "c", "d", "a", "d", "c", "e"],
        "score": [3.0, 2.0, 2.0, 1.0, 5.0, 9.0, 8.0, 7.0],
        "system": ["bm25"] * 5 + ["dense"] * 3,
    })


def test_pooling_takes_the_union_of_each_runs_top_k_in_trec_eval_order() -> None:
    queries = pd.DataFrame({"query_id": ["1", "2"], "query": ["one", "two"]})
    corpus = pd.DataFrame({"chunk_id": list("abcde"), "chunk": list("ABCDE")})
    pairs = pool_pairs(queries, corpus, _runs(), depth=2)
    # bm25 q1: a(3), then the 2.0 tie b/c broken by chunk id descending → c; dense q1: d, c.
    assert list(zip(pairs["query_id"], pairs["chunk_id"])) == [
        ("1", "a"), ("1", "d"), ("1", "c"), ("2", "a")]
    assert pairs["chunk"].tolist() == ["A", "D", "C", "A"]
    assert list(pairs.columns) == ["query_id", "query", "chunk_id", "chunk"]


def test_pooling_names_the_run_file_of_a_missing_chunk_or_query() -> None:
    queries = pd.DataFrame({"query_id": ["1"], "query": ["one"]})
    corpus = pd.DataFrame({"chunk_id": list("abcd"), "chunk": list("ABCD")})
    with pytest.raises(InputError, match=r"runs/dense.run.*chunk 'e'"):
        pool_pairs(queries, corpus, _runs().query("query_id == '1'"), depth=3,
                   run_paths={"dense": "runs/dense.run"})
    with pytest.raises(InputError, match=r"query '2'.*queries"):
        pool_pairs(queries, pd.DataFrame({"chunk_id": list("abcde"), "chunk": list("ABCDE")}),
                   _runs(), depth=1)
    with pytest.raises(ConfigError):
        pool_pairs(queries, corpus, _runs(), depth=0)


def test_pooling_the_sample_data() -> None:
    runs = io.read_runs(sorted((SAMPLE / "runs").glob("*.run")))
    pairs = pool_pairs(io.read_queries(SAMPLE / "queries.tsv"),
                       io.read_corpus(SAMPLE / "corpus.jsonl"), runs, depth=5)
    assert not pairs.duplicated(["query_id", "chunk_id"]).any()
    assert pairs["query_id"].nunique() == 10
    assert 50 <= len(pairs) <= 150  # 3 runs × top 5 × 10 queries, overlapping
