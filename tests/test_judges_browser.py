"""The judges report (``labeler judges --report``) in a real headless Chromium at a 1,280 px
window: the page never scrolls sideways with a dozen judges, and the answer to "is the best
judge really better?" is on the first screen.

Skipped when no Chromium binary is installed (Debian: `apt-get install chromium`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from labeler import io
from labeler.reconciliation.leaderboard import leaderboard
from labeler.report.judges import write_judges_report

from test_report_browser import _browser, _chromium

LLMJUDGE = Path(__file__).parent / "data" / "llmjudge"
REAL = ["Olz-gpt4o", "willia-umbrela1", "RMITIR-llama38b"]
NAMES = ["NISTRetrieval-instruct0", "NISTRetrieval-reason2", "Olz-multiprompt", "Olz-gpt4o",
         "RMITIR-llama70B", "TREMA-naiveBdecompose", "TREMA-sumdecompose", "h2oloo-zeroshot1",
         "h2oloo-fewself", "prophet-setting4", "willia-umbrela1", "willia-umbrela3"]
PROBE = """<script>
window.addEventListener("load", function () {
  var doc = document.documentElement;
  var el = document.getElementById("versus-answer");
  var answer = el ? el.getBoundingClientRect() : {top: null, right: null};
  var tables = [];
  document.querySelectorAll("table").forEach(function (t) {
    var box = t.closest(".wide");
    tables.push({id: t.id, width: t.scrollWidth, box: box ? box.clientWidth : null});
  });
  var out = {page: doc.scrollWidth, viewport: window.innerWidth, tables: tables,
             answer_top: answer.top, answer_right: answer.right,
             answer: el ? el.textContent : null};
  var pre = document.createElement("pre");
  pre.id = "judges-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def test_the_judges_page_fits_1280_px_and_answers_on_the_first_screen(tmp_path: Path) -> None:
    binary = _browser()
    rng = np.random.default_rng(2)
    sets = {}
    for i, name in enumerate(NAMES):   # the real sets, a growing share of grades moved by one
        base = io.read_qrels(LLMJUDGE / f"{REAL[i % 3]}.qrels")
        moved = np.where(rng.random(len(base)) < 0.05 * (i // 3), rng.choice([-1, 1],
                                                                              len(base)), 0)
        sets[name] = base.assign(grade=np.clip(base["grade"].to_numpy() + moved, 0, 3))
    board = leaderboard(human=LLMJUDGE / "test-human.qrels", llm=sets, bootstrap=20)
    html = write_judges_report(board, tmp_path / "report")["html"]
    probed = tmp_path / "probe.html"
    probed.write_text(html.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                      encoding="utf-8")
    done = _chromium(binary, tmp_path / "profile", "--virtual-time-budget=10000",
                     "--window-size=1280,900", "--dump-dom", probed.as_uri())
    found = re.search(r'<pre id="judges-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    layout = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert layout["viewport"] == 1280
    assert layout["page"] <= 1280                 # no sideways scroll of the page
    assert all(t["width"] <= t["box"] + 1 for t in layout["tables"])   # nor inside a table
    assert {t["id"] for t in layout["tables"]} >= {"leaderboard", "versus", "disputed"}
    assert layout["answer_top"] < 900 and layout["answer_right"] <= 1280
    best = board.order[0]
    assert layout["answer"].startswith(f"Is {best}, the best alpha, really better?")
    kept = board.not_shown_worse[1:]
    assert (f"Not shown worse than {best}: {', '.join(kept)}" in layout["answer"]
            if kept else "better than every other judge" in layout["answer"])
