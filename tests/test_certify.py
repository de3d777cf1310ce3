"""`labeler certify` and `labeler.certify`: the certified leaderboard on the TREC DL 2019 slice
(NIST labels of 10 queries, 3 runs), with LLM labels made from the NIST grades plus noise and
a design drawn by `labeler sample --unit query`; exact values checked against pytrec_eval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result

import labeler
from labeler import io
from labeler.cli import main
from labeler.reconciliation.design import draw_queries, write_design

DATA = Path(__file__).parent / "data" / "dl19"
RUNS = sorted((DATA / "runs").glob("*.run"))
KEYS = {"n", "N", "alpha", "runs", "pairs", "top", "next"}


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["certify", *args])


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("certify")
    human = io.read_qrels(DATA / "qrels-pass.qrels")
    rng = np.random.default_rng(4)
    g = human["grade"].to_numpy(dtype=float) + 0.4 + rng.normal(0, 0.7, len(human))
    llm = human.assign(grade=np.clip(np.rint(g), 0, 3).astype(int))
    io.write_qrels(llm, tmp / "llm.qrels")
    first = draw_queries(llm, n=4, seed=7)
    write_design(first.design, tmp / "sheets" / "design.json")
    order = first.design.permutation

    def sheet(name: str, queries: list[str]) -> Path:
        path = tmp / "sheets" / name
        io.write_qrels(human.loc[human["query_id"].isin(queries)], path)
        return path

    return {"tmp": tmp, "order": order, "human": human, "llm": tmp / "llm.qrels",
            "front6": sheet("front6.qrels", order[:6]), "all": sheet("all.qrels", order),
            "a": sheet("a.qrels", order[:3]), "b": sheet("b.qrels", order[3:6]),
            "gap": sheet("gap.qrels", [*order[:3], order[4]]),
            "design": tmp / "sheets" / "design.json"}


def _args(job: dict[str, object], *human: str) -> list[str]:
    out = [a for h in human for a in ("--human", str(job[h]))]
    out += ["--llm", str(job["llm"])]
    return out + [a for r in RUNS for a in ("--run", str(r))]


def _pytrec_means(human: pd.DataFrame, queries: list[str]) -> dict[str, float]:
    import pytrec_eval

    qrels = {q: dict(zip(g["chunk_id"], g["grade"].astype(int)))
             for q, g in human.groupby("query_id")}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    out = {}
    for path in RUNS:
        run = io.read_run(path)
        tag = str(run["system"].iloc[0])
        scores = {q: dict(zip(g["chunk_id"], g["score"].astype(float)))
                  for q, g in run.groupby("query_id")}
        res = ev.evaluate(scores)
        out[tag] = float(np.mean([res.get(q, {}).get("ndcg_cut_10", 0.0) for q in queries]))
    return out


def test_json_has_the_contract_keys_and_names_the_next_queries(job: dict[str, object]) -> None:
    r = _cli(*_args(job, "front6"), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert set(d) == KEYS and (d["n"], d["N"], d["alpha"]) == (6, 10, 0.05)
    for run in d["runs"].values():
        assert set(run) == {"estimate", "cs"}
        assert run["cs"][0] <= run["estimate"] <= run["cs"][1]
    assert len(d["pairs"]) == 3
    for p in d["pairs"]:
        assert set(p) == {"a", "b", "delta", "cs", "certified"}
        assert p["certified"] in ("a-better", "b-better", "not-yet")
        assert (p["certified"] == "not-yet") == (p["cs"][0] <= 0 <= p["cs"][1])
    assert set(d["top"]) == {"k", "order", "certified"} and d["top"]["k"] == 1
    order = list(job["order"])  # type: ignore[call-overload]
    assert set(d["next"]) == {"queries", "more_needed"}
    if not d["top"]["certified"]:
        assert d["next"]["queries"] == order[6:6 + len(d["next"]["queries"])]
        more = d["next"]["more_needed"]
        assert len(d["next"]["queries"]) == (4 if more is None else min(more, 4))


def test_every_query_labelled_gives_the_exact_means(job: dict[str, object]) -> None:
    r = _cli(*_args(job, "all"), "--json", "--top", "3")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    truth = _pytrec_means(job["human"], list(job["order"]))  # type: ignore[arg-type]
    assert d["n"] == d["N"] == 10
    for tag, run in d["runs"].items():
        assert run["cs"][0] == run["cs"][1] == pytest.approx(truth[tag], abs=1e-12)
    for p in d["pairs"]:
        diff = truth[p["a"]] - truth[p["b"]]
        assert p["cs"] == pytest.approx([diff, diff], abs=1e-12)
        assert p["certified"] == ("a-better" if diff > 0 else "b-better")
    assert d["top"]["order"] == sorted(truth, key=lambda t: -truth[t])
    assert d["top"]["certified"] is True and d["next"]["queries"] == []


def test_two_sheets_read_together_match_one(job: dict[str, object]) -> None:
    one = json.loads(_cli(*_args(job, "front6"), "--json",
                          "--design", str(job["design"])).output)
    two = json.loads(_cli(*_args(job, "a", "b"), "--json").output)
    assert one == two


def test_a_sheet_that_is_not_a_front_of_the_design_is_refused(job: dict[str, object]) -> None:
    r = _cli(*_args(job, "gap"))
    assert r.exit_code == 2
    order = list(job["order"])  # type: ignore[call-overload]
    assert "not a front of the design's order" in r.output
    assert f"query {order[3]} (position 4) is not" in r.output


def test_labels_outside_the_design_are_refused(job: dict[str, object], tmp_path: Path) -> None:
    human: pd.DataFrame = job["human"]  # type: ignore[assignment]
    order: list[str] = job["order"]  # type: ignore[assignment]
    extra = pd.concat([human.loc[human["query_id"].isin(order[:5])],
                       pd.DataFrame({"query_id": ["999999"], "chunk_id": ["1"], "grade": [2]})])
    io.write_qrels(extra, tmp_path / "extra.qrels")
    r = _cli("--human", str(tmp_path / "extra.qrels"), "--llm", str(job["llm"]),
             *[a for p in RUNS for a in ("--run", str(p))], "--design", str(job["design"]))
    assert r.exit_code == 2
    assert "outside the design's order" in r.output and "999999" in r.output


def test_partly_labelled_queries_are_refused(job: dict[str, object], tmp_path: Path) -> None:
    human: pd.DataFrame = job["human"]  # type: ignore[assignment]
    order: list[str] = job["order"]  # type: ignore[assignment]
    front = human.loc[human["query_id"].isin(order[:5])]
    io.write_qrels(front.iloc[::2], tmp_path / "half.qrels")   # half of each query's pairs
    r = _cli("--human", str(tmp_path / "half.qrels"), "--llm", str(job["llm"]),
             *[a for p in RUNS for a in ("--run", str(p))], "--design", str(job["design"]))
    assert r.exit_code == 2
    assert "5 queries are only partly labelled" in r.output and "--unit query" in r.output


def test_two_different_grades_of_a_pair_across_sheets_are_refused(
        job: dict[str, object], tmp_path: Path) -> None:
    human: pd.DataFrame = job["human"]  # type: ignore[assignment]
    order: list[str] = job["order"]  # type: ignore[assignment]
    a = human.loc[human["query_id"].isin(order[:3])]
    b = a.iloc[:1].assign(grade=(a["grade"].iloc[:1] + 1) % 4)
    io.write_qrels(a, tmp_path / "design_a.qrels")
    io.write_qrels(b, tmp_path / "design_b.qrels")
    r = _cli("--human", str(tmp_path / "design_a.qrels"), "--human",
             str(tmp_path / "design_b.qrels"), "--llm", str(job["llm"]),
             *[a for p in RUNS for a in ("--run", str(p))], "--design", str(job["design"]))
    assert r.exit_code == 2 and "the human label files disagree" in r.output


def test_a_run_given_twice_is_an_exact_known_zero(job: dict[str, object]) -> None:
    c = labeler.certify(human=str(job["front6"]), llm=str(job["llm"]),
                        runs={"bm25": RUNS[1], "copy": RUNS[1]}, design=str(job["design"]))
    d = c.to_dict()
    assert d["pairs"] == [{"a": "bm25", "b": "copy", "delta": 0.0, "cs": [0.0, 0.0],
                           "certified": "not-yet"}]
    assert d["top"]["certified"] is False
    assert d["runs"]["bm25"] == d["runs"]["copy"]


def test_api_text_and_report(job: dict[str, object], tmp_path: Path) -> None:
    c = labeler.certify(human=[str(job["a"]), str(job["b"])], llm=str(job["llm"]),
                        runs={"<b>bm25</b>": RUNS[1], "bert": RUNS[2]})
    assert isinstance(c, labeler.Certification) and c.n == 6
    text = c.to_text()
    assert "after 6 of 10 queries" in text and "confidence sequence" in text
    r = _cli(*_args(job, "front6"), "--report", str(tmp_path / "rep"))
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep" / "report.html").read_text()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Certified leaderboard" in html and "Certified leaderboard" in md
    assert set(json.loads((tmp_path / "rep" / "report.json").read_text())) >= KEYS
    assert "&lt;b&gt;" in c.to_html() and "<b>bm25" not in c.to_html()


def test_without_a_design_it_says_how_to_make_one(job: dict[str, object],
                                                   tmp_path: Path) -> None:
    io.write_qrels(job["human"], tmp_path / "h.qrels")  # type: ignore[arg-type]
    r = _cli("--human", str(tmp_path / "h.qrels"), "--llm", str(job["llm"]),
             "--run", str(RUNS[0]))
    assert r.exit_code == 2 and "labeler sample --unit query" in r.output


def test_the_nightly_run_prints_the_certified_leaderboard(tmp_path: Path) -> None:
    from labeler.demo import copy_sample
    from labeler.reconciliation.design import Draw, QueryDesign, query_permutation
    from labelkit import write_job

    copy_sample(tmp_path / "data")
    data = tmp_path / "data"
    pairs = labeler.pool(str(data / "queries.tsv"), str(data / "corpus.jsonl"),
                         labeler.read_runs(sorted(str(p) for p in (data / "runs").glob("*.run"))),
                         depth=10)
    human = io.read_qrels(data / "human.qrels")
    order = query_permutation(sorted(pairs["query_id"].unique()), 0, 5)
    # the people's sheet: every pooled pair of the design's first 5 queries (NIST grade, 0
    # where NIST did not judge the passage)
    sheet = pairs.loc[pairs["query_id"].isin(order[:5]), ["query_id", "chunk_id"]].merge(
        human, on=["query_id", "chunk_id"], how="left").fillna({"grade": 0})
    io.write_qrels(sheet.astype({"grade": int}), tmp_path / "sheet.qrels")
    write_design(QueryDesign(seed=0, permutation=order, drawn=5, draws=[Draw(n=5)]),
                 tmp_path / "design.json")
    config = write_job(tmp_path, """\
