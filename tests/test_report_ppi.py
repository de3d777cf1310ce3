"""With `compare --ppi` the readout is PPI's: on TREC DL 2019 (the ten-query slice, four
submitted runs) with the lexical judge's labels of every passage in the runs' top 10 and the
NIST labels of a random 7 of the 10 queries. There the old readout misled exactly as users
reported: it called the LLM labels "stricter" with p_exp_bert (its LLM mean over all 10
queries against its human mean over the 7), while on the same 7 queries they are more
lenient; and it said no swap is real while PPI shows p_exp_bert and ICT-BERT2 ahead of
bm25tuned_p, which the LLM labels put first.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from dl19kit import RUNS, lexical_slice

from labeler import io
from labeler.cli import main
from labeler.reconciliation import comparison as comparison_module
from labeler.reconciliation.comparison import compare
from labeler.report import plots
from labeler.report.comparison import write_report
from labeler.report.escape import md_escape
from labeler.report.text import ranking_lines, render_text
from labeler.statistics.verdicts import StatsOptions
from labeler.statistics.words import ppi_headline


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = lexical_slice()
    human_all = data["human"]
    queries = sorted(human_all["query_id"].unique())
    labelled = sorted(np.random.default_rng(2).choice(queries, 7, replace=False))
    human = human_all.loc[human_all["query_id"].isin(labelled)]
    out = tmp_path_factory.mktemp("ppi-readout")
    io.write_table(data["llm"], out / "labels.jsonl")
    io.write_qrels(human, out / "sample.qrels")
    c = compare(human=human, llm=data["llm"], runs=data["runs"],
                stats=StatsOptions(ppi=True, bootstrap=200))
    res = CliRunner().invoke(main, ["compare", "--ppi", "--bootstrap", "200",
                                    "--human", str(out / "sample.qrels"),
                                    "--llm", str(out / "labels.jsonl"),
                                    *[a for r in RUNS for a in ("--run", str(r))],
                                    "--report", str(out / "report")])
    assert res.exit_code == 0, res.output
    return {"c": c, "d": c.to_dict(), "labelled": labelled, "text": res.stdout,
            "md": (out / "report" / "report.md").read_text(encoding="utf-8"),
            "html": (out / "report" / "report.html").read_text(encoding="utf-8")}


def _terminal_rows(text: str, n: int = 4) -> dict[str, list[str]]:
    """The terminal's runs table (``n`` runs): tag -> cells (split on two or more spaces)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("run "))
    cells = [re.split(r"\s{2,}", line.strip()) for line in lines[start + 2:start + 2 + n]]
    return {row[0]: row for row in cells}


def test_the_human_column_is_the_ppi_estimate_and_its_interval(case: dict[str, Any]) -> None:
    d, text, md, html = case["d"], case["text"], case["md"], case["html"]
    by_estimate = sorted(d["runs"], key=lambda t: -d["runs"][t]["ppi"]["estimate"])
    rows = _terminal_rows(text)
    assert list(rows) == by_estimate  # best PPI estimate first
    header = text.splitlines()[3]
    assert "human NDCG@10, PPI [95% CI]" in header and "human, labelled" in header
    runs_table = html[html.index('<table id="runs">'):html.index("</table>",
                                                                 html.index('id="runs"'))]
    assert re.findall(r'<tr><td class="id">([^<]+)</td>', runs_table) == by_estimate
    for tag, run in d["runs"].items():
        ppi, lab = run["ppi"], run["labelled"]
        shown = f"{ppi['estimate']:.4f} [{ppi['ci'][0]:.4f}, {ppi['ci'][1]:.4f}]"
        assert rows[tag][1] == shown
        assert rows[tag][2] == f"{lab['human']:.4f}"  # the labelled-query mean beside it
        assert rows[tag][-1] == "7 of 10"
        assert (f"| {md_escape(tag)} | {ppi['estimate']:.4f} | [{ppi['ci'][0]:.4f}, "
                f"{ppi['ci'][1]:.4f}] | {lab['human']:.4f} | {lab['llm']:.4f} |") in md
        assert (f"{ppi['estimate']:.4f} <span class=\"ci\">[{ppi['ci'][0]:.4f}, "
                f"{ppi['ci'][1]:.4f}]</span>") in runs_table


