"""Statistics from the command line: `labeler score --json` gives each mean its interval;
`labeler compare` says which differences are real (intervals, pair verdicts, PPI) and
`labeler sample --unit query` draws the human sample PPI needs — on TREC DL 2019 runs with the
NIST labels and the lexical judge's labels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import ppi_py
import pytest
from click.testing import CliRunner
from scipy import stats as sps

from dl19kit import DATA, RUNS, lexical_slice

from labeler import io
from labeler.cli import main

@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The NIST qrels, the lexical judge's labels of every passage in the runs' top 10 (as
    label records), and the pairs with their texts."""
    out = tmp_path_factory.mktemp("compare-stats")
    data = lexical_slice()
    io.write_table(data["llm"], out / "labels.jsonl")
    io.write_table(data["pairs"], out / "pairs.jsonl")
    return {"human": DATA / "human.qrels", "llm": out / "labels.jsonl",
            "pairs": out / "pairs.jsonl", "dir": out}


def _compare(files: dict[str, Path], *args: str, human: Path | None = None
             ) -> tuple[int, str, str]:
    runner = CliRunner()
    cmd = ["compare", "--human", str(human or files["human"]), "--llm", str(files["llm"]),
           *[a for r in RUNS for a in ("--run", str(r))], *args]
    res = runner.invoke(main, cmd)
    return res.exit_code, res.stdout, res.stderr


def test_score_json_gives_every_mean_its_t_interval(files: dict[str, Path]) -> None:
    res = CliRunner().invoke(main, ["score", "--qrels", str(files["llm"]), "--json", "--k", "5",
                                    "--k", "10", *[a for r in RUNS for a in ("--run", str(r))]])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    for run in d["runs"].values():
        for measure in ("ndcg@5", "ndcg@10"):
            m = run[measure]
            v = np.array(list(m["per_query"].values()))
            lo, hi = sps.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=sps.sem(v))
            assert m["ci"] == pytest.approx([max(lo, 0.0), min(hi, 1.0)], abs=1e-12)
    one = files["dir"] / "one.qrels"
    one.write_text("104861 0 nothing 1\n")  # one judged query: no interval
    res = CliRunner().invoke(main, ["score", "--qrels", str(one), "--json", "--run",
                                    str(RUNS[0])])
    (only,) = json.loads(res.stdout)["runs"].values()
    assert only["ndcg@10"]["n_queries"] == 1 and only["ndcg@10"]["ci"] is None


def test_json_has_intervals_and_a_verdict_for_every_pair(files: dict[str, Path]) -> None:
    code, out, _ = _compare(files, "--json")
    assert code == 0
    d = json.loads(out)
    tags = list(d["runs"])
    assert [(p["a"], p["b"]) for p in d["pairs"]] == [
        (tags[i], tags[j]) for i in range(len(tags)) for j in range(i + 1, len(tags))]
    for tag, run in d["runs"].items():
        for label in ("human", "llm"):
            v = np.array([q[label] for q in d["per_query"][tag].values()
                          if q[label] is not None])
            lo, hi = sps.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=sps.sem(v))
            assert run[f"{label}_ci"] == pytest.approx([max(lo, 0.0), min(hi, 1.0)],
                                                       abs=1e-12)
    for p in d["pairs"]:
        a, b = d["per_query"][p["a"]], d["per_query"][p["b"]]
        both = sorted(q for q in a if q in b and None not in (
            a[q]["human"], a[q]["llm"], b[q]["human"], b[q]["llm"]))
        assert p["n"] == len(both)
        for label in ("human", "llm"):
            x, y = (np.array([a[q][label] for q in both]), np.array([b[q][label] for q in both]))
            assert p[label]["p"] == pytest.approx(sps.ttest_rel(x, y).pvalue, rel=1e-9)
            assert p[label]["p_adjusted"] >= p[label]["p"]
        assert p["verdict"] in {"confirmed", "reversed", "human-only", "llm-only", "unresolved"}
    assert sum(d["verdicts"].values()) == len(d["pairs"]) == 6
    assert d["statistics"]["test"] == "t" and d["statistics"]["alpha"] == 0.05


