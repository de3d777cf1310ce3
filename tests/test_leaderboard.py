"""`leaderboard`: several real LLM label sets (LLMJudge 2024) against the same human labels.

Each judge's figures equal scikit-learn / krippendorff computed directly on the common pairs,
and the published per-submission Cohen's kappa and Krippendorff's alpha (Rahmani et al. 2025,
"Judging the Judges", arXiv 2502.13908, Table 3; four decimals). With runs, Kendall's tau
equals scipy's on the runs' mean NDCG@10 from pytrec_eval.
"""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from labeler import io
from labeler.errors import ConfigError, InputError
from labeler.reconciliation.leaderboard import leaderboard

LLMJUDGE = Path(__file__).parent / "data" / "llmjudge"
COMPARE = Path(__file__).parent / "data" / "compare"
# Table 3 of Rahmani et al. 2025: (Cohen's kappa, Krippendorff's alpha) per submission.
PUBLISHED = {"Olz-gpt4o": (0.2625, 0.5020), "willia-umbrela1": (0.2863, 0.4918),
             "RMITIR-llama38b": (0.2006, 0.3873)}
LABELS = [0, 1, 2, 3]


@pytest.fixture(scope="module")
def human() -> pd.DataFrame:
    return io.read_qrels(LLMJUDGE / "test-human.qrels")


@pytest.fixture(scope="module")
def board():  # type: ignore[no-untyped-def]
    return leaderboard(human=LLMJUDGE / "test-human.qrels",
                       llm=[LLMJUDGE / f"{name}.qrels" for name in sorted(PUBLISHED)])