def test_delta_compares_both_label_sets_on_the_same_labelled_queries(case: dict[str, Any]
                                                                       ) -> None:
    d, text, html = case["d"], case["text"], case["html"]
    for tag, run in d["runs"].items():
        values = [d["per_query"][tag].get(q, {}) for q in case["labelled"]]
        human = np.mean([v.get("human") or 0.0 for v in values])
        llm = np.mean([v.get("llm") or 0.0 for v in values])
        assert run["labelled"] == pytest.approx({"n": 7, "human": human, "llm": llm,
                                                 "delta": llm - human}, abs=1e-12)
        # plain PPI: the LLM mean over all 10 queries corrected by the labelled difference
        all_llm = np.mean([v["llm"] or 0.0 for v in d["per_query"][tag].values()])
        assert run["ppi"]["estimate"] == pytest.approx(all_llm - (llm - human), abs=1e-12)
    # p_exp_bert: LLM mean over 10 minus human mean over 7 is negative ("stricter"), but
    # on the same 7 queries the LLM labels are more lenient with it
    bert = d["runs"]["p_exp_bert"]
    assert bert["delta"] < 0 < bert["labelled"]["delta"]
    row = _terminal_rows(text)["p_exp_bert"]
    assert row[4] == f"{bert['labelled']['delta']:+.4f} more lenient"
    shown = re.escape(f"{bert['labelled']['delta']:+.4f}")
    assert re.search(rf'class="num lenient"[^>]*>{shown}<', html)
    assert "stricter" not in "".join(row)


def test_the_terminal_names_every_pair_ppi_resolves(case: dict[str, Any]) -> None:
    d, text = case["d"], case["text"]
    resolved = [p for p in d["pairs"] if p["ppi"]["verdict"] != "unresolved"]
    assert len(resolved) == 2
    assert text.splitlines()[0].startswith("PPI verdicts of 6 pairs: 2 resolved, 4 unresolved")
    for p in resolved:
        sign = 1 if p["ppi"]["verdict"] == "a-better" else -1
        first, second = (p["a"], p["b"]) if sign > 0 else (p["b"], p["a"])
        lo, hi = sorted(sign * x for x in p["ppi"]["ci"])
        line = next(x for x in text.splitlines() if x.strip().startswith(f"{first} > {second}:"))
        assert f"Δ {sign * p['ppi']['delta']:+.4f} [{lo:.4f}, {hi:.4f}]" in line
        assert "the LLM labels reverse it" in line  # bm25tuned_p leads under LLM labels
        fq, sq = d["per_query"][first], d["per_query"][second]
        llm = np.mean([(fq[q]["llm"] or 0.0) - (sq[q]["llm"] or 0.0) for q in fq if q in sq])
        assert line.endswith(f"(LLM Δ {llm:+.4f})") and llm < 0
    # "which swaps are real?" takes the PPI verdicts, not the t-tests on the shared queries
    swap = next(x for x in text.splitlines() if "swap places" in x)
    assert "PPI shows 2 of them real (p_exp_bert > bm25tuned_p, ICT-BERT2 > bm25tuned_p)" in swap
    assert "None of the swaps is" not in swap
    assert "PPI resolves 2 of 6 pairs" in case["html"]
    assert "| p\\_exp\\_bert | bm25tuned\\_p |" in case["md"] and "**reverse**" in case["md"]


