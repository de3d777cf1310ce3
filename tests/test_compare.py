"""labeler.compare and `labeler compare` on a real TREC DL 2019 slice (tests/data/compare).

The LLM label sets here are the human labels perturbed in ways whose effect on every NDCG
delta can be worked out by hand, so each test checks a direction or a value a user would see.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from click.testing import CliRunner
from scipy import stats

from labeler import io

from labeler.scoring import results as scoring
from labeler.cli import main
from labeler.reconciliation.comparison import Comparison, compare
from labeler.errors import ConfigError

K = 10
SPEC_KEYS = {"k", "runs", "kendall_tau", "spearman_rho"}


@pytest.fixture(scope="module")
def slice_dir() -> Path:
    return Path(__file__).parent / "data" / "compare"


@pytest.fixture(scope="module")
def human(slice_dir: Path) -> pd.DataFrame:
    return io.read_qrels(slice_dir / "human.qrels")


@pytest.fixture(scope="module")
def run_paths(slice_dir: Path) -> list[Path]:
    return sorted((slice_dir / "runs").glob("*.run"))


@pytest.fixture(scope="module")
def runs(run_paths: list[Path]) -> pd.DataFrame:
    return io.read_runs(run_paths)


def _top_k(runs: pd.DataFrame, k: int = K) -> pd.DataFrame:
    """Each run's top k in trec_eval order (score desc, chunk id desc), with 1-based ranks."""
    ordered = runs.sort_values(["system", "query_id", "score", "chunk_id"],
                               ascending=[True, True, False, False])
    ordered = ordered.assign(rank=ordered.groupby(["system", "query_id"]).cumcount() + 1)
    return ordered.loc[ordered["rank"] <= k]


def _trec_means(qrels: pd.DataFrame, runs: pd.DataFrame, k: int = K) -> dict[str, float]:
    """Mean ndcg_cut_k per run from pytrec_eval, over queries with a relevant chunk."""
    q: dict[str, dict[str, int]] = {}
    for r in qrels.itertuples():
        q.setdefault(r.query_id, {})[r.chunk_id] = int(r.grade)
    relevant = {qid for qid, docs in q.items() if max(docs.values()) > 0}
    evaluator = pytrec_eval.RelevanceEvaluator(q, {f"ndcg_cut_{k}"})
    out = {}
    for system, frame in runs.groupby("system"):
        run: dict[str, dict[str, float]] = {}
        for r in frame.itertuples():
            run.setdefault(r.query_id, {})[r.chunk_id] = float(r.score)
        res = evaluator.evaluate(run)
        vals = [v[f"ndcg_cut_{k}"] for qid, v in res.items() if qid in relevant]
        out[system] = float(np.mean(vals))
    return out


def _promote(qrels: pd.DataFrame, mask: pd.Series) -> pd.DataFrame:
    out = qrels.copy()
    out.loc[mask & (out["grade"] == 1), "grade"] = 2
    return out


# ---------------------------------------------------------------------- means and contract

def test_means_equal_score_and_pytrec_eval(human: pd.DataFrame, runs: pd.DataFrame) -> None:
    llm = _promote(human, pd.Series(True, index=human.index))
    c = compare(human=human, llm=llm, runs=runs, k=K)
    for label, qrels in (("human", human), ("llm", llm)):
        evaluated = scoring.evaluate(qrels, runs, k=K)
        reference = _trec_means(qrels, runs)
        for r in c.runs.itertuples():
            assert getattr(r, label) == pytest.approx(evaluated.mean(r.system, K), abs=1e-12)
            assert getattr(r, label) == pytest.approx(reference[r.system], abs=1e-9)
    assert (c.runs["delta"] == c.runs["llm"] - c.runs["human"]).all()
    assert list(c.runs["n_queries_human"]) == [10] * 4


