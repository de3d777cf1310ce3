"""Both scoring engines read the same odd inputs the same way: the same values, or the same
refusal (exit 2, the same message naming the file and row). Fixtures plant each oddity: glob
characters in a run's name beside the file the pattern would match, a ``#`` inside ids (TREC
RAG 2024 segment ids hold one), Parquet with a NaN score, float ids, a NULL system; and a
``--temp-dir`` that cannot be written."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from labeler.cli import main

pytest.importorskip("duckdb")

QRELS = "q1 0 d1 3\nq1 0 d2 1\nq1 0 msmarco_v2.1_doc_00_0#1_234 2\n1 0 1 3\n1 0 2 1\n"


def _score(tmp: Path, run: str, engine: str, *extra: str) -> tuple[int, str]:
    (tmp / "h.qrels").write_text(QRELS)
    res = CliRunner().invoke(main, ["score", "--qrels", str(tmp / "h.qrels"), "--run",
                                    str(tmp / run), "--engine", engine, "--json", *extra])
    return res.exit_code, res.output


def _both(tmp: Path, run: str) -> tuple[tuple[int, str], tuple[int, str]]:
    return _score(tmp, run, "memory"), _score(tmp, run, "duckdb")


def test_glob_characters_in_a_run_name_read_that_file_not_the_pattern(tmp_path: Path) -> None:
    (tmp_path / "r[1].run").write_text("q1 Q0 d1 1 3.0 A\nq1 Q0 d2 2 2.0 A\n")
    (tmp_path / "r1.run").write_text("q1 Q0 d2 1 3.0 A\nq1 Q0 d1 2 2.0 A\n")  # what r[1] matches
    (tmp_path / "r*.run").write_text("q1 Q0 d1 1 3.0 S\n")
    memory, duck = _both(tmp_path, "r[1].run")
    assert memory[0] == duck[0] == 0, duck[1]
    assert json.loads(duck[1]) == json.loads(memory[1])
    assert json.loads(duck[1])["runs"]["A"]["ndcg@10"]["per_query"]["q1"] > 0.7
    assert _both(tmp_path, "r*.run")[1][0] == 0


def test_a_hash_inside_ids_is_read_whole_by_both_engines(tmp_path: Path) -> None:
    (tmp_path / "rag.run").write_text("q1 Q0 msmarco_v2.1_doc_00_0#1_234 1 3.0 C\n"
                                      "q1 Q0 d2 2 2.0 C\n")
    (tmp_path / "commented.run").write_text("# a comment line\nq1 Q0 d1 1 3.0 D\n")
    for run in ("rag.run", "commented.run"):
        memory, duck = _both(tmp_path, run)
        assert memory[0] == duck[0] == 0, duck[1]
        assert json.loads(duck[1]) == json.loads(memory[1])
    assert json.loads(duck[1])["runs"]["D"]["ndcg@10"]["n_queries"] == 1


@pytest.mark.parametrize("frame", [
    {"query_id": ["q1", "q1"], "chunk_id": ["d1", "d2"], "score": [1.0, np.nan]},
    {"query_id": [1.0, 1.0], "chunk_id": [1.0, 2.0], "score": [2.0, 1.0]},
    {"query_id": [1.0, 1.0], "chunk_id": [1.0, 2.5], "score": [2.0, 1.0]},
    {"query_id": [1.0, np.nan], "chunk_id": [1.0, 2.0], "score": [2.0, 1.0]},
    {"system": ["A", None], "query_id": ["q1", "q1"], "chunk_id": ["d1", "d2"],
     "score": [2.0, 1.0]},
], ids=["nan-score", "float-ids", "fractional-id", "nan-id", "null-system"])
def test_odd_parquet_gives_the_same_values_or_the_same_refusal(tmp_path: Path,
                                                               frame: dict) -> None:
    pd.DataFrame(frame).to_parquet(tmp_path / "odd.parquet", index=False)
    memory, duck = _both(tmp_path, "odd.parquet")
    assert memory[0] == duck[0] and memory[0] in (0, 2), (memory, duck)
    if memory[0] == 0:
        assert json.loads(duck[1]) == json.loads(memory[1])
    else:
        assert duck[1] == memory[1] and "odd.parquet, row 2" in duck[1]


def test_a_temp_dir_that_cannot_be_written_is_exit_2(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 3.0 A\n")
    locked = tmp_path / "locked"
    locked.mkdir()

    def refused(*args: object, **kw: object) -> str:  # root may write anywhere: inject it
        raise PermissionError(13, "Permission denied", str(locked / "labeler-duckdb-x"))

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    code, out = _score(tmp_path, "a.run", "duckdb", "--temp-dir", str(locked))
    assert code == 2, out
    assert "--temp-dir" in out and "cannot write" in out and "unexpected" not in out
