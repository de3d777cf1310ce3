"""``compare`` over thousands of runs: the swaps are counted exactly but listed only up to a
bound (the largest first), in linear memory, so that outputs grow with the runs, not with
their square. (Whole-command sizes at 2,000 runs: ``benchmarks/bench_compare_many.py``.)"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from labeler.cli import main
from labeler.reconciliation import comparison
from labeler.reconciliation.comparison import compare

from test_compare import HUMAN, RUNS


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    """Shared means of ``n`` runs, the LLM's a noisy copy of the human ones (many swaps)."""
    rng = np.random.default_rng(seed)
    h = rng.uniform(0.2, 0.8, n)
    return pd.DataFrame({"system": [f"r{i}" for i in range(n)], "shared_human": h,
                         "shared_llm": h + rng.normal(0, 0.05, n)})


def test_two_thousand_runs_count_every_swap_and_list_the_largest() -> None:
    table = _table(2000)
    listed, count, n_pairs = comparison._swaps(table)
    h, m = table["shared_human"].to_numpy(), table["shared_llm"].to_numpy()
    i, j = np.triu_indices(len(h), k=1)
    flips = (h[i] - h[j]) * (m[i] - m[j]) < 0
    assert count == int(flips.sum()) > 100_000 and n_pairs == 2000 * 1999 // 2
    assert len(listed) == comparison.SWAPS_LISTED
    size = np.abs(h[i] - h[j]) + np.abs(m[i] - m[j])
    top = np.sort(size[flips])[::-1][:comparison.SWAPS_LISTED]
    got = [abs(s.human[0] - s.human[1]) + abs(s.llm[0] - s.llm[1]) for s in listed]
    assert got == pytest.approx(top.tolist())  # the largest, largest first


def test_six_thousand_runs_take_memory_linear_in_the_runs() -> None:
    table = _table(6_000, seed=1)
    tracemalloc.start()
    _, count, _ = comparison._swaps(table)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count > 500_000
    assert peak < 150 * 2**20  # 18 million pairs at once, the old way: ~1 GB


def test_a_few_swaps_are_all_listed_in_human_order() -> None:
    c = compare(human=HUMAN, llm={"q1": {"d1": 1, "d2": 2, "d3": 3}}, runs=RUNS, k=3)
    assert [(s.human_first, s.llm_first) for s in c.swaps] == [("A", "B"), ("A", "C"),
                                                               ("B", "C")]
    assert c.to_dict()["swaps"]["n"] == c.swap_count == 3


def test_outputs_say_how_many_swap_when_only_the_largest_are_listed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comparison, "SWAPS_LISTED", 1)
    (tmp_path / "h.qrels").write_text("q1 0 d1 3\nq1 0 d2 2\nq1 0 d3 1\n")
    (tmp_path / "l.qrels").write_text("q1 0 d1 1\nq1 0 d2 2\nq1 0 d3 3\n")
    runs = []
    for name, order in (("A", "d1 d2 d3"), ("B", "d2 d1 d3"), ("C", "d3 d2 d1")):
        path = tmp_path / f"{name}.run"
        path.write_text("".join(f"q1 Q0 {d} {r + 1} {3 - r} {name}\n"
                                for r, d in enumerate(order.split())))
        runs += ["--run", str(path)]
    args = ["compare", "--human", str(tmp_path / "h.qrels"), "--llm",
            str(tmp_path / "l.qrels"), *runs]
    res = CliRunner().invoke(main, [*args, "--json"])
    assert res.exit_code == 0, res.output
    swaps = json.loads(res.output)["swaps"]
    assert (swaps["n"], swaps["listed"], len(swaps["pairs"])) == (3, 1, 1)
    text = CliRunner().invoke(main, args).output
    assert "3 of 3 run pairs swap places (the largest 1:" in text
    rep = CliRunner().invoke(main, [*args, "--report", str(tmp_path / "rep")])
    assert rep.exit_code == 0, rep.output
    assert "The largest 1 of 3" in (tmp_path / "rep" / "report.md").read_text()
    assert "(the largest 1 listed)" in (tmp_path / "rep" / "report.html").read_text()


def test_with_ppi_the_report_lists_only_the_largest_swaps_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dl19kit import lexical_slice

    from labeler.report import comparison as report
    from labeler.report.comparison import write_report
    from labeler.statistics.verdicts import StatsOptions

    data = lexical_slice()
    human = data["human"]
    picked = sorted(human["query_id"].unique())[:7]
    c = compare(human=human.loc[human["query_id"].isin(picked)], llm=data["llm"],
                runs=data["runs"], stats=StatsOptions(ppi=True, bootstrap=0))
    everything = report._ppi_order_context(c.to_dict())
    if everything["n_swaps"] < 2:
        pytest.skip("this slice orders the runs the same way under PPI and the LLM")
    monkeypatch.setattr(report, "SWAPS_LISTED", 1)
    capped = report._ppi_order_context(c.to_dict())
    assert capped["n_swaps"] == everything["n_swaps"] and len(capped["swaps"]) == 1
    write_report(c, tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"The largest 1 of {everything['n_swaps']}" in md
