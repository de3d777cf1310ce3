"""docs/planning.md's workflow end to end on the bundled sample (ten TREC DL 2019 queries,
three runs): LLM labels of the pool, a first random sample of whole queries, the plan, the
next queries of the same order, the comparison with PPI and its report — each step checked
for what a user of the page would notice. The NIST labels stand in for the people who fill
in the sheets."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import labeler
from labeler import io
from labeler.cli import main

SAMPLE = Path(__file__).resolve().parents[1] / "data"
RUNS = [SAMPLE / "runs" / f"{r}.run" for r in ("bm25tuned_p", "p_exp_bert", "ICT-CKNRM_B")]
RUN_ARGS = [a for p in RUNS for a in ("--run", str(p))]
W = "0.15"


def cli(*args: object) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return str(r.output)


def fill(sheet: Path) -> None:
    """People label the sheet: every row gets its NIST grade (0 where NIST has none)."""
    nist = io.read_qrels(SAMPLE / "human.qrels")
    grade = {(q, c): int(g) for q, c, g in zip(nist["query_id"], nist["chunk_id"],
                                                nist["grade"])}
    df = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    df["grade"] = [grade.get((q, c), 0) for q, c in zip(df["query_id"], df["chunk_id"])]
    df.to_csv(sheet, index=False)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The LLM labels of the pool (the offline lexical judge), as the page assumes."""
    tmp = tmp_path_factory.mktemp("workflow")
    cli("pool", "--queries", SAMPLE / "queries.tsv", "--corpus", SAMPLE / "corpus.jsonl",
        *RUN_ARGS, "--depth", 10, "--out", tmp / "pairs.csv")
    cli("label", "--pairs", tmp / "pairs.csv", "--model", "lexical", "--out",
        tmp / "labels.jsonl", "--cache-dir", tmp / "cache")
    return tmp