def test_the_headline_is_ppis(case: dict[str, Any]) -> None:
    head = case["d"]["headline"]
    assert head == case["text"].splitlines()[1]
    assert head.startswith("On the 10 queries, 7 of them labelled by people at random, ")
    best = case["d"]["ranking"].get("best_set")
    if best:  # the statistics name the best set: the headline names it
        assert ("the best run is one of" if len(best) > 1 else "is the best run") in head
        assert all(tag in head.split(";")[0] for tag in best)
    else:     # else the highest estimate and the runs it is shown to beat
        assert "p_exp_bert has the highest prediction-powered estimate and is ahead of 1 of " \
               "the 3 other runs by a real difference" in head
    assert "the LLM labels alone put bm25tuned_p first and reverse both differences PPI " \
           "shows real" in head
    assert "tie" not in head
    notebook = case["c"]._repr_html_()  # a notebook shows the same readout
    assert head in notebook and "<th>human, PPI</th>" in notebook


def _with_best_set(monkeypatch: pytest.MonkeyPatch, best: list[str]) -> None:
    """The ranking block as the statistics give it: with the best set, the leader's
    stability and the rank statistics' intervals."""
    real = comparison_module.ranking_block

    def block(*args: Any, **kwargs: Any) -> dict[str, Any]:
        out = real(*args, **kwargs)
        winner = dict(out["winner"])
        winner["stability"] = winner.pop("confidence", winner.get("stability"))
        return {**out, "best_set": best, "winner": winner,
                "ci": {"kendall_tau": [-1.0, 0.3333], "tau_ap": [-1.0, 0.1111],
                       "top_k_overlap": {"1": [0.0, 1.0], "3": [0.3333, 1.0]}}}

    monkeypatch.setattr(comparison_module, "ranking_block", block)


@pytest.mark.parametrize("best, words", [
    (["ICT-BERT2", "p_exp_bert"], "the best run is one of p_exp_bert and ICT-BERT2 (no other "
                                  "run is shown to beat them"),
    (["p_exp_bert"], "p_exp_bert is the best run (no other run is shown to beat it"),
])
def test_the_headline_names_the_best_set(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path, best: list[str], words: str) -> None:
    _with_best_set(monkeypatch, best)
    c = case["c"]
    assert words in c.headline and c.headline == c.to_dict()["headline"]
    assert c.headline.startswith("On the 10 queries, 7 of them labelled by people at random, ")
    text = c.to_text()
    assert text.splitlines()[1] == c.headline
    lines = text.splitlines()
    if len(best) > 1:
        assert "The best run is one of ICT-BERT2 and p_exp_bert: no other run is shown to beat " \
               "them" in text
    else:
        assert "p_exp_bert is the best run: no other run is shown to beat it" in text
    # the leader's stability, and the rank statistics with their intervals and their queries
    stays = next(x for x in lines if "stays first" in x)
    assert "resamples of whole queries" in stays
    assert not re.search(r"probab|chance", text, re.I)
    order = next(x for x in lines if x.startswith("LLM order against the human order"))
    assert order.startswith("LLM order against the human order on the 7 human-labelled queries")
    assert "AP correlation -1.0000 [-1.0000, 0.1111]" in order
    assert "top 1 0% [0%, 100%]" in order
    html = write_report(c, tmp_path / "r")["html"].read_text(encoding="utf-8")
    assert f'<p class="headline" id="headline">{c.headline}</p>' in html


def test_rank_statistics_without_intervals_still_read(case: dict[str, Any]) -> None:
    ranking = {k: v for k, v in case["d"]["ranking"].items() if k != "ci"}
    lines = ranking_lines(ranking, "on the 7 human-labelled queries")
    assert any(x.startswith("LLM order against the human order on the 7 human-labelled "
                            "queries: AP correlation ") for x in lines)
    assert not any("[" in x for x in lines)  # no interval is made up


