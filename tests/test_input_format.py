"""Forcing an input's format from the command line: every command that reads files takes
`--format [INPUT=]FORMAT` (`labeler label` too; its output's is `--out-format`).

Each case: a file whose extension and content do not say (an extensionless TSV of query texts)
or mislead (TREC qrels named `.csv`) fails with exit 2 naming the file and the flag to give,
and with the flag gives the same output as the properly named file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main

DATA = Path(__file__).parent / "data" / "compare"
LLMJUDGE = DATA / "llmjudge"
RUN = DATA / "runs" / "bm25tuned_p.run"


def _cli(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def kit(tmp_path: Path) -> Path:
    """The compare slice's files under odd names, and query/chunk texts for the LLMJudge
    label sets (TSV, with and without the .tsv extension)."""
    shutil.copy(DATA / "queries.tsv", tmp_path / "queries")          # id<TAB>text, no extension
    shutil.copy(DATA / "human.qrels", tmp_path / "human.csv")        # TREC qrels, named .csv
    shutil.copy(RUN, tmp_path / "bm25.csv")                          # TREC run, named .csv
    shutil.copy(LLMJUDGE / "human.qrels", tmp_path / "lj-human.csv")
    labels = io.read_qrels(LLMJUDGE / "human.qrels")
    for name, col in (("lj-queries", "query_id"), ("lj-corpus", "chunk_id")):
        text = "".join(f"{i}\ttext of {i}\n" for i in sorted(labels[col].unique()))
        (tmp_path / name).write_text(text)
        (tmp_path / f"{name}.tsv").write_text(text)
    return tmp_path


def _refused(code: int, err: str, file: str, hint: str) -> None:
    assert code == 2, err
    assert file in err and hint in err and "Traceback" not in err


def test_reconcile_forces_the_human_labels_and_the_audit_texts(kit: Path) -> None:
    common = ["reconcile", "--llm", LLMJUDGE / "willia-umbrela1.qrels", "--bootstrap", "0",
              "--min-gap", "2", "--corpus", kit / "lj-corpus.tsv"]
    (kit / "a").mkdir()
    code, _, err = _cli(*common, "--human", LLMJUDGE / "human.qrels", "--queries",
                        kit / "lj-queries.tsv", "--out", kit / "a" / "merged.jsonl",
                        "--audit", kit / "a" / "audit.csv")
    assert code == 0, err
    code, _, err = _cli(*common, "--human", kit / "lj-human.csv", "--queries",
                        kit / "lj-queries.tsv", "--out", kit / "m.jsonl")
    _refused(code, err, "lj-human.csv, line 1", "--format human=FORMAT")
    code, _, err = _cli(*common, "--human", LLMJUDGE / "human.qrels", "--queries",
                        kit / "lj-queries", "--out", kit / "m.jsonl", "--audit", kit / "x.csv")
    _refused(code, err, "lj-queries:", "--format queries=FORMAT")
    (kit / "b").mkdir()
    code, _, err = _cli(*common, "--human", kit / "lj-human.csv", "--queries",
                        kit / "lj-queries", "--format", "human=trec", "--format", "queries=tsv",
                        "--out", kit / "b" / "merged.jsonl", "--audit", kit / "b" / "audit.csv")
    assert code == 0, err
    for name in ("merged.jsonl", "audit.csv"):
        assert (kit / "b" / name).read_bytes() == (kit / "a" / name).read_bytes(), name
    assert "text of q22" in (kit / "b" / "audit.csv").read_text()
    # a wrong forcing: the reader's error names the file, the line and the forcing
    code, _, err = _cli(*common, "--human", kit / "lj-human.csv", "--format", "human=jsonl",
                        "--out", kit / "m.jsonl")
    _refused(code, err, "lj-human.csv, line 1", "not valid JSON")
    assert "--format human=jsonl" in err and not (kit / "m.jsonl").exists()


def test_sample_forces_the_texts(kit: Path) -> None:
    common = ["sample", "--labels", LLMJUDGE / "willia-umbrela1.qrels", "--n", "12"]
    code, _, err = _cli(*common, "--queries", kit / "lj-queries.tsv", "--corpus",
                        kit / "lj-corpus.tsv", "--out", kit / "a.csv")
    assert code == 0, err
    code, _, err = _cli(*common, "--queries", kit / "lj-queries", "--corpus",
                        kit / "lj-corpus", "--out", kit / "b.csv")
    _refused(code, err, "lj-queries:", "--format queries=FORMAT")
    code, _, err = _cli(*common, "--queries", kit / "lj-queries", "--corpus",
                        kit / "lj-corpus", "--format", "tsv", "--out", kit / "b.csv")
    assert code == 0, err   # a bare tsv: every input that can be tsv (queries and corpus)
    assert (kit / "b.csv").read_bytes() == (kit / "a.csv").read_bytes()
    assert "text of p" in (kit / "b.csv").read_text()
    # a bare csv forces the labels too: the error names that file and line
    code, _, err = _cli(*common, "--queries", kit / "lj-queries", "--corpus", kit / "lj-corpus",
                        "--format", "csv", "--out", kit / "c.csv")
    _refused(code, err, "willia-umbrela1.qrels, line 1", "TREC qrels line, not a CSV header")
    assert "--format csv" in err and not (kit / "c.csv").exists()


def test_label_format_is_the_inputs_and_out_format_the_outputs(kit: Path) -> None:
    common = ["label", "--corpus", DATA / "corpus.jsonl", "--run", f"bm25={RUN}",
              "--depth", "3", "--model", "lexical"]
    code, _, err = _cli(*common, "--queries", DATA / "queries.tsv", "--out", kit / "a.csv")
    assert code == 0, err
    code, _, err = _cli(*common, "--queries", kit / "queries", "--out", kit / "b.out",
                        "--out-format", "csv")
    _refused(code, err, "queries:", "--format queries=FORMAT")
    code, _, err = _cli(*common, "--queries", kit / "queries", "--format", "queries=tsv",
                        "--out", kit / "b.out", "--out-format", "csv")
    assert code == 0, err
    keep = ["query_id", "chunk_id", "grade", "status"]
    got, want = pd.read_csv(kit / "b.out", dtype=str), pd.read_csv(kit / "a.csv", dtype=str)
    assert len(got) == 30
    pd.testing.assert_frame_equal(got[keep], want[keep])
    code, _, err = _cli(*common, "--queries", DATA / "queries.tsv", "--format",
                        "run=jsonl", "--out", kit / "c.csv")
    _refused(code, err, f"{RUN}, line 1", "not valid JSON")
    assert "--format run=jsonl" in err and not (kit / "c.csv").exists()
    # few-shot examples are not reached by --format: their error does not suggest it
    (kit / "examples.dat").write_text("query_id\tquery\tchunk_id\tchunk\tgrade\n")
    code, _, err = _cli(*common[:-2], "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                        "--queries", DATA / "queries.tsv", "--examples", kit / "examples.dat",
                        "--out", kit / "c.csv", env={"OPENAI_API_KEY": "test-key"})
    _refused(code, err, "examples.dat: cannot tell the format", "use one of .csv")
    assert "format (" not in err


def test_pool_forces_the_queries(kit: Path) -> None:
    common = ["pool", "--corpus", DATA / "corpus.jsonl", "--run", RUN, "--depth", "5"]
    code, _, err = _cli(*common, "--queries", DATA / "queries.tsv", "--out", kit / "a.jsonl")
    assert code == 0, err
    code, _, err = _cli(*common, "--queries", kit / "queries", "--out", kit / "b.jsonl")
    _refused(code, err, "queries:", "--format queries=FORMAT")
    code, _, err = _cli(*common, "--queries", kit / "queries", "--format", "queries=tsv",
                        "--out", kit / "b.jsonl")
    assert code == 0, err
    assert (kit / "b.jsonl").read_bytes() == (kit / "a.jsonl").read_bytes()


def test_score_forces_each_input(kit: Path) -> None:
    code, want, err = _cli("score", "--qrels", DATA / "human.qrels", "--run", RUN, "--json")
    assert code == 0, err
    code, _, err = _cli("score", "--qrels", kit / "human.csv", "--run", RUN)
    _refused(code, err, "human.csv, line 1", "--format qrels=FORMAT")
    code, _, err = _cli("score", "--qrels", kit / "human.csv", "--run", kit / "bm25.csv",
                        "--format", "qrels=trec")
    _refused(code, err, "bm25.csv, line 1", "--format run=FORMAT")
    code, got, err = _cli("score", "--qrels", kit / "human.csv", "--run", kit / "bm25.csv",
                          "--format", "trec", "--json")
    assert code == 0, err
    assert json.loads(got) == json.loads(want)


def test_compare_forces_the_queries(kit: Path) -> None:
    common = ["compare", "--human", DATA / "human.qrels", "--llm", DATA / "human.qrels",
              "--run", RUN, "--run", DATA / "runs" / "p_exp_bert.run", "--json"]
    code, want, err = _cli(*common, "--queries", DATA / "queries.tsv")
    assert code == 0, err
    code, _, err = _cli(*common, "--queries", kit / "queries")
    _refused(code, err, "queries:", "--format queries=FORMAT")
    code, got, err = _cli(*common, "--queries", kit / "queries", "--format", "queries=tsv")
    assert code == 0, err
    assert json.loads(got) == json.loads(want)


def test_judges_and_blend_force_the_label_sets(kit: Path) -> None:
    llm = LLMJUDGE / "willia-umbrela1.qrels"
    common = ["judges", "--llm", f"umbrela={llm}", "--bootstrap", "0", "--json"]
    code, want, err = _cli(*common, "--human", LLMJUDGE / "human.qrels")
    assert code == 0, err
    code, _, err = _cli(*common, "--human", kit / "lj-human.csv")
    _refused(code, err, "lj-human.csv, line 1", "--format human=FORMAT")
    code, got, err = _cli(*common, "--human", kit / "lj-human.csv", "--format", "trec")
    assert code == 0, err
    assert json.loads(got) == json.loads(want)

    blend = ["blend", "--llm", f"umbrela={llm}", "--method", "vote"]
    code, _, err = _cli(*blend, "--llm", f"human={LLMJUDGE / 'human.qrels'}",
                        "--out", kit / "a.jsonl")
    assert code == 0, err
    code, _, err = _cli(*blend, "--llm", f"human={kit / 'lj-human.csv'}", "--out", kit / "b.jsonl")
    _refused(code, err, "lj-human.csv, line 1", "--format llm=FORMAT")
    code, _, err = _cli(*blend, "--llm", f"human={kit / 'lj-human.csv'}", "--format", "llm=trec",
                        "--out", kit / "b.jsonl")
    assert code == 0, err
    assert (kit / "b.jsonl").read_bytes() == (kit / "a.jsonl").read_bytes()


def test_a_txt_table_is_read_by_its_content(kit: Path) -> None:
    """A `.txt` extension only guesses TREC: CSV content is read as CSV, without a flag."""
    table = io.read_qrels(DATA / "human.qrels")
    table.to_csv(kit / "human.txt", index=False)
    code, want, err = _cli("score", "--qrels", DATA / "human.qrels", "--run", RUN, "--json")
    assert code == 0, err
    code, got, err = _cli("score", "--qrels", kit / "human.txt", "--run", RUN, "--json")
    assert code == 0, err
    assert json.loads(got) == json.loads(want)


@pytest.mark.parametrize(("value", "message"), [
    ("xml", "--format xml: unknown format 'xml'"),
    ("judgements=trec", "no input here is called 'judgements' (inputs: qrels, run)"),
    ("run=tsv", "--format run=tsv: --run cannot be tsv"),
    ("run=csv --format run=trec", "--run is given two formats (run=csv, run=trec)"),
    ("csv --format trec", "give one FORMAT for every input, or INPUT=FORMAT for each input"),
])
def test_a_bad_format_value_is_refused_before_reading(value: str, message: str) -> None:
    code, _, err = _cli("score", "--qrels", DATA / "human.qrels", "--run", RUN,
                        "--format", *value.split())
    _refused(code, err, "--format", message)


def test_run_config_forces_a_format_per_input(kit: Path) -> None:
    """`labeler run` reads its inputs from the config: `format` in [inputs] (per input) and
    in [human]; the error for a file that does not say names those keys."""
    def job(queries: Path, human: Path, formats: str = "", human_format: str = "") -> Path:
        (kit / "job.toml").write_text(f"""\