out_dir = "out"
cache_dir = "cache"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 10
[judge]
model = "lexical"
[human]
qrels = "sheet.qrels"
bootstrap = 0
[statistics]
certify = true
""")
    checked = CliRunner().invoke(main, ["run", "--check", str(config)])
    assert checked.exit_code == 0, checked.output
    done = CliRunner().invoke(main, ["run", str(config)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "after 5 of 10 queries" in done.output and "confidence sequence" in done.output
    run = tmp_path / "out" / (tmp_path / "out" / "latest.txt").read_text().strip()
    certified = json.loads((run / "certify.json").read_text())
    assert set(certified) == KEYS
    # the run's report shows the certified leaderboard too, and report.json redraws it
    from labeler.report import certify as certify_report
    from labeler.report.comparison import render_html, render_markdown

    html = (run / "report" / "report.html").read_text(encoding="utf-8")
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert certify_report.render_html(certified) in html
    assert certify_report.render_markdown(certified, level=2) in md
    assert html.index('<section class="certify">') < html.index("Made by labeler")
    data = json.loads((run / "report" / "report.json").read_text(encoding="utf-8"))
    assert data["certify"] == certified
    args = (data["title"], data["agreement"], data["judge"], data["drift"], data["certify"])
    assert render_markdown(data, *args) == md
    assert certify_report.render_html(certified) in render_html(data, *args)


def test_the_nightly_check_asks_for_the_design_before_any_call(tmp_path: Path) -> None:
    from labeler.demo import copy_sample
    from labelkit import write_job

    copy_sample(tmp_path / "data")
    config = write_job(tmp_path, """\
out_dir = "out"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
[judge]
model = "lexical"
[human]
qrels = "data/human.qrels"
[statistics]
certify = true
""")
    for args in (["run", "--check", str(config)], ["run", str(config)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2 and "design.json" in r.output, r.output
    assert not list((tmp_path / "out").glob("runs/*/labels.jsonl"))


def test_the_top_is_certified_through_chains_of_certified_pairs() -> None:
    from labeler.reconciliation.certification import _top_certified

    order = ["a", "b", "c"]
    assert _top_certified(order, 1, {("a", "b"), ("b", "c")})        # a > b > c: a > c too
    assert _top_certified(order, 2, {("a", "b"), ("b", "c")})
    assert not _top_certified(order, 1, {("a", "b")})                 # a against c unknown
    assert not _top_certified(order, 2, {("a", "b"), ("a", "c")})     # b against c unknown
    assert _top_certified(["solo"], 1, set())