def test_human_only_intervals_show_beside_ppi_when_present(case: dict[str, Any],
                                                           tmp_path: Path) -> None:
    class Later:
        """The comparison with the statistics' ``runs.<tag>.human_only_ci``."""

        def __init__(self, c: Any) -> None:
            self._c = c

        def __getattr__(self, name: str) -> Any:
            return getattr(self._c, name)

        def to_dict(self) -> dict[str, Any]:
            d = self._c.to_dict()
            for run in d["runs"].values():
                run["human_only_ci"] = [0.5, 0.9]
            return d

    c = Later(case["c"])
    text = render_text(c.to_dict())
    assert "(human labels alone ±0.2000)" in text
    paths = write_report(c, tmp_path / "r")  # type: ignore[arg-type]
    assert "| 7 | 3 | [0.5000, 0.9000] |" in paths["md"].read_text(encoding="utf-8")
    assert '<td class="num">[0.5000, 0.9000]</td>' in paths["html"].read_text(encoding="utf-8")


def test_the_scatter_plots_ppi_estimates_against_llm_means(case: dict[str, Any]) -> None:
    from matplotlib.collections import PathCollection
    from matplotlib.container import ErrorbarContainer

    d = case["d"]
    fig = plots.ndcg_scatter(d)  # plain data
    ax = fig.axes[0]
    assert "PPI estimate" in ax.get_xlabel()
    (points,) = [k for k in ax.collections if isinstance(k, PathCollection)]
    xy = points.get_offsets()
    tags = list(d["runs"])
    assert np.asarray(xy).tolist() == pytest.approx(
        np.array([(d["runs"][t]["ppi"]["estimate"], d["runs"][t]["llm"]) for t in tags]))
    bars = [k for k in ax.containers if isinstance(k, ErrorbarContainer)]
    _, _, (xbars, ybars) = bars[0].lines
    for tag, xseg, yseg in zip(tags, xbars.get_segments(), ybars.get_segments()):
        assert sorted(xseg[:, 0]) == pytest.approx(d["runs"][tag]["ppi"]["ci"])
        assert sorted(yseg[:, 1]) == pytest.approx(d["runs"][tag]["llm_ci"])


def _run(estimate: float | None, llm: float, n: int, big_n: int) -> dict[str, Any]:
    return {"llm": llm, "ppi": {"estimate": estimate, "n_labelled": n,
                                "n_unlabelled": big_n - n}}


def test_the_ppi_headline_from_plain_data() -> None:
    """Runs over different query sets, one with too few labelled queries for an estimate, and
    a board where PPI resolves nothing: the headline says so in words, from plain data."""
    data = {"runs": {"a": _run(0.6, 0.7, 6, 10), "b": _run(0.5, 0.8, 6, 10),
                     "short": _run(None, 0.9, 2, 6)},
            "pairs": [{"a": "a", "b": "b", "ppi": {"verdict": "a-better"}},
                      {"a": "a", "b": "short", "ppi": {"verdict": "unresolved"}},
                      {"a": "b", "b": "short", "ppi": {"verdict": "unresolved"}}],
            "ranking": {}}
    assert ppi_headline(data) == (
        "On each run's own queries (6–10, of which 2–6 labelled by people at random), a has "
        "the highest prediction-powered estimate and is ahead of 1 of the 2 other runs by a "
        "real difference; the LLM labels alone put short first and reverse the one difference "
        "PPI shows real.")
    data["ranking"] = {"best_set": ["a", "short"]}
    assert ppi_headline(data).startswith(
        "On each run's own queries (6–10, of which 2–6 labelled by people at random), the best "
        "run is one of a and short (no other run is shown to beat them: simultaneous 95% "
        "intervals of the prediction-powered pair differences); the LLM labels alone put "
        "short first (one of them) and reverse the one difference PPI shows real.")
    for p in data["pairs"]:
        p["ppi"]["verdict"] = "unresolved"
    data["ranking"] = {}
    assert ppi_headline(data).endswith(
        "but no difference between it and another run is real at this sample size (no "
        "evidence of a difference, which is not evidence of none); the LLM labels alone put "
        "short first and PPI shows no difference between two runs real at this sample size.")