def test_to_dict_has_the_spec_keys_and_is_strict_json(human: pd.DataFrame,
                                                      runs: pd.DataFrame) -> None:
    c = compare(human=human, llm=_promote(human, human["grade"] >= 0), runs=runs)
    d = c.to_dict()
    assert set(d) >= SPEC_KEYS
    assert d["k"] == 10
    assert set(d["runs"]) == set(runs["system"])
    for v in d["runs"].values():
        assert set(v) == {"human", "llm", "delta", "human_ci", "llm_ci", "shared", "rank"}
        assert v["delta"] == pytest.approx(v["llm"] - v["human"])
        assert v["human_ci"][0] < v["human"] < v["human_ci"][1]
    assert len(d["pairs"]) == 6 and sum(d["verdicts"].values()) == 6
    json.dumps(d, allow_nan=False)  # no NaN anywhere
    assert d["per_query"]["p_exp_bert"]["19335"]["human"] == pytest.approx(
        c.per_query.set_index(["system", "query_id"]).loc[("p_exp_bert", "19335"), "human"])
    assert isinstance(c, Comparison)
    assert c.to_frame().equals(c.runs) and c.to_frame() is not c.runs


def test_inputs_are_not_modified(human: pd.DataFrame, runs: pd.DataFrame) -> None:
    llm = _promote(human, human["grade"] >= 0)
    before = (human.copy(), llm.copy(), runs.copy())
    compare(human=human, llm=llm, runs=runs)
    for a, b in zip((human, llm, runs), before):
        pd.testing.assert_frame_equal(a, b)


# ---------------------------------------------------------------------- perturbations

def test_promoting_every_one_to_two_moves_each_delta_the_predicted_way(
        human: pd.DataFrame, runs: pd.DataFrame) -> None:
    """NDCG' − NDCG has the sign of r1 − NDCG·ΔIDCG, where r1 is the discount mass of the
    grade-1 chunks a run puts in its top k and ΔIDCG the rise of the ideal DCG@k. Where the
    ideal top k holds no grade-1 chunk (≥ k chunks of grade ≥ 2), ΔIDCG = 0: NDCG can only
    rise, and rises exactly when the run retrieved a grade-1 chunk."""
    llm = _promote(human, pd.Series(True, index=human.index))
    c = compare(human=human, llm=llm, runs=runs, k=K)
    top = _top_k(runs).merge(human, on=["query_id", "chunk_id"], how="left")
    top["w"] = np.where(top["grade"] == 1, 1 / np.log2(top["rank"] + 1), 0.0)
    r1 = top.groupby(["system", "query_id"])["w"].sum()

    def idcg(grades: pd.Series) -> float:
        g = sorted(grades, reverse=True)[:K]
        return sum(x / math.log2(i + 2) for i, x in enumerate(g))

    d_idcg = {q: idcg(llm.loc[llm.query_id == q, "grade"]) - idcg(frame["grade"])
              for q, frame in human.groupby("query_id")}
    signs = set()
    for r in c.per_query.itertuples():
        expected = r1[(r.system, r.query_id)] - r.human * d_idcg[r.query_id]
        if abs(expected) < 1e-12:
            assert r.delta == pytest.approx(0, abs=1e-12)
        else:
            assert np.sign(r.delta) == np.sign(expected), (r.system, r.query_id)
        if d_idcg[r.query_id] == 0:
            assert r.delta >= 0
        signs.add(int(np.sign(r.delta)))
    assert signs >= {-1, 1}  # both directions occur on this data: the rule is exercised
    assert (c.runs["delta"] > 0).all()  # on average the lenient labels flatter every run


def test_promoting_only_unretrieved_ones_can_only_lower_ndcg(human: pd.DataFrame,
                                                              runs: pd.DataFrame) -> None:
    """A grade raised outside every run's top k leaves DCG alone and can only raise IDCG."""
    retrieved = set(map(tuple, _top_k(runs)[["query_id", "chunk_id"]].to_numpy()))
    outside = ~pd.Series([(q, d) in retrieved for q, d in zip(human.query_id, human.chunk_id)],
                         index=human.index)
    llm = _promote(human, outside)
    c = compare(human=human, llm=llm, runs=runs)
    strong = human.loc[human.grade >= 2].groupby("query_id").size()
    for r in c.per_query.itertuples():
        if strong.get(r.query_id, 0) >= K:  # ideal top k is all 2s and 3s: unchanged
            assert r.delta == pytest.approx(0, abs=1e-12)
        else:
            assert r.delta < 0
    assert (c.per_query["delta"] < 0).any() and (c.runs["delta"] < 0).all()