def test_the_planning_page_workflow(work: Path) -> None:
    sheets = work / "sheets"
    todo = sheets / "todo.csv"
    # 1. a first random sample of whole queries, with texts; the design records its sources
    out = cli("sample", "--unit", "query", "--labels", work / "labels.jsonl", "--n", 5,
              "--seed", 1, "--pairs", work / "pairs.csv", "--out", todo)
    assert "of 5 randomly drawn queries" in out and "warning" not in out
    design = json.loads((sheets / "design.json").read_text())
    assert design["drawn"] == 5 and design["texts"] == {"pairs": "../pairs.csv"}
    assert {"query", "chunk"} <= set(pd.read_csv(todo).columns)
    fill(todo)

    # 2. the plan: in each run's own queries, the design's order found next to the sheet
    plan_args = ["plan", "--human", todo, "--llm", work / "labels.jsonl", *RUN_ARGS,
                 "--half-width", W]
    d = json.loads(cli(*plan_args, "--json"))
    assert d["now"] == 5 and d["order"] == "design"
    assert d["design"] == str(sheets / "design.json")
    assert {r["labelled"] for r in d["per_run"].values()} == {"5 of 10"}
    assert not d["enough_now"] and 0 < d["more"]["ppi"] < 5
    more = d["draw"]["ppi"]
    assert more == d["more"]["ppi"]  # every query drawn so far is labelled
    text = cli(*plan_args)
    assert f"Draw them with: labeler sample --more {more} --from {sheets / 'design.json'}" \
        in text
    assert f"with the LLM labels (PPI): {more} more quer" in text

    # 3. the next queries of the same order; the texts come from the design
    out = cli("sample", "--more", more, "--from", todo)
    todo2 = sheets / "todo-2.csv"
    assert f"{5 + more} of 10 queries drawn so far" in out and "warning" not in out
    second = pd.read_csv(todo2, dtype=str)
    assert {"query", "chunk"} <= set(second.columns)
    assert set(second["query_id"]) == set(design["permutation"][5:5 + more])
    fill(todo2)

    # 4. the plan again, from both sheets read together
    d2 = json.loads(cli(*plan_args, "--human", todo2, "--json"))
    assert d2["now"] == 5 + more
    assert d2["enough_now"] == all(r["enough_now"]["ppi"] for r in d2["per_run"].values())

    # 5. compare --ppi: one planning line, from plan's computation; no other "how many more"
    both = ["--human", todo, "--human", todo2]
    c = json.loads(cli("compare", "--ppi", *both, "--llm", work / "labels.jsonl", *RUN_ARGS,
                       "--json"))
    assert {r["ppi"]["n_labelled"] for r in c["runs"].values()} == {5 + more}
    line = c["statistics"]["planning"]
    assert line.startswith("Planning:") and "`labeler plan --half-width" in line
    terminal = cli("compare", "--ppi", *both, "--llm", work / "labels.jsonl", *RUN_ARGS,
                   "--report", work / "report")
    assert terminal.count("Planning:") == 1 and line in terminal
    for gone in ("would halve", "would likely be resolved with", "the nearest"):
        assert gone not in terminal
    html = (work / "report" / "report.html").read_text()
    md = (work / "report" / "report.md").read_text()
    assert "Planning: " in html and "Planning: " in md
    assert json.loads((work / "report" / "report.json").read_text())["statistics"][
        "planning"] == line
    # the line is `labeler plan`'s own sentence for that width
    w = line.split("within ±")[1].split(",")[0].split(" ")[0]
    human = pd.concat([io.read_qrels(todo), io.read_qrels(todo2)])
    again = labeler.plan(human=human, llm=work / "labels.jsonl", runs=RUNS,
                         half_width=float(w))
    assert again.line() == line

    # 6. a sample of pairs is refused for PPI, with the reason
    pairs_sheet = work / "pair_sample.csv"
    cli("sample", "--labels", work / "labels.jsonl", "--n", 30, "--out", pairs_sheet)
    fill(pairs_sheet)
    r = CliRunner().invoke(main, ["compare", "--ppi", "--human", str(pairs_sheet), "--llm",
                                  str(work / "labels.jsonl"), *RUN_ARGS])
    assert r.exit_code == 2 and "only partly labelled" in r.output
    assert "`labeler sample --unit query` draws whole queries" in r.output


def test_the_python_way_draws_the_same_sheets(work: Path, tmp_path: Path) -> None:
    first = labeler.sample_queries(work / "labels.jsonl", n=5, seed=1, pairs=work / "pairs.csv",
                                   out=tmp_path / "todo.csv")
    assert first.sheet == tmp_path / "todo.csv" and set(first.design.texts) == {"pairs"}
    cli("sample", "--unit", "query", "--labels", work / "labels.jsonl", "--n", 5, "--seed", 1,
        "--pairs", work / "pairs.csv", "--out", tmp_path / "cli" / "todo.csv")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "todo.csv"),
                                  pd.read_csv(tmp_path / "cli" / "todo.csv"))
    more = labeler.more_queries(tmp_path / "todo.csv", m=3)
    assert more.sheet == tmp_path / "todo-2.csv" and len(more.new_queries) == 3
    assert more.design.drawn == 8 and {"query", "chunk"} <= set(more.pairs.columns)
    cli("sample", "--more", 3, "--from", tmp_path / "cli" / "todo.csv")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "todo-2.csv"),
                                  pd.read_csv(tmp_path / "cli" / "todo-2.csv"))


def test_a_design_in_memory_grows_without_writing(work: Path, tmp_path: Path) -> None:
    first = labeler.sample_queries(work / "labels.jsonl", n=4, seed=2)
    assert first.sheet is None and first.design.drawn == 4
    more = labeler.more_queries(first.design, m=2, labels=work / "labels.jsonl")
    assert more.sheet is None and more.design.drawn == 6
    assert more.new_queries == first.design.permutation[4:6]
    assert set(more.pairs["query_id"]) == set(more.new_queries)
    assert list(tmp_path.iterdir()) == []
