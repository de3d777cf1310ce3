"""The IR ecosystem from the command line: measures, trec_eval output, named runs, files as
they come, pipes, pooling with texts, annotation sheets with texts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main

pytrec_eval = pytest.importorskip("pytrec_eval")

DL19 = Path(__file__).parent / "data" / "dl19"
SAMPLE = Path(__file__).resolve().parent.parent / "data"


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _pytrec(run: Path, measures: set[str], level: int = 1) -> dict[str, dict[str, float]]:
    with open(DL19 / "qrels-pass.qrels") as fq, open(run) as fr:
        ev = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), measures,
                                            relevance_level=level)
        return ev.evaluate(pytrec_eval.parse_run(fr))


def test_score_measures_json_equal_pytrec_eval() -> None:
    run = DL19 / "runs" / "bm25tuned_p.run"
    code, out, err = _cli("score", "--qrels", str(DL19 / "qrels-pass.qrels"), "--run",
                          f"bm25={run}", "--measure", "P@10", "--measure", "map",
                          "--measure", "P(rel=2)@10", "--measure", "R@100", "--json")
    assert code == 0, err
    entry = json.loads(out)["runs"]["bm25"]          # the name wins over the TREC tag
    # the measures are added to the default NDCG@10, each once, named as asked
    assert set(entry) == {"ndcg@10", "P@10", "map", "P(rel=2)@10", "R@100"}   # map stays map
    ref = _pytrec(run, {"P.10", "map", "recall.100"})
    ref2 = _pytrec(run, {"P.10"}, level=2)
    for key, name, table in (("P@10", "P_10", ref), ("map", "map", ref),
                             ("R@100", "recall_100", ref), ("P(rel=2)@10", "P_10", ref2)):
        assert entry[key]["per_query"] == pytest.approx({q: v[name] for q, v in table.items()},
                                                        abs=1e-12), key
        assert entry[key]["n_queries"] == 10


def test_trec_output_matches_pytrec_eval_to_four_decimals(tmp_path: Path) -> None:
    run = DL19 / "runs" / "p_exp_bert.run"
    # the run lacks one query of the qrels: --complete counts it as 0
    short = tmp_path / "short.res"
    short.write_text("".join(line for line in run.read_text().splitlines(True)
                             if not line.startswith("19335 ")))
    code, out, err = _cli("score", "--qrels", str(DL19 / "qrels-pass.qrels"), "--run",
                          str(short), "--measure", "ndcg_cut.10", "--measure", "recip_rank",
                          "--trec", "--per-query", "--complete")
    assert code == 0, err
    ref = _pytrec(short, {"ndcg_cut.10", "recip_rank"})
    assert len(ref) == 9
    lines = [ln.split("\t") for ln in out.splitlines()]
    assert [name.strip() for name, _, _ in lines[-4:]] == ["runid", "num_q", "ndcg_cut_10",
                                                           "recip_rank"]
    assert lines[-4][2] == "p_exp_bert" and lines[-3][2] == "10"
    for name, qid, value in lines:
        name = name.strip()
        if name in ("runid", "num_q"):
            continue
        if qid == "all":
            want = sum(v[name] for v in ref.values()) / 10
        else:
            want = ref[qid][name] if qid in ref else 0.0
        assert value == f"{want:.4f}", (name, qid)


def test_two_runs_with_the_same_tag_are_named_on_the_command_line(tmp_path: Path) -> None:
    qrels = DL19 / "qrels-pass.qrels"
    text = (DL19 / "runs" / "bm25tuned_p.run").read_text()
    a = tmp_path / "run.msmarco-v1-passage.bm25-default.dl19.txt"
    b = tmp_path / "run.msmarco-v1-passage.bm25-rm3-default.dl19.txt"
    a.write_text(text.replace("bm25tuned_p", "Anserini"))
    b.write_text(text.replace("bm25tuned_p", "Anserini"))
    code, _, err = _cli("score", "--qrels", str(qrels), "--run", str(a), "--run", str(b))
    assert code == 2 and "NAME=PATH" in err
    long_a = "msmarco-v1-passage.bm25-default-very-long-name"
    long_b = "msmarco-v1-passage.bm25-rm3-default-very-long-name"
    code, out, err = _cli("score", "--qrels", str(qrels), "--run", f"{long_a}={a}",
                          "--run", f"{long_b}={b}", "--measure", "AP")
    assert code == 0, err
    assert long_a in out and long_b in out                 # full names without a terminal


def test_tags_with_escapes_and_markup_are_shown_as_plain_text(tmp_path: Path) -> None:
    run = tmp_path / "evil.run"
    run.write_text("19335 Q0 1017759 1 2.0 \x1b[31m[bold]red[/bold]\x1b[0m\n")
    code, out, _ = _cli("score", "--qrels", str(DL19 / "qrels-pass.qrels"), "--run", str(run))
    assert code == 0
    assert "\x1b" not in out and "[bold]red[/bold]" in out


def test_huge_k_is_bounded_by_the_rankings() -> None:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "labeler", "score", "--qrels",
                           str(DL19 / "qrels-pass.qrels"), "--run",
                           str(DL19 / "runs" / "bm25tuned_p.run"), "--k", "1000000000",
                           "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 10
    entry = json.loads(proc.stdout)["runs"]["bm25tuned_p"]["ndcg@1000000000"]
    ref = _pytrec(DL19 / "runs" / "bm25tuned_p.run", {"ndcg"})   # uncut NDCG: the same
    assert entry["per_query"] == pytest.approx({q: v["ndcg"] for q, v in ref.items()},
                                               abs=1e-9)


def test_per_query_ndcg_never_exceeds_one() -> None:
    code, out, _ = _cli("score", "--qrels", str(DL19 / "qrels-pass.qrels"), "--run",
                        str(DL19 / "runs" / "p_exp_bert.run"), "--k", "1", "--k", "3",
                        "--k", "1000", "--json")
    values = [v for m in json.loads(out)["runs"]["p_exp_bert"].values()
              for v in m["per_query"].values()]
    assert code == 0 and max(values) <= 1.0 and 1.0 in values


# --------------------------------------------------------------------------- compare

@pytest.fixture
def llm(tmp_path: Path) -> Path:
    """A second label set: the human one with every third grade moved."""
    lines = (DL19 / "qrels-pass.qrels").read_text().splitlines()
    moved = [f"{q} 0 {d} {(int(g) + 2) % 4}" if i % 3 == 0 else f"{q} 0 {d} {g}"
             for i, (q, _, d, g) in enumerate(map(str.split, lines))]
    path = tmp_path / "llm.qrels"
    path.write_text("\n".join(moved) + "\n")
    return path


def _compare(llm: Path, *extra: str) -> tuple[int, str, str]:
    runs = sorted((DL19 / "runs").glob("*.run"))
    args = ["compare", "--human", str(DL19 / "qrels-pass.qrels"), "--llm", str(llm)]
    for r in runs:
        args += ["--run", str(r)]
    return _cli(*args, *extra)


def test_compare_by_a_measure_and_one_k(llm: Path) -> None:
    code, out, err = _compare(llm, "--measure", "AP@100", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["measure"] == "AP@100"
    for tag, v in d["runs"].items():
        ref = _pytrec(DL19 / "runs" / f"{tag}.run", {"map_cut.100"})
        assert v["human"] == pytest.approx(sum(x["map_cut_100"] for x in ref.values()) / 10,
                                           abs=1e-12)
    code, _, err = _compare(llm, "--k", "5", "--k", "10")
    assert code == 2 and "one cut-off at a time" in err


def test_compare_report_reads_the_llm_labels_in_the_format_given(llm: Path,
                                                                  tmp_path: Path) -> None:
    odd = tmp_path / "llm-labels.csv"   # TREC qrels whatever the extension says
    odd.write_text(llm.read_text())
    code, _, err = _compare(odd, "--format", "trec", "--report", str(tmp_path / "rep"))
    assert code == 0, err
    judge = json.loads((tmp_path / "rep" / "report.json").read_text())["judge"]
    assert judge["known"] is False and judge["n_pairs"] == len(llm.read_text().splitlines())


def test_compare_report_takes_llm_grades_beyond_3_as_the_comparison_does(
        llm: Path, tmp_path: Path) -> None:
    wide = tmp_path / "llm-wide.qrels"   # a 4-point scale: the comparison scores grade 4
    lines = llm.read_text().splitlines()
    q, it, doc, _ = lines[0].split()
    wide.write_text("\n".join([f"{q} {it} {doc} 4", *lines[1:]]) + "\n")
    code, _, err = _compare(wide, "--report", str(tmp_path / "rep"))
    assert code == 0, err
    assert (tmp_path / "rep" / "report.html").is_file()


def test_compare_text_names_the_measure_of_the_pair_deltas(llm: Path) -> None:
    code, out, err = _compare(llm, "--measure", "AP@100", "--alpha", "0.999")
    assert code == 0, err
    intro = next(ln for ln in out.splitlines() if ln.startswith("Pairs that differ"))
    assert "Δ = mean AP@100 of the first minus the second" in intro


def test_compare_top_n_is_honoured_and_shows_what_it_ranks_by(llm: Path) -> None:
    code, out, _ = _compare(llm, "--top", "7")
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("Queries that change most"))
    assert line.count("(|delta| ") == 7
    code, out, _ = _compare(llm, "--top", "7", "--json")
    most = json.loads(out)["most_changed"]
    assert len(most) == 7
    shown = [float(x.split(",")[0]) for x in line.split("(|delta| ")[1:]]
    assert shown == [round(m["mean_abs_delta"], 4) for m in most]
    assert shown == sorted(shown, reverse=True) and shown[0] > 0


# --------------------------------------------------------------------------- texts

def test_pool_writes_pairs_with_texts_and_label_takes_named_runs(tmp_path: Path) -> None:
    runs = sorted((SAMPLE / "runs").glob("*.run"))
    out = tmp_path / "pairs.jsonl"
    code, text, err = _cli("pool", "--queries", str(SAMPLE / "queries.tsv"), "--corpus",
                           str(SAMPLE / "corpus.jsonl"), "--run", f"bm25={runs[1]}",
                           "--run", str(runs[2]), "--depth", "5", "--out", str(out))
    assert code == 0, err
    pairs = io.read_pairs(out)
    assert text.startswith(f"{len(pairs)} pairs over 10 queries")
    top5 = set()
    for r in runs[1:]:
        run = io.read_run(r).sort_values(["query_id", "score", "chunk_id"],
                                         ascending=[True, False, False])
        top5 |= set(map(tuple, run.groupby("query_id").head(5)[["query_id", "chunk_id"]]
                        .to_numpy().tolist()))
    assert set(zip(pairs["query_id"], pairs["chunk_id"])) == top5
    corpus = io.read_corpus(SAMPLE / "corpus.jsonl").set_index("chunk_id")["chunk"]
    assert (pairs["chunk"] == pairs["chunk_id"].map(corpus)).all()
    labels = tmp_path / "labels.jsonl"
    code, _, err = _cli("label", "--queries", str(SAMPLE / "queries.tsv"), "--corpus",
                        str(SAMPLE / "corpus.jsonl"), "--run", f"bm25={runs[1]}", "--run",
                        str(runs[2]), "--depth", "5", "--model", "lexical", "--out",
                        str(labels))
    assert code == 0, err
    assert len(io.read_labels(labels)) == len(pairs)


def test_sample_and_audit_take_queries_and_corpus(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    runs = sorted((SAMPLE / "runs").glob("*.run"))
    texts = ["--queries", str(SAMPLE / "queries.tsv"), "--corpus", str(SAMPLE / "corpus.jsonl")]
    code, _, err = _cli("label", *texts, "--run", str(runs[0]), "--depth", "5",
                        "--model", "lexical", "--out", str(labels))
    assert code == 0, err
    sheet = tmp_path / "sheet.csv"
    code, _, err = _cli("sample", "--labels", str(labels), "--n", "12", "--out", str(sheet),
                        *texts)
    assert code == 0 and "ids only" not in err
    df = pd.read_csv(sheet, dtype=str)
    assert df["query"].notna().all() and df["chunk"].notna().all() and len(df) == 12
    code, _, err = _cli("sample", "--labels", str(labels), "--n", "12", "--out", str(sheet))
    assert code == 0 and "ids only" in err                    # said loudly, not silently
    audit = tmp_path / "audit.jsonl"
    code, _, err = _cli("reconcile", "--llm", str(labels), "--human",
                        str(SAMPLE / "human.qrels"), "--out", str(tmp_path / "m.jsonl"),
                        "--audit", str(audit), "--min-gap", "1", "--bootstrap", "0", *texts)
    assert code == 0, err
    rows = pd.read_json(audit, lines=True, dtype=str)
    assert len(rows) and rows["chunk"].notna().all() and rows["query"].notna().all()


def _job(tmp_path: Path, runs: list[str], judge: str, depth: int, out: str = "out",
         human: bool = False) -> Path:
    """A run config on the bundled sample."""
    path = tmp_path / "job.toml"
    listed = ", ".join(f'"{r}"' for r in runs)
    path.write_text(f"""