def test_identical_labels_change_nothing(human: pd.DataFrame, runs: pd.DataFrame) -> None:
    c = compare(human=human, llm=human, runs=runs)
    assert (c.per_query["delta"] == 0).all()
    assert c.kendall_tau == pytest.approx(1.0) and c.spearman_rho == pytest.approx(1.0)
    assert c.swaps == () and c.n_pairs == 6
    assert c.ideal["ndcg"].tolist() == pytest.approx([1.0] * 10)
    assert c.order_human == c.order_llm


def test_all_grades_equal_makes_every_run_perfect_and_tau_undefined(
        human: pd.DataFrame, runs: pd.DataFrame) -> None:
    """Every judged chunk graded 1: a fully judged top k scores NDCG 1 for every run, so the
    runs tie under the LLM labels and no rank correlation exists."""
    flat = human.assign(grade=1)
    c = compare(human=human, llm=flat, runs=runs)
    assert (c.runs["judged_share_llm"] == 1.0).all()
    assert c.runs["llm"].tolist() == pytest.approx([1.0] * 4)
    assert c.kendall_tau is None and c.spearman_rho is None
    assert c.to_dict()["kendall_tau"] is None
    assert c.swaps == ()  # ties are not swaps
    assert (c.ideal["ndcg"].between(0, 1)).all()


def test_all_zero_llm_grades_leave_the_llm_mean_undefined(human: pd.DataFrame,
                                                           runs: pd.DataFrame) -> None:
    c = compare(human=human, llm=human.assign(grade=0), runs=runs)
    assert c.runs["llm"].isna().all() and (c.runs["n_queries_llm"] == 0).all()
    d = c.to_dict()
    assert all(v["llm"] is None and v["delta"] is None for v in d["runs"].values())
    assert d["kendall_tau"] is None and c.most_changed.empty
    empty = compare(human=human, llm=human.assign(grade=0), runs=runs, include_empty=True)
    assert (empty.runs["llm"] == 0).all()  # trec_eval's mean: empty queries count as 0


def test_judged_share_counts_what_the_llm_judged_in_the_top_k(human: pd.DataFrame,
                                                               runs: pd.DataFrame) -> None:
    top5 = _top_k(runs.loc[runs.system == "p_exp_bert"], 5)[["query_id", "chunk_id"]]
    llm = human.merge(top5, on=["query_id", "chunk_id"])
    assert (llm.groupby("query_id")["grade"].max() > 0).all()  # every query stays scorable
    c = compare(human=human, llm=llm, runs=runs).runs.set_index("system")
    assert c.loc["p_exp_bert", "judged_share_llm"] == pytest.approx(0.5)
    assert c.loc["p_exp_bert", "judged_share_human"] == pytest.approx(1.0)
    judged = set(map(tuple, llm[["query_id", "chunk_id"]].to_numpy()))
    for system, frame in _top_k(runs).groupby("system"):
        share = np.mean([(q, d) in judged for q, d in zip(frame.query_id, frame.chunk_id)])
        assert c.loc[system, "judged_share_llm"] == pytest.approx(share)


def test_most_changed_queries_are_ranked_by_mean_absolute_delta(
        human: pd.DataFrame, runs: pd.DataFrame, slice_dir: Path) -> None:
    c = compare(human=human, llm=_promote(human, human.grade >= 0), runs=runs, top=3,
                queries=slice_dir / "queries.tsv")
    mc = c.most_changed
    assert len(mc) == 3
    expected = (c.per_query.assign(a=c.per_query["delta"].abs()).groupby("query_id")["a"]
                .mean().sort_values(ascending=False))
    assert list(mc["query_id"]) == list(expected.index[:3])
    assert mc["mean_abs_delta"].tolist() == pytest.approx(expected.iloc[:3].tolist())
    texts = dict(io.read_queries(slice_dir / "queries.tsv").itertuples(index=False))
    assert list(mc["query"]) == [texts[q] for q in mc["query_id"]]


