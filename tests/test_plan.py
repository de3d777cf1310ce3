"""`labeler plan` and `labeler.plan`: on the TREC DL 2019 slice (NIST labels of 10 queries,
3 runs), with LLM labels made from the NIST grades plus noise; the numbers checked against
pytrec_eval's NDCG and a brute-force search with scipy.stats."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

import labeler
from labeler import io
from labeler.cli import main
from labeler.statistics import planning

DATA = Path(__file__).parent / "data" / "dl19"
RUNS = sorted((DATA / "runs").glob("*.run"))


def noisy(human: pd.DataFrame, noise: float, shift: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = human["grade"].to_numpy(dtype=float) + shift + rng.normal(0, noise, len(human))
    return human.assign(grade=np.clip(np.rint(g), 0, 3).astype(int))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("plan")
    human = io.read_qrels(DATA / "qrels-pass.qrels")
    queries = sorted(human["query_id"].unique())
    picked = [queries[i] for i in np.random.default_rng(5).choice(10, 7, replace=False)]
    out = {"human": tmp / "human.qrels", "few": tmp / "few.qrels", "llm": tmp / "llm.qrels"}
    io.write_qrels(human.loc[human["query_id"].isin(picked)], out["human"])
    io.write_qrels(human.loc[human["query_id"].isin(picked[:4])], out["few"])
    io.write_qrels(noisy(human, 0.4, 0.3, 1), out["llm"])
    return out


def ndcg(qrels: Path, run: Path) -> dict[str, float]:
    """pytrec_eval's NDCG@10 per query."""
    import pytrec_eval

    q = io.read_qrels(qrels)
    r = io.read_run(run)
    qd = {k: dict(zip(g["chunk_id"], g["grade"].astype(int))) for k, g in q.groupby("query_id")}
    rd = {k: dict(zip(g["chunk_id"], g["score"].astype(float)))
          for k, g in r.groupby("query_id")}
    res = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut.10"}).evaluate(rd)
    return {k: v["ndcg_cut_10"] for k, v in res.items()}


def brute_force(x: np.ndarray, n_total: int, w: float, kurtosis: float,
                assurance: float = planning.ASSURANCE) -> int:
    n0, s2 = len(x), float(np.var(x, ddof=1))

    def df(m: int) -> float:
        return 2 / (2 / (m - 1) + kurtosis / m)

    for n in range(planning.MIN_LABELLED, n_total):  # never fewer than PPI needs
        var = s2 * stats.f.ppf(assurance, df(n), df(n0))
        if stats.t.ppf(0.975, n - 1) * math.sqrt((1 - n / n_total) * var / n) <= w:
            return n
    return n_total


