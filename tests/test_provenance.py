"""Who made the labels: the judge summary a report shows, read from the label records."""

from __future__ import annotations

import pandas as pd
import pytest

from labeler import __version__, io
from labeler.labelling.limits import cost_usd
from labeler.pipeline.provenance import judge_summary


def _records() -> pd.DataFrame:
    return pd.DataFrame({
        "query_id": ["1", "1", "2", "2"], "chunk_id": ["a", "b", "c", "d"],
        "grade": pd.array([2, pd.NA, 0, 3], dtype="Int64"),
        "status": ["ok", "failed", "ok", "ok"],
        "model": ["gpt-4o", "gpt-4o", "gpt-4o", "gpt-4o-mini"],
        "prompt_id": ["default-1a2b", "default-1a2b", "default-1a2b", "default-1a2b"],
        "input_tokens": [300, 900, 310, 305], "output_tokens": [12, 0, 11, 10]})


def test_summary_counts_judged_and_failed_pairs_and_prices_every_token() -> None:
    s = judge_summary(_records())
    assert s["known"] and s["models"] == ["gpt-4o", "gpt-4o-mini"]
    assert s["prompt_ids"] == ["default-1a2b"]
    assert (s["n_pairs"], s["n_judged"], s["n_failed"]) == (4, 3, 1)
    assert (s["input_tokens"], s["output_tokens"]) == (1815, 33)
    expected = cost_usd("gpt-4o", 1510, 23) + cost_usd("gpt-4o-mini", 305, 10)
    assert s["cost_usd"] == pytest.approx(expected)  # the failed pair's tokens are billed too
    assert s["labeler_version"] == __version__ and s["date"].endswith("+00:00")


def test_an_unknown_price_gives_no_cost_and_an_offline_judge_costs_nothing() -> None:
    unknown = _records().assign(model="my-local-model")
    assert judge_summary(unknown)["cost_usd"] is None
    offline = _records().assign(model="lexical-baseline", input_tokens=0, output_tokens=0)
    assert judge_summary(offline)["cost_usd"] == 0.0


def test_plain_qrels_do_not_say_who_made_them(tmp_path) -> None:
    path = tmp_path / "llm.qrels"
    path.write_text("1 0 a 2\n1 0 b 0\n")
    s = judge_summary(io.read_labels(path), source=path)
    assert not s["known"] and s["models"] == [] and s["n_judged"] == 2
    assert s["source"] == str(path) and s["modified"] is not None
