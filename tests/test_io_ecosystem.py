"""Files as the IR ecosystem writes them: TREC by content, comments, extra fields after the
run tag, named runs, ir_measures / PyTerrier column names and an explicit column mapping."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import pandas as pd
import pytest

from labeler import io

from labeler.scoring import results as scoring
from labeler.errors import InputError
from labeler.io.readers import parse_run_arg, rename_aliases

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d4 3\n"
RUN = "q1 Q0 d1 1 3.5 bm25\nq1 Q0 d2 2 2.0 bm25\nq1 Q0 d3 3 1.0 bm25\nq2 Q0 d4 1 9.0 bm25\n"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.reset_index(drop=True).astype(str),
                                  b.reset_index(drop=True).astype(str))


@pytest.mark.parametrize("name", ["qrels", "2019qrels-pass", "qrels.dev.tsv", "judgements.dat",
                                  "qrels.gz"])
def test_qrels_recognised_by_content(tmp_path: Path, name: str) -> None:
    text = QRELS.replace(" ", "\t") if name.endswith(".tsv") else QRELS
    path = _write(tmp_path / name, text)
    reference = io.read_qrels(_write(tmp_path / "ref.qrels", QRELS))
    _frames_equal(io.read_qrels(path), reference)


@pytest.mark.parametrize("name", ["bm25.res", "input.bm25.gz", "run-bm25", "bm25.tsv"])
def test_runs_recognised_by_content(tmp_path: Path, name: str) -> None:
    text = RUN.replace(" ", "\t") if name.endswith(".tsv") else RUN
    run = io.read_run(_write(tmp_path / name, text))
    _frames_equal(run, io.read_run(_write(tmp_path / "ref.run", RUN)))
    assert set(run["system"]) == {"bm25"}


def test_comments_and_extra_fields_as_trec_eval(tmp_path: Path) -> None:
    # trec_eval's results.trunc layout: tabs, padded scores, words after the tag
    run = _write(tmp_path / "results.trunc", "# a run with notes\n"
                 "q1\tQ0\td1\t1\t  3.5\tbm25 more junk at\n"
                 "  # an indented comment\n"
                 "q1\tQ0\td2\t2\t  2.0\tbm25 end of lines.\n"
                 "q1 Q0 d3 3 1.0 bm25\n\nq2 Q0 d4 1 9.0 bm25 reserved for\n")
    qrels = _write(tmp_path / "qrels.comments", "# judged by NIST\n" + QRELS)
    _frames_equal(io.read_run(run), io.read_run(_write(tmp_path / "ref.run", RUN)))
    _frames_equal(io.read_qrels(qrels), io.read_qrels(_write(tmp_path / "r.qrels", QRELS)))
    # a '#' inside an id is part of the id (MS MARCO v2.1 segments)
    seg = _write(tmp_path / "seg.qrels", "q1 0 msmarco_v2.1_doc_00_88#4_16 1\n")
    assert io.read_qrels(seg)["chunk_id"].tolist() == ["msmarco_v2.1_doc_00_88#4_16"]


def test_bad_lines_still_named(tmp_path: Path) -> None:
    run = _write(tmp_path / "r.res", RUN + "q2 Q0 d5 2 high bm25\n")
    with pytest.raises(InputError, match=r"r\.res, line 5: score must be a number"):
        io.read_run(run)
    qrels = _write(tmp_path / "q.qrels", QRELS + "q2 0 d5 2 extra\n")
    with pytest.raises(InputError, match="line 5: a TREC qrels line has 4 fields"):
        io.read_qrels(qrels)
    odd = _write(tmp_path / "notes", "hello world\n")
    with pytest.raises(InputError, match="nor from the content"):
        io.read_qrels(odd)


def test_other_formats_sniffed_without_extension(tmp_path: Path) -> None:
    df = pd.DataFrame({"query_id": ["q1"], "chunk_id": ["d1"], "grade": [2]})
    jsonl = _write(tmp_path / "labels", df.to_json(orient="records", lines=True))
    csv = _write(tmp_path / "labels-csv", df.to_csv(index=False))
    df.to_parquet(tmp_path / "labels-pq")
    for path in (jsonl, csv, tmp_path / "labels-pq"):
        _frames_equal(io.read_qrels(path), df)


def test_any_integer_grade_for_scoring_only(tmp_path: Path) -> None:
    path = _write(tmp_path / "web.qrels", "q1 0 d1 4\nq1 0 d2 -2\nq1 0 d3 10\n")
    assert io.read_qrels(path, any_grade=True)["grade"].tolist() == [4, -2, 10]
    with pytest.raises(InputError, match="0-3"):   # judging and agreement keep 0-3
        io.read_qrels(path)


# --------------------------------------------------------------------------- named runs

def test_run_arguments(tmp_path: Path) -> None:
    odd = _write(tmp_path / "a=b.run", RUN)
    assert parse_run_arg("bm25=runs/x.run") == ("bm25", "runs/x.run")
    assert parse_run_arg("runs/x.run") == (None, "runs/x.run")
    assert parse_run_arg(str(odd)) == (None, str(odd))          # an existing file wins
    assert parse_run_arg("dir=x/a.run") == ("dir", "x/a.run")
    assert parse_run_arg("x/y=z.run") == (None, "x/y=z.run")   # '=' after a separator
    with pytest.raises(InputError, match="NAME=PATH"):
        parse_run_arg("=x.run")


def test_two_pyserini_runs_named_on_the_command_line(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.txt", RUN.replace("bm25", "Anserini"))
    b = _write(tmp_path / "b.txt", RUN.replace("bm25", "Anserini").replace("9.0", "0.5"))
    with pytest.raises(InputError, match="NAME=PATH, e.g. other="):
        io.read_runs([a, b])
    runs = io.read_runs([f"base={a}", f"rm3={b}"])
    assert list(runs["system"].unique()) == ["base", "rm3"]
    qrels = _write(tmp_path / "q.qrels", QRELS)
    res = scoring.evaluate_files(qrels, [f"base={a}", ("rm3", b)], k=10)
    assert res.systems == ["base", "rm3"]


# --------------------------------------------------------------------------- columns

IR_MEASURES_QRELS = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"],
                                  "relevance": [2, 0]})
IR_MEASURES_RUN = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"],
                                "score": [2.0, 1.0]})
PYTERRIER_QRELS = pd.DataFrame({"qid": ["q1", "q1"], "docno": ["d1", "d2"], "label": [2, 0]})
PYTERRIER_RUN = pd.DataFrame({"qid": ["q1", "q1"], "docno": ["d2", "d1"], "rank": [0, 1],
                              "score": [5.0, 1.0], "query": ["x", "x"]})


@pytest.mark.parametrize("qrels,run,expected", [
    (IR_MEASURES_QRELS, IR_MEASURES_RUN, 1.0),             # d1 (grade 2) ranked first
    (PYTERRIER_QRELS, PYTERRIER_RUN, 1 / math.log2(3)),     # d1 second: (2/log2 3) / 2
])
def test_ecosystem_dataframes_score(qrels: pd.DataFrame, run: pd.DataFrame,
                                    expected: float) -> None:
    res = scoring.evaluate(qrels, run, k=10)
    assert res.mean("run") == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_ecosystem_files(tmp_path: Path, ext: str) -> None:
    for frame, name in ((PYTERRIER_QRELS, "q"), (PYTERRIER_RUN, "r"),
                        (IR_MEASURES_QRELS, "iq")):
        io.write_table(frame, tmp_path / f"{name}.{ext}")
    q = io.read_qrels(tmp_path / f"q.{ext}")
    assert q.columns.tolist() == ["query_id", "chunk_id", "grade"]
    assert q["grade"].tolist() == [2, 0]
    _frames_equal(io.read_qrels(tmp_path / f"iq.{ext}"), q)
    r = io.read_run(tmp_path / f"r.{ext}")
    assert r["chunk_id"].tolist() == ["d2", "d1"] and r["system"].tolist() == ["r", "r"]


def test_explicit_column_mapping() -> None:
    df = pd.DataFrame({"topic": ["1"], "doc": ["a"], "judgement": [3], "qid": ["other"]})
    mapped = io.as_qrels(df, columns={"topic": "query_id", "doc": "chunk_id",
                                      "judgement": "grade"})
    assert mapped.to_dict("records") == [{"query_id": "1", "chunk_id": "a", "grade": 3}]
    run = io.as_run(pd.DataFrame({"q": ["1"], "d": ["a"], "sim": [0.3]}),
                    columns={"q": "query_id", "d": "chunk_id", "sim": "score"})
    assert run["score"].tolist() == [0.3]
    with pytest.raises(InputError, match="'nope'"):
        rename_aliases(df, "qrels", {"nope": "grade"})


def test_column_mapping_error_names_the_file(tmp_path: Path) -> None:
    qrels = tmp_path / "q.csv"
    qrels.write_text("topic,doc,rel\n1,a,2\n")
    with pytest.raises(InputError, match="q.csv") as exc:
        io.read_qrels(qrels, columns={"nope": "grade"})
    assert "<DataFrame>" not in str(exc.value)
    run = tmp_path / "r.csv"
    run.write_text("q,d,sim\n1,a,0.3\n")
    with pytest.raises(InputError, match="r.csv"):
        io.read_run(run, columns={"nope": "score"})


def test_output_format_never_from_an_old_file(tmp_path: Path) -> None:
    old = tmp_path / "out.foo"
    old.write_text("a,b\n1,2\n")  # read as CSV by its content ...
    assert io.detect_format(old) == "csv"
    with pytest.raises(InputError, match="extension '.foo'"):  # ... but not written as one
        io.write_table(pd.DataFrame({"x": [1]}), old)
    assert old.read_text() == "a,b\n1,2\n"