def invoke(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def run_args() -> list[str]:
    return [a for p in RUNS for a in ("--run", str(p))]


def test_plan_json_per_run_matches_pytrec_eval_and_scipy(files: dict[str, Path]) -> None:
    code, out = invoke("plan", "--human", str(files["human"]), "--llm", str(files["llm"]),
                       *run_args(), "--half-width", "0.08", "--json",
                       "--minutes-per-query", "12")
    assert code == 0, out
    d = json.loads(out)
    assert {"now", "half_width", "needed", "per_run", "per_pair"} <= set(d)
    assert d["now"] == 7 and d["half_width"] == 0.08 and d["per_pair"] == []
    assert set(d["needed"]) == {"ppi", "human_only"}
    labelled = sorted(io.read_qrels(files["human"])["query_id"].unique())
    for path in RUNS:
        tag = io.read_run(path)["system"].iloc[0]
        h, m = ndcg(files["human"], path), ndcg(files["llm"], path)
        y = np.array([h.get(q, 0.0) for q in labelled])
        yhat = np.array([m.get(q, 0.0) for q in labelled])
        got = d["per_run"][tag]
        assert got["n_total"] == 10 and got["now"] == 7 and got["labelled"] == "7 of 10"
        for kind, x, (a, kurt) in (("ppi", y - yhat, planning.settings("ppi")),
                                   ("human_only", y, planning.settings("human_only"))):
            hw = stats.t.ppf(0.975, 6) * float(np.std(x, ddof=1)) * math.sqrt((1 - 7 / 10) / 7)
            assert got["half_width_now"][kind] == pytest.approx(hw)
            # within ±W now: enough, in the run's own units; else the planned number
            want = 7 if hw <= 0.08 else max(8, brute_force(x, 10, 0.08, kurt, a))
            assert got["enough_now"][kind] == (hw <= 0.08)
            assert got[kind] == want and got["more"][kind] == want - 7
    assert d["needed"]["ppi"] == max(r["ppi"] for r in d["per_run"].values())
    assert d["needed"]["human_only"] == max(r["human_only"] for r in d["per_run"].values())
    more = max(0, d["needed"]["ppi"] - 7)
    assert d["hours"]["ppi"] == pytest.approx(more * 12 / 60)
    assert d["saving"] == d["needed"]["human_only"] - d["needed"]["ppi"]


def test_plan_pairs_and_the_terminal_text(files: dict[str, Path]) -> None:
    code, out = invoke("plan", "--human", str(files["human"]), "--llm", str(files["llm"]),
                       *run_args(), "--half-width", "0.05", "--per-pair", "--json")
    assert code == 0, out
    d = json.loads(out)
    assert len(d["per_pair"]) == 3
    assert all({"a", "b", "ppi", "human_only"} <= set(p) for p in d["per_pair"])
    assert d["needed"]["ppi"] == max([r["ppi"] for r in d["per_run"].values()]
                                     + [p["ppi"] for p in d["per_pair"]])
    code, text = invoke("plan", "--human", str(files["human"]), "--llm", str(files["llm"]),
                        *run_args(), "--half-width", "0.05", "--per-pair")
    assert code == 0 and "Assumes: The 7 queries labelled so far are a simple random" in text
    ppi = ("enough now (7 queries)" if d["enough_now"] else
           f"{d['more']['ppi']} more queries ({d['needed']['ppi']} in all)")
    assert f"with the LLM labels (PPI): {ppi}" in text
    assert "−" in text  # the pairs' table


def test_plan_needs_five_labelled_queries(files: dict[str, Path]) -> None:
    code, out = invoke("plan", "--human", str(files["few"]), "--llm", str(files["llm"]),
                       *run_args(), "--half-width", "0.05")
    assert code == 2 and "only 4 of the runs' queries have human labels" in out
    assert "at least 5" in out


def test_an_informative_llm_saves_human_labels() -> None:
    """Where the LLM grades follow the human ones closely, PPI needs no more queries than the
    human labels alone, and fewer for at least one run (the API, on in-memory frames)."""
    human = io.read_qrels(DATA / "qrels-pass.qrels")
    queries = sorted(human["query_id"].unique())
    sample = human.loc[human["query_id"].isin(queries[:6])]
    runs = io.read_runs(RUNS)
    p = labeler.plan(human=sample, llm=noisy(human, 0.25, 0.0, 3), runs=runs,
                     half_width=0.04, pairs=True)
    assert isinstance(p, labeler.Plan) and p.now == 6
    for t in p.targets:
        assert t.human_only.n is not None and t.ppi.n is not None
        assert t.human_only.n >= t.ppi.n
    assert any(t.human_only.n > t.ppi.n for t in p.runs)  # type: ignore[operator]
    assert p.to_dict()["needed"] == p.needed
    with pytest.raises(labeler.InputError, match="half-width"):
        labeler.plan(human=sample, llm=human, runs=runs, half_width=0)


def test_the_report_says_how_many_queries_would_resolve_an_unresolved_pair(
        files: dict[str, Path], tmp_path: Path) -> None:
    from labeler.report.comparison import render_markdown, write_report
    from labeler.report.text import render_text
    from labeler.statistics.verdicts import StatsOptions

    nist = io.read_qrels(DATA / "qrels-pass.qrels")
    queries = sorted(nist["query_id"].unique())
    labelled = sorted(queries[i] for i in np.random.default_rng(0).choice(10, 6, replace=False))
    io.write_qrels(nist.loc[nist["query_id"].isin(labelled)], tmp_path / "six.qrels")
    c = labeler.compare(human=tmp_path / "six.qrels", llm=files["llm"], runs=RUNS,
                        stats=StatsOptions(ppi=True))
    assert c.advice, "expected an unresolved pair on 6 of 10 queries"
    tags = {io.read_run(p)["system"].iloc[0]: p for p in RUNS}
    pairs = {(p["a"], p["b"]): p for p in c.significance.pairs_to_dicts()}
    for x in c.advice:
        pair = pairs[(x["a"], x["b"])]
        assert pair["ppi"]["verdict"] == "unresolved"
        h = {r: ndcg(tmp_path / "six.qrels", tags[r]) for r in (x["a"], x["b"])}
        m = {r: ndcg(files["llm"], tags[r]) for r in (x["a"], x["b"])}
        dh = np.array([h[x["a"]].get(q, 0.0) - h[x["b"]].get(q, 0.0) for q in labelled])
        dm = np.array([m[x["a"]].get(q, 0.0) - m[x["b"]].get(q, 0.0) for q in labelled])
        assert x["delta"] == pytest.approx(pair["ppi"]["delta"])
        want = planning.pair_advice(dh, dm, 10, pair["ppi"]["delta"])
        assert x["needed"] == want.n and x["now"] == 6 and x["n_total"] == 10
        assert x["half_width_now"] == pytest.approx(
            stats.t.ppf(0.975, 5) * np.std(dh - dm, ddof=1) * math.sqrt(0.4 / 6))
        lo, hi = pair["ppi"]["ci"]  # the compare's own PPI interval of the pair
        assert x["half_width_now"] == pytest.approx((hi - lo) / 2, rel=1e-9)
    md = render_markdown(c)
    x = c.advice[0]
    assert "would likely resolve each unresolved pair" in md
    assert f"| {x['now']} | {x['needed']} of 10 |" in md
    assert c.planning_line is not None and c.planning_line in render_text(c.to_dict())
    assert "would likely be resolved with" not in render_text(c.to_dict())
    paths = write_report(c, tmp_path / "report")
    assert 'id="advice"' in paths["html"].read_text()
    assert json.loads(paths["json"].read_text())["statistics"]["to_resolve"][0]["needed"] \
        == x["needed"]


def test_without_ppi_there_is_no_planning() -> None:
    """Without a random sample of queries there is nothing to plan: no planning line, no
    advice per pair (the figures from other computations are gone)."""
    human = io.read_qrels(DATA / "qrels-pass.qrels")
    c = labeler.compare(human=human, llm=noisy(human, 0.4, 0.3, 1), runs=io.read_runs(RUNS))
    assert c.advice == () and c.planning_line is None
    assert c.to_dict()["statistics"]["planning"] is None


def test_runs_over_different_queries_count_in_their_own_units(tmp_path: Path) -> None:
    """A run lacking queries is planned in its own query set ("3 of 6"); a run with fewer
    than 5 labelled queries is named, with how many more queries of the design's order bring
    it to 5 (walked by hand here); "enough now" needs every run within ±W."""
    from labeler.reconciliation.design import draw_queries

    nist = io.read_qrels(DATA / "qrels-pass.qrels")
    llm = noisy(nist, 0.4, 0.3, 1)
    first = draw_queries(llm, n=6, seed=4)
    labelled, order = first.design.queries, first.design.permutation
    runs = io.read_runs(RUNS)
    tags = list(dict.fromkeys(runs["system"]))
    short = tags[1]
    dropped = set(labelled[:3]) | {order[6]}   # 3 labelled queries and 1 not labelled
    runs = runs.loc[~((runs["system"] == short) & runs["query_id"].isin(dropped))]
    human = nist.loc[nist["query_id"].isin(labelled)]
    p = labeler.plan(human=human, llm=llm, runs=runs, half_width=0.05, design=first.design)
    d = p.to_dict()
    assert d["per_run"][short]["labelled"] == "3 of 6"
    assert d["per_run"][tags[0]]["labelled"] == "6 of 10"
    assert d["not_yet"] == {short: {"labelled": 3, "n_total": 6, "more": d["to_plan"]}}
    rest = [q for q in order if q not in labelled]
    mine = [i for i, q in enumerate(rest) if q not in dropped]
    assert d["to_plan"] == mine[1] + 1          # the 2nd of its queries in the design's order
    assert d["more"]["ppi"] is None and d["needed"]["ppi"] is None and not d["enough_now"]
    text = p.to_text()
    assert f"{short}: only 3 of its 6 queries labelled" in text
    assert f"the next {d['to_plan']} quer" in text and "of the design's order" in text
    assert "Planning: too few labelled queries to plan for" in p.line()
    # all runs over their own queries: the widths now straddle W -> not enough now
    full = io.read_runs(RUNS)
    q = labeler.plan(human=human, llm=llm, runs=full, half_width=0.05, design=first.design)
    widths = [t.ppi.half_width_now for t in q.runs]
    w = float(np.mean([min(widths), max(widths)]))
    q = labeler.plan(human=human, llm=llm, runs=full, half_width=w, design=first.design)
    assert not q.enough_now
    assert [t.enough("ppi") for t in q.runs] == [x <= w for x in widths]
    assert q.more["ppi"] == max(t.more("ppi") or 0 for t in q.runs) > 0
    assert q.draw["ppi"] == q.more["ppi"]        # nothing drawn but unlabelled: same count
    q = labeler.plan(human=human, llm=llm, runs=full, half_width=max(widths) + 1e-6)
    assert q.enough_now and q.more == {"ppi": 0, "human_only": q.more["human_only"]}
    assert "Planning: with the 6 labelled queries every run's PPI interval is within" in q.line()


def test_plan_shows_its_table_in_a_notebook(files: dict[str, Path]) -> None:
    p = labeler.plan(human=files["human"], llm=files["llm"], runs=RUNS, half_width=0.05)
    html = p._repr_html_()
    assert "<table>" in html and "± now (PPI)" in html and "7 of 10" in html
    text = repr(p)
    assert text.startswith("Plan(now=7, half_width=0.05") and "7 of 10" in text
    tag = io.read_run(RUNS[0])["system"].iloc[0]
    assert tag in text and tag in html


def test_the_older_pairs_flag_still_plans_every_pair_with_a_note(files: dict[str, Path]) -> None:
    args = ["plan", "--human", str(files["human"]), "--llm", str(files["llm"]), *run_args(),
            "--half-width", "0.05", "--json"]
    new = CliRunner().invoke(main, [*args, "--per-pair"])
    old = CliRunner().invoke(main, [*args, "--pairs"])
    assert new.exit_code == 0 and old.exit_code == 0, old.output
    assert json.loads(old.stdout) == json.loads(new.stdout)
    assert len(json.loads(old.stdout)["per_pair"]) == 3
    assert "--pairs is deprecated; use --per-pair" in old.stderr
    assert "deprecated" not in new.stderr
    assert "--per-pair" in CliRunner().invoke(main, ["plan", "--help"]).stdout