out_dir = "out"
[inputs]
queries = "{queries}"
corpus = "{DATA / 'corpus.jsonl'}"
runs = ["{RUN}"]
depth = 3
{formats}
[judge]
model = "lexical"
[human]
qrels = "{human}"
{human_format}
""")
        return kit / "job.toml"

    code, want, err = _cli("run", "--check", job(DATA / "queries.tsv", DATA / "human.qrels"))
    assert code == 0, err
    code, _, err = _cli("run", "--check", job(kit / "queries", DATA / "human.qrels"))
    _refused(code, err, f"{kit / 'queries'}: cannot tell the format",
             "or give it in the config: format = {queries = FORMAT} in [inputs]")
    code, _, err = _cli("run", "--check", job(kit / "queries", kit / "human.csv",
                                              'format = {queries = "tsv"}'))
    _refused(code, err, "human.csv, line 1", "format = FORMAT in [human]")
    code, got, err = _cli("run", "--check", job(kit / "queries", kit / "human.csv",
                                                'format = {queries = "tsv"}',
                                                'format = "trec"'))
    assert code == 0, err
    assert got.splitlines()[0] == want.splitlines()[0]   # the same pairs, queries, runs, labels
    assert "30 pairs" in got and "1802 human labels" in got
    code, _, err = _cli("run", "--check", job(kit / "queries", DATA / "human.qrels",
                                              'format = {runs = "tsv"}'))
    _refused(code, err, "job.toml: inputs: ", "runs cannot be tsv")


def test_label_older_format_spellings_still_work_with_a_note(kit: Path) -> None:
    common = ["label", "--corpus", DATA / "corpus.jsonl", "--run", f"bm25={RUN}",
              "--depth", "3", "--model", "lexical"]
    code, _, err = _cli(*common, "--queries", kit / "queries", "--format", "queries=tsv",
                        "--out", kit / "new.out", "--out-format", "csv")
    assert code == 0 and "deprecated" not in err, err
    # label's --format csv was the output's format; --input-format the inputs'
    code, _, err = _cli(*common, "--queries", kit / "queries", "--input-format", "queries=tsv",
                        "--out", kit / "old.out", "--format", "csv")
    assert code == 0, err
    assert "--input-format is deprecated; use --format" in err
    assert "use --out-format csv" in err
    assert (kit / "old.out").read_text() == (kit / "new.out").read_text()
    assert pd.read_csv(kit / "old.out").shape[0] == 30


def test_the_cli_and_the_config_take_the_formats_of_one_table(kit: Path) -> None:
    """Every object's formats come from ``labeler.schema.FORMATS_OF``: a format an object
    cannot be in is refused the same way by ``--format`` and by the config, naming what fits."""
    from labeler.schema import FORMATS_OF, INPUT_FORMATS

    assert set(INPUT_FORMATS) == {f for fits in FORMATS_OF.values() for f in fits}
    for fmt in INPUT_FORMATS:
        code, _, err = _cli("score", "--qrels", DATA / "human.qrels", "--run", RUN,
                            "--format", f"qrels={fmt}", "--format", "run=trec")
        if fmt in FORMATS_OF["labels"]:
            assert "--qrels cannot be" not in err
        else:
            _refused(code, err, f"--format qrels={fmt}", f"--qrels cannot be {fmt}")
    (kit / "job.toml").write_text(f"""\
out_dir = "out"
[inputs]
queries = "{DATA / 'queries.tsv'}"
corpus = "{DATA / 'corpus.jsonl'}"
runs = ["{RUN}"]
[judge]
model = "lexical"
[human]
qrels = "{DATA / 'human.qrels'}"
format = "tsv"
""")
    code, _, err = _cli("run", "--check", kit / "job.toml")
    _refused(code, err, "job.toml: human.format: ",
             f"the qrels cannot be tsv (use {', '.join(FORMATS_OF['labels'])})")
