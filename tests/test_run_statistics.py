"""`labeler run` carries the statistics settings: the test, alpha and PPI in the config reach
the comparison, its report and drift; PPI without LLM-only queries stops before any judging."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner, Result

from labeler import io
from labeler.cli import main
from labeler.demo import copy_sample
from labelkit import write_job


def _job(tmp_path: Path, statistics: str, human: str = "data/human.qrels") -> Path:
    return write_job(tmp_path, f"""\
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
qrels = "{human}"
bootstrap = 0
[statistics]
{statistics}
""")


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", *args], catch_exceptions=False)


def _latest(out: Path) -> Path:
    return out / (out / "latest.txt").read_text().strip()


def test_statistics_settings_reach_comparison_report_and_drift(tmp_path: Path) -> None:
    copy_sample(tmp_path / "data")
    human = io.read_qrels(tmp_path / "data" / "human.qrels")
    sample = sorted(human["query_id"].unique())[::2]  # 5 of the 10 queries judged by people
    io.write_qrels(human.loc[human["query_id"].isin(sample)], tmp_path / "sample.qrels")
    config = _job(tmp_path, 'test = "randomization"\nalpha = 0.1\npermutations = 500\n'
                            "seed = 3\nppi = true", human="sample.qrels")
    for _ in range(2):  # the second job has a previous one to drift from
        done = _run(str(config))
        assert done.exit_code == 0, done.output
    run = _latest(tmp_path / "out")
    comparison = json.loads((run / "comparison.json").read_text())
    # one planning line, `labeler plan`'s, in the summary and the comparison
    assert done.output.count("Planning:") == 1
    assert comparison["statistics"]["planning"] in done.output
    # the summary is PPI's: the estimate, delta on the labelled queries, PPI's verdicts
    for tag, r in comparison["runs"].items():
        row = next(x for x in done.stdout.splitlines() if x.startswith(f"{tag} "))
        assert row.split()[1:] == [f"{r['ppi']['estimate']:.4f}", f"{r['llm']:.4f}",
                                   f"{r['labelled']['delta']:+.4f}"]
    assert "PPI verdicts of 3 pairs: " in done.stdout
    assert f": {comparison['headline']}" in done.stdout
    assert {k: comparison["statistics"][k] for k in ("test", "alpha", "permutations", "seed",
                                                      "ppi")} == {
        "test": "randomization", "alpha": 0.1, "permutations": 500, "seed": 3, "ppi": True}
    assert len(comparison["pairs"]) == 3 and all(p["ppi"] for p in comparison["pairs"])
    for r in comparison["runs"].values():
        assert (r["ppi"]["n_labelled"], r["ppi"]["n_unlabelled"]) == (5, 5)
    html = (run / "report" / "report.html").read_text()
    assert "Prediction-powered estimates" in html and "paired randomization test" in html
    assert "lexical-baseline" in html and "labels.jsonl of this run" in html
    drift = json.loads((run / "drift.json").read_text())
    assert drift["thresholds"]["alpha"] == 0.1 and drift["thresholds"]["test"] == "randomization"
    assert {r["system"] for r in drift["ndcg"]} == set(comparison["runs"])
    assert all(r["p"] == 1.0 and not r["beyond_noise"] for r in drift["ndcg"])  # same labels


def test_ppi_with_every_query_judged_stops_before_labelling(tmp_path: Path) -> None:
    config = _job(tmp_path, "ppi = true")
    checked = _run("--check", str(config))  # the check finds it too
    assert checked.exit_code == 2
    assert "human labels cover every one of the 10 queries" in checked.output
    done = _run(str(config))
    assert done.exit_code == 2
    assert "human labels cover every one of the 10 queries" in done.output
    assert "labeler sample --unit query" in done.output
    assert not list((tmp_path / "out").glob("runs/*/labels.jsonl"))


def test_unknown_statistics_settings_are_refused(tmp_path: Path) -> None:
    done = _run(str(_job(tmp_path, 'test = "wilcoxon"')))
    assert done.exit_code == 2 and "statistics" in done.output
    done = _run(str(_job(tmp_path, "alpha = 1.5")))
    assert done.exit_code == 2 and "alpha" in done.output


def test_the_human_labels_may_be_several_sheets_read_together(tmp_path: Path) -> None:
    copy_sample(tmp_path / "data")
    human = io.read_qrels(tmp_path / "data" / "human.qrels")
    queries = sorted(human["query_id"].unique())
    first, second = queries[:5:2], queries[1:5:2]          # two sheets of one sample
    io.write_qrels(human.loc[human["query_id"].isin(first)], tmp_path / "a.qrels")
    io.write_qrels(human.loc[human["query_id"].isin(second)], tmp_path / "b.qrels")
    io.write_qrels(human.loc[human["query_id"].isin([*first, *second])], tmp_path / "ab.qrels")
    both = _job(tmp_path / "both", "ppi = true", human='a.qrels", "b.qrels')
    both.write_text(both.read_text().replace('qrels = "a.qrels", "b.qrels"',
                                             'qrels = ["../a.qrels", "../b.qrels"]'))
    one = _job(tmp_path / "one", "ppi = true", human="../ab.qrels")
    assert _run("--check", str(both)).exit_code == 0
    for config in (both, one):
        assert _run(str(config)).exit_code == 0
    got = [json.loads((_latest(c.parent / "out") / "comparison.json").read_text())["runs"]
           for c in (both, one)]
    assert got[0] == got[1]                                # the same as one file of both
    # a pair graded two ways in the two sheets: exit 2 naming it, before any judging
    clash = human.loc[human["query_id"] == first[0]].head(1).assign(grade=lambda d: 3 - d["grade"])
    io.write_qrels(pd.concat([human.loc[human["query_id"].isin(second)], clash]),
                   tmp_path / "b.qrels")
    bad = _run(str(both))
    assert bad.exit_code == 2 and str(clash["chunk_id"].iloc[0]) in bad.output
