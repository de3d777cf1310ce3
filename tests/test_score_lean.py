"""``labeler score`` on plain run files needs neither pandas nor scipy (its start-up), and
prints what it would print with them: tables as rich draws them, the same JSON."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from labeler.cli import score_cmd
from labeler.scoring.results import evaluate_files

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS = sorted(str(p) for p in (DATA / "runs").glob("*.run"))

PROBE = """
import sys
sys.argv = ["labeler", "score", *sys.argv[1:]]
from labeler.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print("\\nMODULES", sorted({m.split(".")[0] for m in sys.modules}
                          & {"pandas", "scipy", "duckdb"}), code, file=sys.stderr)
"""


@pytest.mark.parametrize("extra", [[], ["--json"], ["--trec", "--per-query"],
                                   ["--measure", "AP", "--measure", "Bpref", "--per-query",
                                    "--complete", "--include-empty"],
                                   ["--json", "--measure", "P(rel=2)@10", "--k", "5"]])
def test_score_imports_neither_pandas_nor_scipy(extra: list[str]) -> None:
    args = ["--qrels", str(DATA / "human.qrels"), *[a for r in RUNS for a in ("--run", r)]]
    proc = subprocess.run([sys.executable, "-c", PROBE, *args, *extra],
                          capture_output=True, text=True, timeout=120)
    tail = proc.stderr.rsplit("MODULES", 1)[-1].split()
    assert proc.stderr.count("MODULES") == 1, proc.stderr
    assert tail == ["[]", "0"], proc.stderr          # no pandas, scipy or duckdb; exit 0
    assert proc.stdout.strip()


def test_json_is_the_same_with_pandas_loaded() -> None:
    args = ["--qrels", str(DATA / "human.qrels"), *[a for r in RUNS for a in ("--run", r)],
            "--measure", "AP", "--k", "10", "--json"]
    lean = subprocess.run([sys.executable, "-m", "labeler", "score", *args],
                          capture_output=True, text=True, timeout=120)
    loaded = subprocess.run([sys.executable, "-c", "import pandas, scipy.stats, sys; "
                             "from labeler.cli import main; sys.argv = ['labeler', 'score', "
                             "*sys.argv[1:]]; main()", *args],
                            capture_output=True, text=True, timeout=120)
    assert json.loads(lean.stdout) == json.loads(loaded.stdout)


def test_piped_tables_are_drawn_as_rich_draws_them(monkeypatch: pytest.MonkeyPatch) -> None:
    res = evaluate_files(DATA / "human.qrels", RUNS, k=[5, 10], measures=["AP", "nDCG"])
    drawn = io.StringIO()
    monkeypatch.setattr(score_cmd.click, "echo", lambda text: drawn.write(text + "\n"))
    score_cmd._print_table(res, per_query=True)
    buf = io.StringIO()

    def rich_init(self: score_cmd._Tables) -> None:
        self.plain = False
        self.console = Console(file=buf, width=100_000, no_color=True, highlight=False)

    monkeypatch.setattr(score_cmd._Tables, "__init__", rich_init)
    score_cmd._print_table(res, per_query=True)
    assert drawn.getvalue() == buf.getvalue()
    assert "┏" in drawn.getvalue() and "nDCG" in drawn.getvalue()


def test_inputs_that_need_pandas_still_work(tmp_path: Path) -> None:
    # a grade map, a CSV run and --out take the general readers and writers (with pandas)
    csv = tmp_path / "run.csv"
    csv.write_text("query_id,chunk_id,score\n19335,8412684,3.0\n19335,7267248,2.0\n")
    for extra in (["--run", RUNS[0], "--grade-map", "3=2"], ["--run", str(csv)],
                  ["--run", RUNS[0], "--out", str(tmp_path / "out.json")],
                  ["--run", RUNS[0], "--engine", "duckdb"]):
        if "duckdb" in extra:
            pytest.importorskip("duckdb")
        proc = subprocess.run([sys.executable, "-m", "labeler", "score", "--qrels",
                               str(DATA / "human.qrels"), *extra, "--json"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["runs"]
