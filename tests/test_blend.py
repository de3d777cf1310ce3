"""`blend` of real LLM label sets (LLMJudge 2024) equals a direct pandas computation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labeler import io
from labeler.reconciliation.blend import blend, combine
from labeler.errors import ConfigError
from labeler.reconciliation.agreement import read_llm

LLMJUDGE = Path(__file__).parent / "data" / "llmjudge"
NAMES = ["Olz-gpt4o", "RMITIR-llama38b", "willia-umbrela1"]


def _direct(frames: dict[str, pd.DataFrame], method: str) -> pd.Series:
    """The blend computed the obvious way: group the ok grades of every set by pair."""
    long = pd.concat([f.loc[f["status"] == "ok"].assign(set=n) for n, f in frames.items()])
    long = long.astype({"grade": "int64"})

    def one(g: pd.Series) -> int:
        values = sorted(g.tolist())
        if method == "mean":
            return math.floor(sum(values) / len(values) + 0.5)
        if method == "median":
            return values[(len(values) - 1) // 2]
        counts = pd.Series(values).value_counts()
        return int(min(counts.index[counts == counts.max()]))

    return long.groupby(["query_id", "chunk_id"])["grade"].agg(one)


@pytest.fixture(scope="module")
def frames() -> dict[str, pd.DataFrame]:
    out = {n: io.read_labels(LLMJUDGE / f"{n}.qrels") for n in NAMES}
    a = out["Olz-gpt4o"]
    a.loc[:199, "status"], a.loc[:199, "grade"] = "failed", pd.NA  # decided by the others
    out["RMITIR-llama38b"] = out["RMITIR-llama38b"].iloc[100:]      # missing from one set
    b = out["willia-umbrela1"]
    b.loc[:49, "status"], b.loc[:49, "grade"] = "failed", pd.NA      # 0-49: no set graded
    return out


@pytest.mark.parametrize("method", ["mean", "median", "vote"])
def test_blend_equals_a_direct_pandas_computation(frames: dict[str, pd.DataFrame],
                                                  method: str) -> None:
    out = blend(frames, method=method)
    expected = _direct(frames, method)
    ok = out.loc[out["status"] == "ok"].set_index(["query_id", "chunk_id"])
    assert len(out) == 4423 and len(ok) == len(expected) == 4423 - 50
    pd.testing.assert_series_equal(ok["grade"].astype("int64").sort_index(),
                                   expected.sort_index(), check_names=False)
    failed = out.loc[out["status"] == "failed"]
    assert len(failed) == 50 and failed["grade"].isna().all()
    assert (failed["error"] != "").all()


def test_source_names_the_sets_that_decided_each_pair(frames: dict[str, pd.DataFrame]) -> None:
    out = blend(frames, method="mean").set_index(["query_id", "chunk_id"])
    first = frames["Olz-gpt4o"].iloc[0]
    key = (first["query_id"], first["chunk_id"])
    assert out.loc[key, "source"] == ""  # failed everywhere (rows 0-49 of every file)
    row150 = frames["willia-umbrela1"].iloc[150]
    key = (row150["query_id"], row150["chunk_id"])
    assert out.loc[key, "source"] == "RMITIR-llama38b+willia-umbrela1"  # gpt4o failed there
    row300 = frames["willia-umbrela1"].iloc[300]
    key = (row300["query_id"], row300["chunk_id"])
    assert out.loc[key, "source"] == "+".join(NAMES)
    assert len(out.loc[key, "votes"]) == 3
    assert set(out["model"]) == {"blend-mean"}


def test_ties_and_halves() -> None:
    nan = np.nan
    grades = np.array([[1, 2, nan, nan], [0, 1, 2, 3], [3, 3, 0, 0], [nan] * 4, [2, nan, nan, 1]])
    assert combine(grades, "mean").tolist() == [2, 2, 2, -1, 2]       # 1.5 → 2, 0.5 up
    assert combine(grades, "median").tolist() == [1, 1, 0, -1, 1]     # the lower middle
    assert combine(grades, "vote").tolist() == [1, 0, 0, -1, 1]       # ties to the lower


def test_a_blend_is_a_label_set_the_other_commands_read(tmp_path: Path,
                                                         frames: dict[str, pd.DataFrame]) -> None:
    out = blend([LLMJUDGE / f"{n}.qrels" for n in NAMES], method="median")
    path = io.write_labels(out, tmp_path / "blend.jsonl")
    back = read_llm(path)
    assert len(back) == 4423 and (back["status"] == "ok").all()
    assert back["grade"].tolist() == out["grade"].tolist()
    with pytest.raises(ConfigError, match="mean, median, vote"):
        blend(frames, method="max")  # type: ignore[arg-type]


def test_labeler_blend_writes_the_blend_and_never_over_an_input(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from labeler.cli import main

    paths = [str(LLMJUDGE / f"{n}.qrels") for n in NAMES]
    out, qrels = tmp_path / "blend.jsonl", tmp_path / "blend.qrels"
    args = [x for p in paths for x in ("--llm", p)]
    res = CliRunner().invoke(main, ["blend", *args, "--method", "vote", "--out", str(out),
                                    "--qrels-out", str(qrels)])
    assert res.exit_code == 0, res.output
    expected = blend(paths, method="vote")
    assert io.read_labels(out)["grade"].tolist() == expected["grade"].tolist()
    assert io.read_qrels(qrels)["grade"].tolist() == expected["grade"].astype(int).tolist()
    copy = tmp_path / "a.qrels"
    copy.write_bytes(Path(paths[0]).read_bytes())
    before = copy.read_bytes()
    bad = CliRunner().invoke(main, ["blend", "--llm", str(copy), "--llm", paths[1],
                                    "--out", str(copy)])
    assert bad.exit_code == 2 and "is the input --llm" in bad.output
    assert copy.read_bytes() == before
