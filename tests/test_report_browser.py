"""report.html opened in a real headless Chromium: it renders, with its plots, offline; at
1400 px and at 600 px the page never scrolls sideways, wide tables scroll inside their own box,
and the headline, the pair verdicts and the judge that made the labels are on the page.

Skipped when no Chromium binary is installed (Debian: `apt-get install chromium`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dl19kit import lexical_slice

from labeler import io
from labeler.reconciliation.comparison import compare
from labeler.pipeline.provenance import judge_summary
from labeler.report.comparison import write_report
from labeler.statistics.verdicts import StatsOptions

DATA = Path(__file__).parent / "data" / "compare"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
            "chrome", "headless_shell")
PROBE = """<script>
window.addEventListener("load", function () {
  var out = [];
  document.querySelectorAll("img").forEach(function (img) {
    out.push({id: img.id, w: img.naturalWidth, h: img.naturalHeight, shown: img.width});
  });
  var pre = document.createElement("pre");
  pre.id = "img-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium/Chrome binary found (apt-get install chromium to run this test)")


def _probe(page: Path, tmp_path: Path, body: str, window: str) -> dict:
    """Open ``page`` at ``window`` (``"1280,800"``) with a script whose ``body`` sets ``out``
    after the page loaded; return ``out``."""
    script = ("<script>window.addEventListener(\"load\", function () {\n" + body
              + "\n  var pre = document.createElement(\"pre\");\n  pre.id = \"probe-out\";\n"
              "  pre.textContent = JSON.stringify(out);\n  document.body.appendChild(pre);\n"
              "});</script>")
    probed = tmp_path / "probe.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"),
                      encoding="utf-8")
    done = _chromium(_browser(), tmp_path / "profile", "--virtual-time-budget=10000",
                     f"--window-size={window}", "--dump-dom", probed.as_uri())
    found = re.search(r'<pre id="probe-out">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def _chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    human = io.read_qrels(DATA / "human.qrels")
    llm = human.assign(grade=human["grade"].where(human["grade"] != 1, 2))
    runs = io.read_runs(sorted((DATA / "runs").glob("*.run")))
    c = compare(human=human, llm=llm, runs=runs, queries=DATA / "queries.tsv")
    h = io.read_qrels(DATA / "llmjudge" / "human.qrels")
    m = io.read_qrels(DATA / "llmjudge" / "willia-umbrela1.qrels")
    both = h.merge(m, on=["query_id", "chunk_id"], suffixes=("_h", "_l"))
    matrix = pd.crosstab(both.grade_h, both.grade_l).reindex(index=range(4), columns=range(4),
                                                              fill_value=0)
    agreement = {"n": len(both), "confusion_matrix": matrix.to_numpy().tolist()}
    out = tmp_path_factory.mktemp("browser")
    records = llm.assign(status="ok", model="lexical-baseline", prompt_id="lexical-baseline",
                         input_tokens=0, output_tokens=0)
    return write_report(c, out / "report", agreement=agreement, title="DL19 slice",
                        judge=judge_summary(records))["html"]


def test_report_renders_with_its_plots_in_chromium(report: Path, tmp_path: Path) -> None:
    from PIL import Image

    binary = _browser()
    shot = tmp_path / "report.png"
    done = _chromium(binary, tmp_path / "profile", f"--screenshot={shot}",
                     "--window-size=1400,5000", report.as_uri())
    assert shot.exists(), done.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert pixels.shape[:2] == (5000, 1400)
    not_white = (pixels < 235).any(axis=2).mean()
    assert not_white > 0.05  # text, tables and figures, not a blank page

    def near(rgb: tuple[int, int, int], tol: int = 40) -> int:
        return int((np.abs(pixels - np.array(rgb)).max(axis=2) < tol).sum())

    assert near((0x2C, 0x6F, 0xBB)) > 1500   # the blue of the scatter and the histogram
    assert near((0xD9, 0x82, 0x2B)) > 1500   # the orange bars of the ideal-ranking plot


def test_every_plot_decodes_in_the_browser(report: Path, tmp_path: Path) -> None:
    binary = _browser()
    probed = tmp_path / "probe.html"
    probed.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                      encoding="utf-8")
    done = _chromium(binary, tmp_path / "profile", "--virtual-time-budget=10000",
                     "--dump-dom", probed.as_uri())
    found = re.search(r'<pre id="img-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    images = json.loads(found.group(1).replace("&quot;", '"'))
    assert {img["id"] for img in images} == {"plot-scatter", "plot-deltas", "plot-ideal",
                                             "plot-confusion"}
    assert all(img["w"] > 300 and img["h"] > 200 and img["shown"] > 0 for img in images)


LAYOUT = """<script>
window.addEventListener("load", function () {
  var doc = document.documentElement;
  var tables = [];
  document.querySelectorAll("table").forEach(function (t) {
    var box = t.closest(".scroll");
    var style = box ? getComputedStyle(box).overflowX : "";
    tables.push({id: t.id, in_scroll: !!box, overflow: style, width: t.scrollWidth,
                 box: box ? box.clientWidth : null,
                 box_scroll: box ? box.scrollWidth : null,
                 shown: t.getClientRects().length > 0});
  });
  var head = document.getElementById("headline").getBoundingClientRect();
  var out = {page: doc.scrollWidth, viewport: window.innerWidth, tables: tables,
             headline: [head.left, head.right],
             headline_text: document.getElementById("headline").textContent,
             judge: document.getElementById("judge").textContent,
             verdicts: Array.from(document.querySelectorAll("#pairs td[class^=v-]"))
                        .map(function (td) { return td.textContent; })};
  var pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.parametrize("width", [1400, 600])
def test_layout_fits_the_window_and_wide_tables_scroll(report: Path, tmp_path: Path,
                                                       width: int) -> None:
    binary = _browser()
    probed = tmp_path / "probe.html"
    probed.write_text(report.read_text(encoding="utf-8").replace("</body>", LAYOUT + "</body>"),
                      encoding="utf-8")
    done = _chromium(binary, tmp_path / "profile", "--virtual-time-budget=10000",
                     f"--window-size={width},2000", "--dump-dom", probed.as_uri())
    found = re.search(r'<pre id="layout-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    layout = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert layout["viewport"] == width
    assert layout["page"] <= width  # the page itself never scrolls sideways
    left, right = layout["headline"]
    assert 0 <= left < right <= width
    assert layout["headline_text"].startswith("On the 10 queries every run scores ")
    assert "lexical-baseline" in layout["judge"] and "judged" in layout["judge"]
    assert len(layout["verdicts"]) == 6
    assert set(layout["verdicts"]) <= {"confirmed", "reversed", "human-only", "llm-only",
                                       "unresolved"}
    shown = [t for t in layout["tables"] if t["shown"]]
    assert {"runs", "pairs"} <= {t["id"] for t in shown}
    for t in shown:
        if t["in_scroll"]:
            assert t["overflow"] == "auto"
            assert t["box_scroll"] >= t["width"]  # every column reachable by scrolling
    wide = [t for t in shown if t["in_scroll"] and t["width"] > t["box"] + 1]
    if width == 1400:
        assert wide == []  # on a desktop window nothing is hidden
    else:
        assert "runs" in {t["id"] for t in wide}  # too wide for a phone: it scrolls


MANY = """  var doc = document.documentElement;
  var details = {};
  document.querySelectorAll("details[id]").forEach(function (d) { details[d.id] = d.open; });
  var lead = document.getElementById("changed-lead");
  var out = {height: doc.scrollHeight, page: doc.scrollWidth, viewport: window.innerWidth,
             details: details, lead: lead ? lead.textContent : null,
             lead_top: lead ? lead.getBoundingClientRect().top : null,
             headline_top: document.getElementById("headline").getBoundingClientRect().top,
             run_rows: document.querySelectorAll("#runs tbody tr").length};"""


def test_a_report_of_many_runs_leads_with_the_answer_at_1280_px(tmp_path: Path) -> None:
    """Twelve runs (66 pairs): the page stays short at 1280 px — headline first, the pairs
    whose verdict changes in the open, every pair and the planning table collapsed."""
    _browser()
    dl19 = Path(__file__).parent / "data" / "dl19"
    human = io.read_qrels(dl19 / "qrels-pass.qrels")
    rng = np.random.default_rng(7)
    llm = human.assign(grade=np.clip(human["grade"].to_numpy() + rng.integers(0, 2, len(human)),
                                     0, 3))
    base = io.read_runs(sorted((dl19 / "runs").glob("*.run")))
    runs = []
    for i in range(12):
        one = base.loc[base["system"] == sorted(base["system"].unique())[i % 3]].copy()
        one["score"] = one["score"] + rng.normal(0, 0.5 + i / 4, len(one))
        runs.append(one.assign(system=f"system-{i:02d}"))
    c = compare(human=human, llm=llm, runs=pd.concat(runs, ignore_index=True))
    assert len(c.significance.pairs) == 66
    page = write_report(c, tmp_path / "report")["html"]
    got = _probe(page, tmp_path, MANY, "1280,2000")
    assert got["viewport"] == 1280 and got["page"] <= 1280
    assert got["run_rows"] == 12
    assert got["details"]["all-pairs"] is False          # 66 pairs: collapsed
    assert got["lead"] and "pair verdict" in got["lead"]
    assert got["headline_top"] < got["lead_top"]
    assert got["height"] < 6000, got["height"]           # was > 8,000 px with 11 runs


PPI_PROBE = """  var doc = document.documentElement;
  var head = document.getElementById("headline").getBoundingClientRect();
  var runs = document.getElementById("runs");
  var box = runs.closest(".scroll");
  var out = {page: doc.scrollWidth, viewport: window.innerWidth, height: window.innerHeight,
             headline: document.getElementById("headline").textContent,
             headline_box: [head.top, head.bottom, head.left, head.right],
             runs_width: runs.scrollWidth, runs_box: box.clientWidth,
             header: Array.from(runs.querySelectorAll("th")).map(function (th) {
               return th.textContent; }),
             resolved: Array.from(document.querySelectorAll("#resolved tbody tr")).map(
               function (tr) { return tr.textContent; })};"""


def test_a_ppi_report_leads_with_its_answer_and_fits_1280_px(tmp_path: Path) -> None:
    """compare --ppi on DL 2019 (7 of 10 queries labelled by NIST, the lexical judge's
    labels of every top-10 passage): at 1280 × 800 the PPI headline is on the first screen,
    the page never scrolls sideways, and the runs table — PPI estimates beside both label
    sets on the labelled queries — fits without a scroll bar of its own."""
    _browser()
    data = lexical_slice()
    queries = sorted(data["human"]["query_id"].unique())
    labelled = np.random.default_rng(2).choice(queries, 7, replace=False)
    human = data["human"].loc[data["human"]["query_id"].isin(labelled)]
    c = compare(human=human, llm=data["llm"], runs=data["runs"],
                stats=StatsOptions(ppi=True, bootstrap=200))
    page = write_report(c, tmp_path / "report", title="DL19, 7 of 10 queries judged")["html"]
    got = _probe(page, tmp_path, PPI_PROBE, "1280,800")
    assert got["viewport"] == 1280 and got["page"] <= 1280   # no sideways scroll
    top, bottom, left, right = got["headline_box"]
    assert top >= 0 and bottom <= got["height"] and 0 <= left < right <= 1280  # first screen
    assert got["headline"] == c.headline
    assert got["headline"].startswith("On the 10 queries, 7 of them labelled by people")
    assert got["runs_width"] <= got["runs_box"] + 1, (got["runs_width"], got["runs_box"])
    assert "NDCG@10, human: PPI estimate [95% CI]" in got["header"]
    assert "human, labelled queries" in got["header"]
    assert len(got["resolved"]) == 2 and all("reverse" in row for row in got["resolved"])
