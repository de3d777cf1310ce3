"""Readers and writers: formats, string ids, and clear errors naming file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from labeler import io
from labeler.errors import InputError


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_trec_qrels_keep_leading_zero_ids(tmp_path: Path) -> None:
    p = _write(tmp_path / "h.qrels", "007 0 0042 2\n007 0 d9 0\n")
    q = io.read_qrels(p)
    assert q["query_id"].tolist() == ["007", "007"]
    assert q["chunk_id"].tolist() == ["0042", "d9"]
    assert q["grade"].tolist() == [2, 0]


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_qrels_roundtrip_every_table_format(tmp_path: Path, ext: str) -> None:
    q = pd.DataFrame({"query_id": ["01", "2"], "chunk_id": ["a", "007"], "grade": [3, 0]})
    out = io.write_qrels(q, tmp_path / f"q.{ext}")
    back = io.read_qrels(out)
    assert back.to_dict("list") == q.to_dict("list")


def test_bad_grade_names_file_and_line(tmp_path: Path) -> None:
    p = _write(tmp_path / "h.qrels", "1 0 a 2\n\n1 0 b 5\n")
    with pytest.raises(InputError) as err:
        io.read_qrels(p)
    assert "h.qrels, line 3" in str(err.value) and "0-3" in str(err.value)


def test_negative_grade_needs_a_map(tmp_path: Path) -> None:
    p = _write(tmp_path / "h.qrels", "1 0 a -1\n1 0 b 4\n")
    with pytest.raises(InputError, match="line 1"):
        io.read_qrels(p)
    q = io.read_qrels(p, grade_map=io.parse_grade_map("-1=0,4=3"))
    assert q["grade"].tolist() == [0, 3]


def test_malformed_trec_run_line(tmp_path: Path) -> None:
    p = _write(tmp_path / "r.run", "1 Q0 a 1 2.5 t\n1 Q0 b 2\n")
    with pytest.raises(InputError, match=r"r\.run, line 2: .*6 fields"):
        io.read_run(p)


def test_run_tag_from_trec_and_stem(tmp_path: Path) -> None:
    p = _write(tmp_path / "x.run", "1 Q0 a 1 2.5 bm25\n1 Q0 b 2 1.5 bm25\n")
    assert set(io.read_run(p)["system"]) == {"bm25"}
    c = _write(tmp_path / "dense.csv", "query_id,chunk_id,rank\n1,a,1\n1,b,2\n")
    run = io.read_run(c)
    assert set(run["system"]) == {"dense"}
    assert run["score"].tolist() == [-1.0, -2.0]


def test_duplicate_chunk_in_run_is_an_error(tmp_path: Path) -> None:
    p = _write(tmp_path / "r.run", "1 Q0 a 1 2.5 t\n1 Q0 a 2 1.5 t\n")
    with pytest.raises(InputError, match="line 2.*ranked twice"):
        io.read_run(p)


def test_pairs_missing_column_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty"):
        io.read_pairs(_write(tmp_path / "e.csv", ""))
    with pytest.raises(InputError, match="chunk"):
        io.read_pairs(_write(tmp_path / "p.csv", "query_id,query,chunk_id\n1,q,a\n"))


def test_pairs_same_chunk_two_texts_names_both_lines(tmp_path: Path) -> None:
    rows = [{"query_id": "1", "query": "q", "chunk_id": "a", "chunk": "one"},
            {"query_id": "2", "query": "r", "chunk_id": "a", "chunk": "two"}]
    p = _write(tmp_path / "p.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError) as err:
        io.read_pairs(p)
    assert "p.jsonl, line 2" in str(err.value) and "line 1" in str(err.value)


def test_jsonl_bad_line(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.jsonl", '{"query_id": 1}\n{oops\n')
    with pytest.raises(InputError, match="line 2"):
        io.read_pairs(p)


def test_tsv_queries(tmp_path: Path) -> None:
    p = _write(tmp_path / "q.tsv", "007\twhat is ndcg\n8\tbm25\n")
    q = io.read_queries(p)
    assert q.to_dict("list") == {"query_id": ["007", "8"], "query": ["what is ndcg", "bm25"]}


def test_atomic_write_leaves_nothing_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash")
    assert list(tmp_path.iterdir()) == []


def test_labels_roundtrip_keeps_failed_rows(tmp_path: Path) -> None:
    df = pd.DataFrame({"query_id": ["1", "1"], "chunk_id": ["a", "b"], "grade": [2, None],
                       "status": ["ok", "failed"], "error": ["", "timeout"]})
    out = io.write_labels(df, tmp_path / "l.jsonl")
    back = io.read_labels(out)
    assert back["status"].tolist() == ["ok", "failed"]
    assert back["grade"].isna().tolist() == [False, True]
    assert io.read_qrels(out)["chunk_id"].tolist() == ["a"]


def test_outputs_get_normal_permissions(tmp_path: Path) -> None:
    import os
    out = io.write_text("x", tmp_path / "report.html")
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask


def test_dataframe_errors_name_the_callers_row() -> None:
    # label records: the failed row is skipped, yet the bad grade is named by its own row
    labels = pd.DataFrame({"query_id": ["1", "1", "1"], "chunk_id": ["a", "b", "c"],
                           "grade": [2, None, 7], "status": ["ok", "failed", "ok"]})
    with pytest.raises(InputError, match=r"<qrels DataFrame>, row 3: grade must be an integer 0-3"):
        io.as_qrels(labels)
    run = pd.DataFrame({"query_id": ["1", "1"], "chunk_id": ["a", "b"], "score": [1.0, "high"]})
    with pytest.raises(InputError, match=r"row 2: score must be a number, got 'high'"):
        io.as_run(run)


def test_text_files_bom_compression_and_encoding(tmp_path: Path) -> None:
    import bz2
    # a BOM (Windows tools) must not become part of the first id
    (tmp_path / "q.tsv").write_bytes("\ufeff007\twhat is ndcg\n".encode())
    assert io.read_queries(tmp_path / "q.tsv")["query_id"].tolist() == ["007"]
    line = json.dumps({"query_id": "1", "query": "q", "chunk_id": "a", "chunk": "x"}) + "\n"
    (tmp_path / "p.jsonl.bz2").write_bytes(bz2.compress(line.encode()))
    assert io.read_pairs(tmp_path / "p.jsonl.bz2")["chunk_id"].tolist() == ["a"]
    # not UTF-8: a clear error naming the file and line, for every line-by-line reader
    latin = line.replace("x", "caf\xe9").encode("latin-1")
    (tmp_path / "l.jsonl").write_bytes(line.encode() + latin)
    with pytest.raises(InputError, match=r"l\.jsonl, line 2: .*not UTF-8"):
        io.read_pairs(tmp_path / "l.jsonl")
    (tmp_path / "l.qrels").write_bytes("1 0 a 2\n1 0 caf\xe9 1\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"l\.qrels, line 2: .*not UTF-8"):
        io.read_qrels(tmp_path / "l.qrels")


def test_csv_errors_name_the_line_or_else_the_row(tmp_path: Path) -> None:
    import gzip
    text = "query_id,chunk_id,grade\n1,a,2\n1,b,9\n"
    _write(tmp_path / "h.csv", text)
    (tmp_path / "h.csv.gz").write_bytes(gzip.compress(text.encode()))
    for name in ("h.csv", "h.csv.gz"):
        with pytest.raises(InputError, match=rf"{name}, line 3: grade"):
            io.read_qrels(tmp_path / name)
    # a quoted field spanning lines: the line the row starts on is named
    _write(tmp_path / "m.csv", 'query_id,chunk_id,grade\n1,"a\nb",2\n1,c,9\n')
    with pytest.raises(InputError, match=r"m\.csv, line 4: grade"):
        io.read_qrels(tmp_path / "m.csv")