def _aligned(llm: pd.DataFrame, human: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    both = human.merge(llm, on=["query_id", "chunk_id"], suffixes=("_h", "_l"))
    return both["grade_h"].to_numpy(int), both["grade_l"].to_numpy(int)


def test_every_judge_equals_the_libraries_and_table_3(board, human: pd.DataFrame) -> None:
    assert board.n == 4423
    for name, (kappa, alpha) in PUBLISHED.items():
        h, ll = _aligned(io.read_qrels(LLMJUDGE / f"{name}.qrels"), human)
        rep = board.judges[name]
        assert rep.n == len(h) == 4423
        assert rep.cohen_kappa == pytest.approx(cohen_kappa_score(h, ll, labels=LABELS),
                                                abs=1e-12)
        assert rep.cohen_kappa_quadratic == pytest.approx(
            cohen_kappa_score(h, ll, labels=LABELS, weights="quadratic"), abs=1e-12)
        assert rep.krippendorff_alpha_ordinal == pytest.approx(krippendorff.alpha(
            reliability_data=[h, ll], level_of_measurement="ordinal"), abs=1e-12)
        assert rep.exact_agreement == pytest.approx(np.mean(h == ll), abs=1e-12)
        assert round(rep.cohen_kappa, 4) == kappa
        assert round(rep.krippendorff_alpha_ordinal, 4) == alpha


def test_judges_are_ranked_by_alpha_and_json_has_reconciles_keys(board) -> None:
    assert board.order == ["Olz-gpt4o", "willia-umbrela1", "RMITIR-llama38b"]
    out = json.loads(json.dumps(board.to_dict(), allow_nan=False))
    assert out["n"] == 4423 and list(out["judges"]) == board.order
    spec_keys = {"n", "exact_agreement", "cohen_kappa", "cohen_kappa_linear",
                 "cohen_kappa_quadratic", "krippendorff_alpha_ordinal", "binary_agreement",
                 "mean_signed_difference", "confusion_matrix"}
    for rank, entry in enumerate(out["judges"].values(), 1):
        assert spec_keys <= set(entry) and entry["rank"] == rank
        assert entry["kendall_tau"] is None  # no runs given
    frame = board.to_frame()
    assert list(frame["judge"]) == board.order
    assert "<td>Olz-gpt4o</td><td>0.5020</td>" in board._repr_html_()  # a notebook table
    assert "Olz-gpt4o" in board.to_text().splitlines()[2]


def test_the_leaderboard_text_and_report_can_be_redrawn_from_its_json(board,
                                                                     tmp_path: Path) -> None:
    """The judges' renderers read the JSON contract only: the leaderboard's JSON, read back,
    draws the same terminal text and report as the leaderboard itself."""
    from labeler.report.judges import write_judges_report
    from labeler.report.judges_text import leaderboard_text

    data = json.loads(json.dumps(board.to_dict()))
    assert leaderboard_text(data) == board.to_text()
    from_board = write_judges_report(board, tmp_path / "board")
    from_json = write_judges_report(data, tmp_path / "json")
    for kind in ("md", "html", "json"):
        assert from_json[kind].read_bytes() == from_board[kind].read_bytes()


def test_only_the_pairs_every_judge_graded_are_compared(human: pd.DataFrame) -> None:
    a = io.read_labels(LLMJUDGE / "Olz-gpt4o.qrels")
    b = io.read_labels(LLMJUDGE / "willia-umbrela1.qrels")
    a.loc[:99, "status"], a.loc[:99, "grade"] = "failed", pd.NA  # 100 failed in a
    b = b.iloc[50:]  # b never graded the first 50 pairs of its file
    board = leaderboard(human=human, llm={"a": a, "b": b})
    common = (human.merge(a.loc[a["status"] == "ok", ["query_id", "chunk_id"]])
              .merge(b[["query_id", "chunk_id"]]))
    assert board.n == len(common) < 4423
    ok_a = a.loc[a["status"] == "ok"].astype({"grade": "int64"})
    h, ll = _aligned(ok_a.merge(common[["query_id", "chunk_id"]]), human)
    assert board.judges["a"].n == board.judges["b"].n == board.n
    assert board.judges["a"].n_llm_failed == 100
    assert board.judges["a"].krippendorff_alpha_ordinal == pytest.approx(krippendorff.alpha(
        reliability_data=[h, ll], level_of_measurement="ordinal"), abs=1e-12)


def test_the_most_disputed_pairs_have_the_widest_spread(board, human: pd.DataFrame) -> None:
    grades = human.rename(columns={"grade": "human"})
    for name in PUBLISHED:
        grades = grades.merge(io.read_qrels(LLMJUDGE / f"{name}.qrels").rename(
            columns={"grade": name}), on=["query_id", "chunk_id"])
    g = grades[list(PUBLISHED)]
    widest = int((g.max(axis=1) - g.min(axis=1)).max())
    top = board.to_dict()["disagreements"]
    assert len(top) == 20 and top[0]["spread"] == widest == 3
    spreads = [d["spread"] for d in top]
    assert spreads == sorted(spreads, reverse=True)
    first = grades.set_index(["query_id", "chunk_id"]).loc[(top[0]["query_id"],
                                                            top[0]["chunk_id"])]
    assert top[0]["grades"] == {name: int(first[name]) for name in board.order}
    assert top[0]["human"] == int(first["human"])


def _trec_mean(qrels: pd.DataFrame, runs: pd.DataFrame, k: int = 10) -> dict[str, float]:
    q = {}
    for r in qrels.itertuples():
        q.setdefault(r.query_id, {})[r.chunk_id] = int(r.grade)
    out = {}
    for system, run in runs.groupby("system"):
        rr = {}
        for r in run.itertuples():
            rr.setdefault(r.query_id, {})[r.chunk_id] = float(r.score)
        ev = pytrec_eval.RelevanceEvaluator(q, {f"ndcg_cut.{k}"}).evaluate(rr)
        vals = [v[f"ndcg_cut_{k}"] for qid, v in ev.items()
                if any(g > 0 for g in q.get(qid, {}).values())]
        out[str(system)] = float(np.mean(vals))
    return out


def test_kendall_tau_of_the_run_order_equals_scipy_on_pytrec_eval_means() -> None:
    human = io.read_qrels(COMPARE / "human.qrels")
    runs = io.read_runs(sorted((COMPARE / "runs").glob("*.run")))
    rng = np.random.default_rng(3)
    noisy = human.assign(grade=np.clip(human["grade"] + rng.integers(-1, 2, len(human)), 0, 3))
    flipped = human.assign(grade=3 - human["grade"])  # a judge that has it backwards
    board = leaderboard(human=human, llm={"same": human, "noisy": noisy, "flipped": flipped},
                        runs=runs, k=10)
    base = _trec_mean(human, runs)
    systems = sorted(base)
    for name, labels in (("same", human), ("noisy", noisy), ("flipped", flipped)):
        means = _trec_mean(labels, runs)
        expected = stats.kendalltau([base[s] for s in systems], [means[s] for s in systems])[0]
        assert board.kendall_tau[name] == pytest.approx(expected, abs=1e-12)
    assert board.kendall_tau["same"] == 1.0
    assert board.order[0] == "same" and board.order[-1] == "flipped"
    assert board.to_dict()["judges"]["noisy"]["kendall_tau"] == board.kendall_tau["noisy"]


def test_bad_judge_sets_are_refused_clearly(tmp_path: Path, human: pd.DataFrame) -> None:
    other = tmp_path / "other.qrels"
    other.write_text("1001 0 D42 2\n")
    with pytest.raises(InputError, match="other"):
        leaderboard(human=human, llm=[LLMJUDGE / "Olz-gpt4o.qrels", other])
    with pytest.raises(ConfigError, match="NAME=PATH"):
        leaderboard(human=human, llm=[LLMJUDGE / "Olz-gpt4o.qrels",
                                      LLMJUDGE / "Olz-gpt4o.qrels"])
    named = leaderboard(human=human, llm=[f"gpt={LLMJUDGE / 'Olz-gpt4o.qrels'}"])
    assert named.order == ["gpt"]
    with pytest.raises(InputError, match="got 5"):  # a real set with a grade of 5
        leaderboard(human=human, llm=[LLMJUDGE / "RMITIR-llama70B-q0.qrels"])
    mapped = leaderboard(human=human, llm=[LLMJUDGE / "RMITIR-llama70B-q0.qrels"],
                         grade_map={"5": 3})
    assert mapped.n == 96


def test_labeler_judges_prints_json_and_writes_an_escaped_report(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from labeler.cli import main

    weird = "<b>gpt</b>"
    args = ["judges", "--human", str(LLMJUDGE / "test-human.qrels"),
            "--llm", str(LLMJUDGE / "Olz-gpt4o.qrels"),
            "--llm", f"{weird}={LLMJUDGE / 'willia-umbrela1.qrels'}", "--bootstrap", "0"]
    res = CliRunner().invoke(main, [*args, "--json", "--report", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n"] == 4423 and list(out["judges"]) == ["Olz-gpt4o", weird]
    assert round(out["judges"]["Olz-gpt4o"]["krippendorff_alpha_ordinal"], 4) == 0.5020
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "&lt;b&gt;gpt&lt;/b&gt;" in html and weird not in html
    assert html.count("data:image/png;base64,") == 2  # one confusion matrix per judge
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| 1 | Olz-gpt4o | 0.5020 |" in md
    assert json.loads((tmp_path / "rep" / "report.json").read_text())["n"] == 4423
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0 and text.stdout.splitlines()[2].split()[1] == "Olz-gpt4o"
    dup = CliRunner().invoke(main, ["judges", "--human", str(LLMJUDGE / "test-human.qrels"),
                                    "--llm", str(LLMJUDGE / "Olz-gpt4o.qrels"),
                                    "--llm", str(LLMJUDGE / "Olz-gpt4o.qrels")])
    assert dup.exit_code == 2 and "NAME=PATH" in dup.output