# ---------------------------------------------------------------------- constructed cases

HUMAN = {"q1": {"d1": 3, "d2": 2, "d3": 1}}
RUNS = pd.DataFrame({
    "query_id": ["q1"] * 9,
    "chunk_id": ["d1", "d2", "d3", "d2", "d1", "d3", "d3", "d2", "d1"],
    "score": [3.0, 2.0, 1.0] * 3,
    "system": ["A"] * 3 + ["B"] * 3 + ["C"] * 3,
})


def test_three_runs_reversed_labels_swap_every_pair() -> None:
    c = compare(human=HUMAN, llm={"q1": {"d1": 1, "d2": 2, "d3": 3}}, runs=RUNS, k=3)
    assert c.order_human == ("A", "B", "C") and c.order_llm == ("C", "B", "A")
    assert {(s.human_first, s.llm_first) for s in c.swaps} == {("A", "B"), ("A", "C"),
                                                                ("B", "C")}
    assert c.kendall_tau == pytest.approx(-1.0) and c.spearman_rho == pytest.approx(-1.0)
    assert c.to_dict()["swaps"]["n"] == 3


def test_three_runs_one_swap_listed_with_means() -> None:
    c = compare(human=HUMAN, llm={"q1": {"d1": 2, "d2": 3, "d3": 1}}, runs=RUNS, k=3)
    assert c.order_llm == ("B", "A", "C")
    (swap,) = c.swaps
    assert (swap.human_first, swap.llm_first) == ("A", "B")
    r = c.runs.set_index("system")
    assert swap.human == (r.loc["A", "human"], r.loc["B", "human"])
    assert swap.llm == (r.loc["A", "llm"], r.loc["B", "llm"])
    assert swap.llm[0] < swap.llm[1]
    tau = stats.kendalltau(c.runs["human"], c.runs["llm"])[0]
    rho = stats.spearmanr(c.runs["human"], c.runs["llm"])[0]
    assert (c.kendall_tau, c.spearman_rho) == (pytest.approx(1 / 3), pytest.approx(0.5))
    assert (c.kendall_tau, c.spearman_rho) == (pytest.approx(tau), pytest.approx(rho))


def test_tau_and_rho_equal_scipy_on_the_independent_means(human: pd.DataFrame,
                                                          runs: pd.DataFrame) -> None:
    llm = io.read_qrels(Path(__file__).parent / "data" / "compare" / "human.qrels")
    llm.loc[llm.grade == 3, "grade"] = 1  # perfect answers demoted: orders may move
    c = compare(human=human, llm=llm, runs=runs)
    h, m = _trec_means(human, runs), _trec_means(llm, runs)
    systems = sorted(h)
    tau = stats.kendalltau([h[s] for s in systems], [m[s] for s in systems])[0]
    rho = stats.spearmanr([h[s] for s in systems], [m[s] for s in systems])[0]
    assert c.kendall_tau == pytest.approx(tau) and c.spearman_rho == pytest.approx(rho)


def test_single_run_has_no_correlation() -> None:
    c = compare(human=HUMAN, llm=HUMAN, runs=RUNS.loc[RUNS.system == "A"], k=3)
    assert c.kendall_tau is None and c.spearman_rho is None and c.n_pairs == 0


def test_ideal_ranking_change_scores_the_llm_order_with_human_labels() -> None:
    human = {"q1": {"a": 3, "b": 2, "c": 0}}
    idcg = 3 + 2 / math.log2(3)
    c = compare(human=human, llm={"q1": {"a": 0, "b": 3, "c": 2}},
                runs=RUNS.assign(query_id="q1"), k=3)
    # LLM order b, c, a → human grades 2, 0, 3
    assert c.ideal.set_index("query_id").loc["q1", "ndcg"] == pytest.approx((2 + 3 / 2) / idcg)
    # all LLM grades equal: trec_eval breaks the tie by chunk id, descending → c, b, a
    tied = compare(human=human, llm={"q1": {"a": 1, "b": 1, "c": 1}}, runs=RUNS, k=3)
    assert tied.ideal["ndcg"].iloc[0] == pytest.approx((2 / math.log2(3) + 3 / 2) / idcg)
    # a chunk only the human judged counts as LLM grade 0: ranked after b (chunk id order)
    partial = compare(human=human, llm={"q1": {"b": 2}}, runs=RUNS, k=3)
    assert partial.ideal["ndcg"].iloc[0] == pytest.approx(
        (2 + 0 / math.log2(3) + 3 / 2) / idcg)
    assert partial.ideal[["n_human", "n_llm"]].iloc[0].tolist() == [3, 1]


