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


def _trec_ndcg10(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
                 ) -> dict[str, float]:
    """pytrec_eval's ndcg_cut_10 per query of ``run`` (queries with a relevant chunk)."""
    import pytrec_eval

    res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    relevant = {q for q, docs in qrels.items() if any(g > 0 for g in docs.values())}
    return {q: v["ndcg_cut_10"] for q, v in res.items() if q in relevant}


def _trec_file(path: Path, columns: tuple[int, int, int]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        q, d, v = (parts[i] for i in columns)
        out.setdefault(q, {})[d] = float(v)
    return out


def test_inputs_that_need_pandas_give_pytrec_evals_figures(tmp_path: Path) -> None:
    # a grade map, a CSV run, --out and DuckDB take the general readers and writers (with
    # pandas): each prints the figures pytrec_eval gives on the same input
    qrels = {q: {d: int(g) for d, g in docs.items()}
             for q, docs in _trec_file(DATA / "human.qrels", (0, 2, 3)).items()}
    mapped = {q: {d: 2 if g == 3 else g for d, g in docs.items()} for q, docs in qrels.items()}
    run = _trec_file(Path(RUNS[0]), (0, 2, 4))
    csv = tmp_path / "run.csv"
    csv.write_text("query_id,chunk_id,score\n19335,8412684,3.0\n19335,7267248,2.0\n")
    csv_run = {"19335": {"8412684": 3.0, "7267248": 2.0}}
    out_file = tmp_path / "out.json"
    cases = [(["--run", RUNS[0], "--grade-map", "3=2"], _trec_ndcg10(mapped, run)),
             (["--run", str(csv)], _trec_ndcg10(qrels, csv_run)),
             (["--run", RUNS[0], "--out", str(out_file)], _trec_ndcg10(qrels, run)),
             (["--run", RUNS[0], "--engine", "duckdb"], _trec_ndcg10(qrels, run))]
    assert _trec_ndcg10(mapped, run) != _trec_ndcg10(qrels, run)   # the map changes figures
    for extra, expected in cases:
        if "duckdb" in extra:
            pytest.importorskip("duckdb")
        proc = subprocess.run([sys.executable, "-m", "labeler", "score", "--qrels",
                               str(DATA / "human.qrels"), *extra, "--json"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        (figures,) = json.loads(proc.stdout)["runs"].values()
        per_query = figures["ndcg@10"]["per_query"]
        assert per_query == pytest.approx(expected, abs=1e-12), extra
        assert figures["ndcg@10"]["mean"] == pytest.approx(
            sum(expected.values()) / len(expected), abs=1e-12)
        if "--out" in extra:
            assert json.loads(out_file.read_text()) == json.loads(proc.stdout)