out_dir = "{out}"
[inputs]
queries = "{SAMPLE / 'queries.tsv'}"
corpus = "{SAMPLE / 'corpus.jsonl'}"
runs = [{listed}]
depth = {depth}
[judge]
{judge}
""" + (f'[human]\nqrels = "{SAMPLE / "human.qrels"}"\n' if human else ""))
    return path


def test_run_config_takes_named_runs(tmp_path: Path) -> None:
    runs = sorted((SAMPLE / "runs").glob("*.run"))
    config = _job(tmp_path, [f"first={runs[0]}", str(runs[1])], 'model = "lexical"', 3)
    code, _, err = _cli("run", str(config), "--log-level", "warning")
    assert code == 0, err
    scores = json.loads((tmp_path / "out" / "latest" / "scores.json").read_text())
    assert set(scores["runs"]) == {"first", "bm25tuned_p"}


def test_run_check_validates_without_calling_the_judge(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    runs = sorted((SAMPLE / "runs").glob("*.run"))

    def config(run: str, judge: str, out: str = "out") -> Path:
        return _job(tmp_path, [run], judge, 5, out=out, human=True)

    # a local endpoint that nothing listens on: --check never calls it
    local = 'model = "qwen2.5:7b"\nbase_url = "http://127.0.0.1:9/v1"'
    code, out, err = _cli("run", "--check", str(config(f"bm25={runs[1]}", local)))
    assert code == 0, err
    pool = io.read_run(runs[1]).sort_values(["query_id", "score", "chunk_id"],
                                            ascending=[True, False, False])
    n = len(pool.groupby("query_id").head(5))
    assert out.startswith(f"config ok: {n} pairs over 10 queries, 1 runs, 1456 human labels")
    assert not (tmp_path / "out").exists()                  # nothing written
    code, _, err = _cli("run", "--check", str(config(str(tmp_path / "missing.run"), local)))
    assert code == 2 and "missing.run" in err
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = _cli("run", "--check", str(config(str(runs[1]), 'model = "gpt-4o-mini"')))
    assert code == 2 and "OPENAI_API_KEY" in err
    (tmp_path / "afile").write_text("x")
    code, _, err = _cli("run", "--check", str(config(str(runs[1]), 'model = "lexical"',
                                                    out="afile/out")))
    assert code == 2 and "nothing can be written under it" in err


def test_ndcg_asked_as_a_measure_is_printed_once_under_its_name() -> None:
    run = DL19 / "runs" / "bm25tuned_p.run"
    args = ["score", "--qrels", str(DL19 / "qrels-pass.qrels"), "--run", f"bm25={run}"]
    code, out, err = _cli(*args, "--measure", "nDCG@10", "--json")
    assert code == 0, err
    asked = json.loads(out)["runs"]["bm25"]
    assert set(asked) == {"nDCG@10"}
    code, out, _ = _cli(*args, "--json")
    default = json.loads(out)["runs"]["bm25"]
    assert asked["nDCG@10"]["per_query"] == default["ndcg@10"]["per_query"]
    code, out, _ = _cli(*args, "--measure", "nDCG@10", "--k", "5", "--json")
    assert set(json.loads(out)["runs"]["bm25"]) == {"ndcg@5", "nDCG@10"}