def test_bad_k_is_an_input_error(human: pd.DataFrame, runs: pd.DataFrame) -> None:
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        compare(human=human, llm=human, runs=runs, k=0)


# ---------------------------------------------------------------------- CLI

def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_json_is_one_object_with_score_means(tmp_path: Path, slice_dir: Path,
                                                 human: pd.DataFrame, run_paths: list[Path],
                                                 runs: pd.DataFrame) -> None:
    labels = _promote(human, human.grade >= 0).assign(status="ok")
    failed = pd.DataFrame({"query_id": ["19335"], "chunk_id": ["x-failed"], "grade": [pd.NA],
                           "status": ["failed"]})
    llm_path = io.write_labels(pd.concat([labels, failed], ignore_index=True),
                               tmp_path / "labels.jsonl")
    args = ["compare", "--human", str(slice_dir / "human.qrels"), "--llm", str(llm_path)]
    for p in run_paths:
        args += ["--run", str(p)]
    code, out, err = _cli(*args, "--json")
    assert code == 0, err
    d = json.loads(out)  # exactly one JSON document on stdout
    assert set(d) >= SPEC_KEYS and d["k"] == 10
    llm_scores = scoring.evaluate(labels, runs, k=10)
    for tag, v in d["runs"].items():
        assert v["llm"] == pytest.approx(llm_scores.mean(tag, 10), abs=1e-12)
    code, text, _ = _cli(*args, "--k", "5")
    assert code == 0 and "human@5" in text and "p_exp_bert" in text and "swap" in text


def test_cli_report_writes_three_files_and_prints_the_html_path(
        tmp_path: Path, slice_dir: Path, run_paths: list[Path]) -> None:
    agreement = tmp_path / "agree.json"
    agreement.write_text(json.dumps({"n": 10, "cohen_kappa": 0.5, "confusion_matrix":
                                     [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0], [0, 0, 1, 3]]}))
    out_dir = tmp_path / "rep"
    code, out, err = _cli("compare", "--human", str(slice_dir / "human.qrels"),
                          "--llm", str(slice_dir / "human.qrels"), "--run", str(run_paths[0]),
                          "--report", str(out_dir), "--agreement", str(agreement), "--json")
    assert code == 0, err
    json.loads(out)
    assert err.strip().endswith(str(out_dir / "report.html"))
    assert sorted(p.name for p in out_dir.iterdir()) == ["report.html", "report.json",
                                                         "report.md"]
    assert json.loads((out_dir / "report.json").read_text())["agreement"]["n"] == 10


def test_cli_bad_inputs_exit_2_naming_the_file(tmp_path: Path, slice_dir: Path,
                                               run_paths: list[Path]) -> None:
    bad = tmp_path / "bad.qrels"
    bad.write_text("19335 0 d1 2\n19335 0 d2 2.5\n")
    base = ["compare", "--llm", str(slice_dir / "human.qrels"), "--run", str(run_paths[0])]
    code, _, err = _cli(*base, "--human", str(bad))
    assert code == 2 and "bad.qrels" in err and "line 2" in err
    code, _, err = _cli(*base, "--human", str(bad), "--grade-map-human", "2.5=2")
    assert code == 0, err
    negative = tmp_path / "negative.qrels"      # any integer grade scores, as in trec_eval
    negative.write_text("19335 0 d1 2\n19335 0 d2 -1\n")
    code, _, err = _cli(*base, "--human", str(negative))
    assert code == 0, err
    code, _, err = _cli(*base, "--human", str(slice_dir / "human.qrels"),
                        "--agreement", str(bad))
    assert code == 2 and "bad.qrels" in err