def test_text_output_leads_with_the_verdict_counts(files: dict[str, Path]) -> None:
    code, out, _ = _compare(files, "--alpha", "0.5")
    assert code == 0
    first, second = out.splitlines()[:2]
    counts = json.loads(_compare(files, "--json", "--alpha", "0.5")[1])["verdicts"]
    assert first.startswith(f"Verdicts of 6 pairs: {counts['confirmed']} confirmed, "
                            f"{counts['reversed']} reversed, {counts['human-only']} human-only, "
                            f"{counts['llm-only']} llm-only, {counts['unresolved']} unresolved")
    assert "alpha 0.5" in first
    assert second.startswith("On the 10 queries every run scores under both label sets, ")
    # the runs table is sorted by the human means
    table = out.splitlines()[5:9]
    means = [float(line.split()[1]) for line in table]
    assert means == sorted(means, reverse=True)


def test_randomization_test_is_reproducible_and_seeded(files: dict[str, Path]) -> None:
    args = ("--json", "--test", "randomization", "--permutations", "300")
    a = json.loads(_compare(files, *args, "--seed", "1")[1])["pairs"]
    b = json.loads(_compare(files, *args, "--seed", "1")[1])["pairs"]
    c = json.loads(_compare(files, *args, "--seed", "2")[1])["pairs"]
    assert a == b
    assert [p["human"]["p"] for p in a] != [p["human"]["p"] for p in c]


def test_ppi_on_a_random_sample_of_queries_equals_ppi_py(files: dict[str, Path]) -> None:
    sheet = files["dir"] / "sheet.csv"
    res = CliRunner().invoke(main, ["sample", "--labels", str(files["llm"]), "--unit", "query",
                                    "--n", "5", "--seed", "4", "--out", str(sheet),
                                    "--pairs", str(files["pairs"])])
    assert res.exit_code == 0, res.output
    assert "randomly drawn queries" in res.output
    drawn = pd.read_csv(sheet, dtype=str)
    labels = io.read_labels(files["llm"])
    picked = set(drawn["query_id"])
    assert len(picked) == 5
    assert len(drawn) == int(labels["query_id"].isin(picked).sum())  # every pooled pair
    human_all = io.read_qrels(files["human"])
    human = human_all.loc[human_all["query_id"].isin(picked)]  # the annotators' work
    io.write_qrels(human, files["dir"] / "sample.qrels")
    code, out, err = _compare(files, "--json", "--ppi", human=files["dir"] / "sample.qrels")
    assert code == 0, err
    d = json.loads(out)
    everything = json.loads(_compare(files, "--json")[1])  # all-human scores as Y
    queries = sorted(labels["query_id"].unique())
    lab = [q for q in queries if q in picked]
    unl = [q for q in queries if q not in picked]

    def vals(tag: str, label: str, qs: list[str]) -> np.ndarray:
        pq = everything["per_query"][tag]
        return np.array([pq.get(q, {}).get(label) or 0.0 for q in qs])

    for tag, run in d["runs"].items():  # the default: the mean over these 10 queries
        y, yhat, yu = vals(tag, "human", lab), vals(tag, "llm", lab), vals(tag, "llm", unl)
        est = np.concatenate([yhat, yu]).mean() + (y - yhat).mean()
        half = sps.t.ppf(0.975, 4) * np.sqrt((1 - 5 / 10) * np.var(y - yhat, ddof=1) / 5)
        assert run["ppi"]["estimate"] == pytest.approx(est, abs=1e-9)
        assert run["ppi"]["ci"] == pytest.approx([max(est - half, 0), min(est + half, 1)],
                                                 abs=1e-9)
        assert (run["ppi"]["n_labelled"], run["ppi"]["n_unlabelled"]) == (5, 5)
        assert (run["ppi"]["target"], run["ppi"]["lambda"]) == ("queries", 1.0)
    pop = json.loads(_compare(files, "--json", "--ppi", "--ppi-target", "population",
                              human=files["dir"] / "sample.qrels")[1])
    for p in pop["pairs"]:  # the population target: ppi_py's estimate and se, t(n − 1)
        ya = vals(p["a"], "human", lab) - vals(p["b"], "human", lab)
        yha = vals(p["a"], "llm", lab) - vals(p["b"], "llm", lab)
        yua = vals(p["a"], "llm", unl) - vals(p["b"], "llm", unl)
        est = float(np.ravel(ppi_py.ppi_mean_pointestimate(ya, yha, yua, lam=1))[0])
        lo, hi = ppi_py.ppi_mean_ci(ya, yha, yua, alpha=0.05, lam=1)
        se = (float(hi[0]) - float(lo[0])) / (2 * sps.norm.ppf(0.975))
        t = sps.t.ppf(0.975, len(ya) - 1)
        assert p["ppi"]["delta"] == pytest.approx(est, abs=1e-9)
        assert p["ppi"]["p"] == pytest.approx(2 * sps.t.sf(abs(est) / se, len(ya) - 1),
                                              rel=1e-9)
        assert p["ppi"]["ci"] == pytest.approx([max(est - t * se, -1), min(est + t * se, 1)],
                                               abs=1e-9)
    tuned = json.loads(_compare(files, "--json", "--ppi", "--ppi-tune",
                                human=files["dir"] / "sample.qrels")[1])
    assert tuned["statistics"]["ppi_tune"] is True
    assert all(0 <= r["ppi"]["lambda"] <= 1 for r in tuned["runs"].values())
    text = _compare(files, "--ppi", human=files["dir"] / "sample.qrels")[1]
    assert "Prediction-powered estimates" in text and "5 of 10" in text


