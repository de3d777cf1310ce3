"""Odd inputs and settings: lone surrogates and control characters, a batch file written
without a key, a config saved with a BOM, negative prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from labeler import io
from labeler.cli import main
from labeler.testing import FakeLLMServer, FaultPlan

from labelkit import make_pairs, write_job

FAST = ("--backoff-base", "0.01", "--backoff-max", "0.05")


def _cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _pairs_file(path: Path, rows: list[dict[str, str]]) -> Path:
    # json.dumps escapes a lone surrogate as \ud800: legal JSON, as scraped text has it
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _rows(n: int = 4) -> list[dict[str, str]]:
    return make_pairs(n).to_dict("records")


@pytest.mark.parametrize("out_name", ["labels.jsonl", "labels.csv", "labels.parquet",
                                      "labels.qrels"])
def test_lone_surrogates_in_texts_and_answers_are_written_replaced(tmp_path: Path,
                                                                    out_name: str) -> None:
    rows = _rows()
    rows[1]["chunk"] += " broken \ud800 text"
    rows[2]["query"] += " \udfff"
    rows[0]["source"] = "scraped \ud83d"  # an extra column is kept in the records
    pairs = _pairs_file(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / out_name
    plan = FaultPlan(bad_body=1.0, bad_body_kind="lone_surrogate")  # the model answers one
    with FakeLLMServer(faults=plan) as srv:
        res = _cli("label", "--pairs", pairs, "--model", "fake-judge", "--base-url",
                   srv.base_url, "--out", out, "--qrels-out", tmp_path / "q.qrels",
                   "--structured", "json_schema", *FAST)
    assert res.exit_code == 0, res.output
    if not out_name.endswith(".parquet"):
        out.read_bytes().decode("utf-8")  # valid UTF-8
    if not out_name.endswith(".qrels"):
        labels = io.read_labels(out)
        assert (labels["status"] == "ok").all()
        assert labels["rationale"].str.contains("\ufffd").all()
        assert labels.loc[0, "source"] == "scraped \ufffd"
    assert len((tmp_path / "q.qrels").read_text().splitlines()) == 4


def test_a_lone_surrogate_in_an_id_is_replaced_and_the_qrels_stay_utf8(tmp_path: Path) -> None:
    rows = _rows()
    rows[2]["chunk_id"] = "doc\udc80x"
    pairs = _pairs_file(tmp_path / "pairs.jsonl", rows)
    res = _cli("label", "--pairs", pairs, "--model", "lexical", "--out",
               tmp_path / "labels.qrels")
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "labels.qrels").read_bytes().decode("utf-8").splitlines()
    assert lines[2].split()[2] == "doc\ufffdx"


@pytest.mark.parametrize("bad_id", ["c\x00001", "c\x01x", "c\x1bx", "c\x7fx"])
def test_control_characters_in_ids_are_refused_naming_file_and_line(tmp_path: Path,
                                                                   bad_id: str) -> None:
    rows = _rows()
    rows[2]["chunk_id"] = bad_id
    pairs = _pairs_file(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / "labels.qrels"
    res = _cli("label", "--pairs", pairs, "--model", "lexical", "--out", out)
    assert res.exit_code == 2, res.output
    assert "pairs.jsonl, line 3" in res.output and "control character" in res.output
    assert not out.exists()


def test_control_characters_never_reach_a_trec_file(tmp_path: Path) -> None:
    import pandas as pd

    labels = pd.DataFrame({"query_id": ["q1", "q2"], "chunk_id": ["a", "b\x00c"],
                           "grade": pd.array([1, 2], dtype="Int64")})
    with pytest.raises(Exception, match="control character"):
        io.write_qrels(labels, tmp_path / "x.qrels")
    assert not (tmp_path / "x.qrels").exists()


def test_batch_file_out_needs_no_key(tmp_path: Path) -> None:
    pairs = _pairs_file(tmp_path / "pairs.jsonl", _rows())
    requests = tmp_path / "requests.jsonl"
    res = _cli("label", "--pairs", pairs, "--model", "gpt-4o-mini", "--batch-file-out",
               requests)
    assert res.exit_code == 0, res.output
    assert len(requests.read_text().splitlines()) == 4


def test_batch_file_out_from_a_config_needs_no_key(tmp_path: Path) -> None:
    config = write_job(tmp_path, """\
out_dir = "out"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 1
[judge]
model = "gpt-4o-mini"
batch_file_out = "requests.jsonl"
""")
    res = _cli("run", config)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "requests.jsonl").is_file()


def test_a_config_saved_with_a_bom_is_read(tmp_path: Path) -> None:
    config = write_job(tmp_path, """\
out_dir = "out"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 1
[judge]
model = "lexical"
""")
    config.write_bytes(b"\xef\xbb\xbf" + config.read_bytes())
    res = _cli("run", config, "--check")
    assert res.exit_code == 0, res.output
    assert "ready to run" in res.output


@pytest.mark.parametrize("table", [
    {"fake-judge": {"input": -1.0, "output": 2.0}},
    {"fake-judge": [1.0, -2.0]},
    {"fake-judge": {"input": 1.0, "output": 2.0, "batch_input": -0.5, "batch_output": 1}},
    {"fake-judge": {"input": "NaN", "output": 2.0}},
    {"fake-judge": {"input": 1.0}},
])
def test_prices_are_checked_like_a_config_table(tmp_path: Path, table: dict) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(table))
    pairs = _pairs_file(tmp_path / "pairs.jsonl", _rows())
    with FakeLLMServer() as srv:
        res = _cli("label", "--pairs", pairs, "--model", "fake-judge", "--base-url",
                   srv.base_url, "--out", tmp_path / "o.jsonl", "--prices", prices)
        assert srv.calls == 0  # refused before any paid call
    assert res.exit_code == 2, res.output
    assert "prices.json" in res.output and "fake-judge" in res.output
    spec = table["fake-judge"]
    if isinstance(spec, dict):  # the same table in a config is refused too
        config = write_job(tmp_path, f"""\
out_dir = "out"
[inputs]
pairs = "{pairs}"
[judge]
model = "lexical"
[prices]
"fake-judge" = {{{", ".join(f"{k} = {json.dumps(v)}" for k, v in spec.items())}}}
""")
        assert _cli("run", config, "--check").exit_code == 2
