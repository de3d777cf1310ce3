"""labeler.report.comparison and labeler.report.plots: escaping, self-containment, the agreement
panel."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from labeler import fmt, io

from labeler.report import plots
from labeler.reconciliation.comparison import compare
from labeler.errors import InputError
from labeler.report.comparison import as_agreement, render_markdown, write_report
from labeler.report.escape import md_escape

EVIL_RUN = "<script>alert(1)</script>"
EVIL_QUERY = "q| pipe `tick` <b>"
EVIL_TEXT = "<img src=x onerror=alert(2)> | $x$ **bold**"
DATA = Path(__file__).parent / "data" / "compare"


@pytest.fixture(scope="module")
def evil():
    """Runs whose tag and query id try to break out of HTML and Markdown tables."""
    human = {EVIL_QUERY: {"a": 3, "b": 1, "c": 0}, "q2": {"a": 2, "b": 0}}
    llm = {EVIL_QUERY: {"a": 1, "b": 3, "c": 2}, "q2": {"a": 2, "b": 2}}
    runs = pd.DataFrame({
        "query_id": [EVIL_QUERY] * 6 + ["q2"] * 4,
        "chunk_id": ["a", "b", "c", "c", "b", "a", "a", "b", "b", "a"],
        "score": [3.0, 2.0, 1.0] * 2 + [2.0, 1.0] * 2,
        "system": [EVIL_RUN] * 3 + ["$plain$ run"] * 3 + [EVIL_RUN] * 2 + ["$plain$ run"] * 2,
    })
    return compare(human=human, llm=llm, runs=runs, k=3, queries={EVIL_QUERY: EVIL_TEXT})


@pytest.fixture(scope="module")
def agreement() -> dict:
    """A reconcile-style report built by hand from the LLMJudge slice (human vs one LLM)."""
    h = io.read_qrels(DATA / "llmjudge" / "human.qrels")
    m = io.read_qrels(DATA / "llmjudge" / "willia-umbrela1.qrels")
    both = h.merge(m, on=["query_id", "chunk_id"], suffixes=("_h", "_l"))
    matrix = pd.crosstab(both.grade_h, both.grade_l).reindex(index=range(4), columns=range(4),
                                                              fill_value=0)
    return {"n": len(both), "exact_agreement": float((both.grade_h == both.grade_l).mean()),
            "cohen_kappa": 0.25, "confusion_matrix": matrix.to_numpy().tolist()}


@pytest.fixture(scope="module")
def html(evil) -> str:
    return evil.to_html()


@pytest.fixture(scope="module")
def written(evil, agreement: dict, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_report(evil, tmp_path_factory.mktemp("report") / "out", agreement=agreement,
                        title="<Audit>")


def _images(html: str) -> list[bytes]:
    srcs = re.findall(r'<img[^>]*\ssrc="([^"]*)"', html)
    assert all(s.startswith("data:image/png;base64,") for s in srcs)
    return [base64.b64decode(s.split(",", 1)[1]) for s in srcs]


def test_html_escapes_every_data_string(html: str) -> None:
    assert "<script" not in html and "<img src=x" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "q| pipe `tick` &lt;b&gt;" in html


def test_markdown_escapes_pipes_backticks_and_html(evil) -> None:
    md = evil.to_markdown()
    # no tag can open: every "<" before a letter or "/" is backslash-escaped (but the
    # report's own collapsible sections, <details> and <summary>) ...
    assert not re.search(r"(?<!\\)<(?!/?(?:details|summary)\b)[A-Za-z/!?]", md)
    # ... and the text stays readable as plain text: no HTML entities at all
    assert not re.search(r"&(lt|gt|amp|quot|#\d+);", md)
    assert r"\<script\>alert(1)\</script\>" in md
    assert r"q\| pipe \`tick\` \<b\>" in md
    # rendered by a CommonMark parser (markdown-it, which rich uses), nothing becomes a tag
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in rendered and "<img" not in rendered and "<b>" not in rendered
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered
    # every table row keeps its header's number of cells: no stray pipe splits a cell
    for block in re.split(r"\n\s*\n", md):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        cells = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(cells) <= 1, block


def test_markdown_escape_function() -> None:
    assert md_escape("a|b`c`<d>&\n*e*_f_") == r"a\|b\`c\`\<d\>\& \*e\*\_f\_"


def test_html_is_self_contained_with_plots(html: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "@import" not in html and "<link" not in html
    images = _images(html)
    assert len(images) == 3  # scatter, per-query deltas, ideal-ranking change
    assert all(img.startswith(b"\x89PNG\r\n\x1a\n") and len(img) > 5000 for img in images)


def test_agreement_panel_draws_the_confusion_matrix(evil, agreement: dict, html: str,
                                                     written: dict[str, Path]) -> None:
    assert sum(map(sum, agreement["confusion_matrix"])) == agreement["n"] == 594
    assert 'id="plot-confusion"' not in html
    html = written["html"].read_text()
    assert 'id="plot-confusion"' in html and len(_images(html)) == 4
    assert "Cohen&#39;s kappa" in html and "594" in html
    md = evil.to_markdown()
    assert "Confusion matrix" not in md
    md = render_markdown(evil, agreement=agreement)
    row0 = " | ".join(str(v) for v in agreement["confusion_matrix"][0])
    assert f"| 0 | {row0} |" in md


def test_agreement_accepts_objects_and_nested_reports_and_checks_the_matrix(
        agreement: dict) -> None:
    class Report:
        def to_dict(self) -> dict:
            return agreement

    assert as_agreement(Report())["n"] == 594
    assert as_agreement({"agreement": agreement})["n"] == 594
    with pytest.raises(InputError, match="4×4"):
        as_agreement({"confusion_matrix": [[1, 2], [3, 4]]})
    with pytest.raises(InputError, match="4×4"):
        as_agreement({"confusion_matrix": [[1, 2, 3, -4]] * 4})


def test_write_report_writes_json_md_html(evil, agreement: dict,
                                          written: dict[str, Path]) -> None:
    paths = written
    assert {p.name for p in paths["json"].parent.iterdir()} == {"report.json", "report.md",
                                                               "report.html"}
    data = json.loads(paths["json"].read_text())
    assert data["runs"] == evil.to_dict()["runs"] and data["title"] == "<Audit>"
    assert data["agreement"]["confusion_matrix"] == agreement["confusion_matrix"]
    assert "<title>&lt;Audit&gt;</title>" in paths["html"].read_text()
    assert paths["md"].read_text().startswith("# \\<Audit\\>")


def test_the_report_and_the_terminal_text_can_be_redrawn_from_report_json(
        evil, agreement: dict, written: dict[str, Path]) -> None:
    """The renderers read the JSON contract only: report.json, read back, draws the same
    Markdown, HTML and terminal text as the comparison it was written from."""
    from labeler.report.comparison import render_html
    from labeler.report.notebook import comparison_html
    from labeler.report.text import render_text

    data = json.loads(written["json"].read_text())
    assert render_markdown(data, "<Audit>", agreement) == written["md"].read_text()
    assert render_html(data, "<Audit>", agreement) == written["html"].read_text()
    assert render_text(data) == evil.to_text()
    assert comparison_html(data) == evil._repr_html_()


def test_real_slice_report_lists_runs_swaps_and_queries(tmp_path: Path) -> None:
    human = io.read_qrels(DATA / "human.qrels")
    llm = human.assign(grade=human["grade"].where(human["grade"] != 1, 2))
    c = compare(human=human, llm=llm, runs=io.read_runs(sorted((DATA / "runs").glob("*.run"))),
                queries=DATA / "queries.tsv")
    md = c.to_markdown()
    for tag in c.systems:
        assert md_escape(tag) in md
    for s in c.swaps:
        assert f"| {md_escape(s.human_first)} | {md_escape(s.llm_first)} |" in md
    assert c.most_changed["query"].iloc[0] in c.to_html()
    text = c.to_text()
    assert "Kendall's tau" in text and all(tag in text for tag in c.systems)


def test_plot_labels_with_dollar_signs_render(evil) -> None:
    """A `$` in a run tag must not be read as matplotlib mathtext (it would fail or garble)."""
    fig = plots.ndcg_scatter(evil)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert r"\$plain\$ run" in texts
    assert plots.to_png(fig).startswith(b"\x89PNG")


# ---------------------------------------------------------------------- statistics in the report

@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """DL 2019 slice: humans judged 6 of the 10 queries, the LLM (grade 1 promoted to 2 and
    3 demoted to 2: neither better nor worse, different) all 10; compared with --ppi."""
    from labeler.pipeline.provenance import judge_summary
    from labeler.statistics.verdicts import StatsOptions

    human_all = io.read_qrels(DATA / "human.qrels")
    llm = human_all.assign(grade=human_all["grade"].replace({1: 2, 3: 2}))
    queries = sorted(human_all["query_id"].unique())
    human = human_all.loc[human_all["query_id"].isin(queries[:6])]
    runs = io.read_runs(sorted((DATA / "runs").glob("*.run")))
    c = compare(human=human, llm=llm, runs=runs, stats=StatsOptions(ppi=True, alpha=0.2))
    records = llm.assign(status="ok", model="gpt-4o", prompt_id="default-1a2b3c",
                         input_tokens=1000, output_tokens=10)
    judge = judge_summary(records)
    out = tmp_path_factory.mktemp("stats-report") / "r"
    agreement = {"n": 100, "cohen_kappa": 0.4,
                 "ci": {"level": 0.95, "method": "percentile bootstrap", "n_resamples": 200,
                        "unit": "query", "cohen_kappa": [0.31, 0.52]}}
    paths = write_report(c, out, judge=judge, agreement=agreement)
    return {"c": c, "paths": paths, "judge": judge}


def test_report_leads_with_the_headline_and_lists_every_pair_verdict(sampled: dict) -> None:
    c, paths = sampled["c"], sampled["paths"]
    html, md = paths["html"].read_text(), paths["md"].read_text()
    head = c.headline
    assert head.startswith("On the 10 queries, 6 of them labelled by people at random, ")
    assert f'<p class="headline" id="headline">{head}</p>' in html
    assert md.split("\n\n")[1] == f"**{md_escape(head)}**"
    for p in c.significance.pairs_to_dicts():
        row = (f"| {md_escape(p['a'])} | {md_escape(p['b'])} | {p['n']} | "
               f"{p['human']['delta']:+.4f} | {fmt.pvalue(p['human']['p_adjusted'])} | ")
        assert row in md
        assert f'<td class="v-{p["verdict"]}">{p["verdict"]}</td>' in html
    counts = c.significance.counts
    assert f"{counts['confirmed']} confirmed, {counts['reversed']} reversed" in html


def test_report_runs_are_in_human_rank_order_with_intervals_and_leniency(
        sampled: dict, tmp_path: Path) -> None:
    # with PPI: best PPI estimate first, leniency on the labelled queries
    # (tests/test_report_ppi.py); without it, the human means over the shared queries
    human = io.read_qrels(DATA / "human.qrels")
    llm = human.assign(grade=human["grade"].replace({1: 2, 3: 2}))
    c = compare(human=human, llm=llm, runs=io.read_runs(sorted((DATA / "runs").glob("*.run"))))
    html = write_report(c, tmp_path / "r")["html"].read_text()
    runs_table = html[html.index('<table id="runs">'):html.index("</table>",
                                                                 html.index('id="runs"'))]
    order = re.findall(r'<tr><td class="id">([^<]+)</td>', runs_table)
    assert order == list(c.order_human)
    for r in c.runs.itertuples():
        lo, hi = c.significance.run_ci(r.system, "human")
        assert f"{r.human:.4f} <span class=\"ci\">[{lo:.4f}, {hi:.4f}]</span>" in runs_table
        if r.delta > 0:
            assert re.search(rf'class="num lenient"[^>]*>{re.escape(f"{r.delta:+.4f}")}<',
                             runs_table)
        elif r.delta < 0:
            assert re.search(rf'class="num strict"[^>]*>{re.escape(f"{r.delta:+.4f}")}<',
                             runs_table)
    assert "td.up" not in html and "td.down" not in html  # no good/bad colouring
    ppi_html = sampled["paths"]["html"].read_text()
    assert "td.up" not in ppi_html and "td.down" not in ppi_html


def test_report_has_the_ppi_section_the_judge_and_agreement_intervals(sampled: dict) -> None:
    c, paths, judge = sampled["c"], sampled["paths"], sampled["judge"]
    html, md = paths["html"].read_text(), paths["md"].read_text()
    assert "<h2>Prediction-powered estimates</h2>" in html
    assert "## Prediction-powered estimates" in md
    for system in c.systems:
        ppi = c.significance.run_ppi(system)
        assert ppi is not None and (ppi["n_labelled"], ppi["n_unlabelled"]) == (6, 4)
        assert (f"| {md_escape(system)} | {ppi['estimate']:.4f} | [{ppi['ci'][0]:.4f}, "
                f"{ppi['ci'][1]:.4f}] | 6 | 4 |") in md
    # the judge: model, prompt id, counts, cost from the price table, version and date
    for text in ("gpt-4o", "default-1a2b3c", f"{judge['n_judged']} judged, 0 failed",
                 f"labeler {judge['labeler_version']}", judge["date"]):
        assert text in html and text in md
    assert judge["cost_usd"] is not None and judge["cost_usd"] > 0
    # the kappa interval the agreement report carries is shown
    assert "[0.3100, 0.5200]" in html and "[0.3100, 0.5200]" in md
    assert "resamples of whole queries" in html
    data = json.loads(paths["json"].read_text())
    assert data["judge"]["models"] == ["gpt-4o"] and data["runs"][c.systems[0]]["ppi"]


def test_scatter_error_bars_are_the_run_intervals(sampled: dict) -> None:
    from matplotlib.container import ErrorbarContainer

    c = sampled["c"]  # with PPI: across, the PPI estimate and its interval
    fig = plots.ndcg_scatter(c)
    bars = [k for k in fig.axes[0].containers if isinstance(k, ErrorbarContainer)]
    assert len(bars) == 1
    _, _, (xbars, ybars) = bars[0].lines
    runs = c.runs.dropna(subset=["human", "llm"])
    for system, xseg, yseg in zip(runs["system"], xbars.get_segments(), ybars.get_segments()):
        assert sorted(xseg[:, 0]) == pytest.approx(c.significance.run_ppi(system)["ci"])
        assert sorted(yseg[:, 1]) == pytest.approx(c.significance.run_ci(system, "llm"))