def test_ppi_without_a_sample_is_a_clear_error(files: dict[str, Path]) -> None:
    code, _, err = _compare(files, "--ppi")
    assert code == 2
    assert "10 of the 10 queries" in err and "labeler sample --unit query" in err


@pytest.mark.parametrize("args", [("--alpha", "1.5"), ("--test", "wilcoxon"),
                                  ("--permutations", "0")])
def test_bad_statistics_options_exit_2(files: dict[str, Path], args: tuple[str, str]) -> None:
    code, _, err = _compare(files, *args)
    assert code == 2 and args[0] in err


def test_complete_counts_a_missing_query_as_zero(files: dict[str, Path]) -> None:
    lines = Path(RUNS[0]).read_text().splitlines()
    first_q = lines[0].split()[0]
    short = files["dir"] / "short.run"
    short.write_text("\n".join(x for x in lines if x.split()[0] != first_q) + "\n")
    runner = CliRunner()
    base = ["compare", "--human", str(files["human"]), "--llm", str(files["llm"]),
            "--run", f"short={short}", *[a for r in RUNS[1:] for a in ("--run", str(r))],
            "--json"]
    plain = json.loads(runner.invoke(main, base).stdout)
    full = json.loads(runner.invoke(main, [*base, "--complete"]).stdout)
    assert plain["shared_queries"] == 9 and full["shared_queries"] == 10
    assert plain["headline"].startswith("On the 9 queries every run scores")
    assert first_q not in plain["per_query"]["short"]
    assert full["per_query"]["short"][first_q] == {"human": 0.0, "llm": 0.0, "delta": 0.0}
    pair = next(p for p in full["pairs"] if "short" in (p["a"], p["b"]))
    assert pair["n"] == 10
    assert full["complete"] is True and plain["complete"] is False
    assert full["runs"]["short"]["human"] == pytest.approx(
        np.mean([v["human"] for v in full["per_query"]["short"].values()]))
    text = runner.invoke(main, base[:-1]).stdout
    assert "queries h/l" in text and " 9/9 " in text


def test_pairs_best_and_adjacent(files: dict[str, Path]) -> None:
    best = json.loads(_compare(files, "--json", "--pair-set", "best")[1])
    order = best["order"]["human"]
    assert best["statistics"]["pairs"] == "best" and len(best["pairs"]) == 3
    assert all(order[0] in (p["a"], p["b"]) for p in best["pairs"])
    adjacent = json.loads(_compare(files, "--json", "--pair-set", "adjacent")[1])
    got = {frozenset((p["a"], p["b"])) for p in adjacent["pairs"]}
    assert got == {frozenset(order[i:i + 2]) for i in range(3)}
    everything = json.loads(_compare(files, "--json")[1])
    assert everything["statistics"]["pairs"] == "all" and len(everything["pairs"]) == 6


def test_the_older_pairs_flag_of_compare_still_chooses_the_pairs_with_a_note(
        files: dict[str, Path]) -> None:
    code, out, err = _compare(files, "--json", "--pairs", "best")
    assert code == 0, err
    new = json.loads(_compare(files, "--json", "--pair-set", "best")[1])
    assert json.loads(out)["pairs"] == new["pairs"] and len(new["pairs"]) == 3
    assert "--pairs is deprecated; use --pair-set" in err
    assert "deprecated" not in _compare(files, "--json", "--pair-set", "best")[2]
    assert _compare(files, "--pairs", "none")[0] == 2      # still checked like --pair-set
