"""`labeler judges`: is the best judge really better? Real LLMJudge 2024 label sets (tests/data/
llmjudge, see its README) against the same human labels.

The paired comparison (the best judge's alpha minus each other judge's, on the same resampled
queries) is recomputed here by hand: the documented draws of the query bootstrap, the pairs of
each drawn query, krippendorff's and scikit-learn's statistics on them, the studentized interval
and p with scipy, Holm with statsmodels. The terminal stays under 160 characters and says
which judges are not shown worse, with 33 judges named as the LLMJudge submissions are.
"""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests

from labeler import io
from labeler.cli import main
from labeler.reconciliation.leaderboard import leaderboard

LLMJUDGE = Path(__file__).parent / "data" / "llmjudge"
REAL = ["Olz-gpt4o", "willia-umbrela1", "RMITIR-llama38b"]
# The 33 LLMJudge 2024 submissions' names (the shape of a real judges table).
SUBMISSIONS = [
    "NISTRetrieval-instruct0", "NISTRetrieval-instruct1", "NISTRetrieval-instruct2",
    "NISTRetrieval-reason0", "NISTRetrieval-reason1", "NISTRetrieval-reason2", "Olz-exp",
    "Olz-gpt4o", "Olz-halfbin", "Olz-multiprompt", "Olz-somebin", "RMITIR-GPT4o",
    "RMITIR-llama38b", "RMITIR-llama70B", "TREMA-4prompts", "TREMA-CoT", "TREMA-all",
    "TREMA-direct", "TREMA-naiveBdecompose", "TREMA-nuggets", "TREMA-other", "TREMA-questions",
    "TREMA-rubric0", "TREMA-sumdecompose", "h2oloo-fewself", "h2oloo-zeroshot1",
    "h2oloo-zeroshot2", "prophet-setting1", "prophet-setting2", "prophet-setting4",
    "willia-umbrela1", "willia-umbrela2", "willia-umbrela3"]
B, SEED = 60, 3


def _sets() -> dict[str, pd.DataFrame]:
    out = {name: io.read_qrels(LLMJUDGE / f"{name}.qrels") for name in REAL}
    human = io.read_qrels(LLMJUDGE / "test-human.qrels")
    rng = np.random.default_rng(11)   # a weak judge: the human grade on a third of the pairs
    noisy = np.where(rng.random(len(human)) < 0.33, human["grade"], rng.integers(0, 4,
                                                                                 len(human)))
    out["coin-judge"] = human.assign(grade=noisy)
    return out


@pytest.fixture(scope="module")
def board():  # type: ignore[no-untyped-def]
    return leaderboard(human=LLMJUDGE / "test-human.qrels", llm=_sets(), bootstrap=B,
                       seed=SEED)


def _by_hand(best: str, other: str, sets: dict[str, pd.DataFrame]) -> dict[str, object]:
    """The paired query bootstrap written out: pairs of the drawn queries, the libraries'
    statistics on them, the studentized interval and p."""
    human = io.read_qrels(LLMJUDGE / "test-human.qrels")
    both = human.rename(columns={"grade": "human"})
    for name in (best, other):
        both = both.merge(sets[name][["query_id", "chunk_id", "grade"]]
                          .rename(columns={"grade": name}), on=["query_id", "chunk_id"])
    queries = sorted(both["query_id"].unique())
    rows = {q: np.flatnonzero(both["query_id"].to_numpy() == q) for q in queries}
    draws = np.random.default_rng(SEED).integers(0, len(queries), (B, len(queries)))

    def figures(idx: np.ndarray) -> tuple[float, float]:
        h = both["human"].to_numpy()[idx]
        alpha = [krippendorff.alpha(reliability_data=[h, both[n].to_numpy()[idx]],
                                    level_of_measurement="ordinal") for n in (best, other)]
        kq = [cohen_kappa_score(h, both[n].to_numpy()[idx], weights="quadratic")
              for n in (best, other)]
        return alpha[0] - alpha[1], kq[0] - kq[1]

    point = figures(np.arange(len(both)))
    reps = np.array([figures(np.concatenate([rows[queries[i]] for i in draw]))
                     for draw in draws])
    n = len(queries)
    out: dict[str, object] = {}
    for j, key in enumerate(("alpha", "kappa")):
        se = reps[:, j].std(ddof=1) * np.sqrt(n / (n - 1))
        half = stats.t.ppf(0.975, n - 1) * se
        out[key] = {"delta": point[j], "ci": [point[j] - half, point[j] + half],
                    "p": 2 * stats.t.sf(abs(point[j]) / se, n - 1)}
    return out


def test_the_paired_interval_and_p_equal_a_bootstrap_written_by_hand(board) -> None:
    sets = _sets()
    assert board.order[0] == "Olz-gpt4o" and board.order[-1] == "coin-judge"
    entries = {v["judge"]: v for v in board.versus_best}
    assert list(entries) == board.order[1:]
    raw_alpha, raw_kappa = [], []
    for name in board.order[1:]:
        hand, got = _by_hand("Olz-gpt4o", name, sets), entries[name]
        assert got["delta_alpha"] == pytest.approx(hand["alpha"]["delta"], abs=1e-12)
        assert got["delta_alpha"] == pytest.approx(
            board.judges["Olz-gpt4o"].krippendorff_alpha_ordinal
            - board.judges[name].krippendorff_alpha_ordinal, abs=1e-12)
        assert got["ci"] == pytest.approx(hand["alpha"]["ci"], abs=1e-10)
        assert got["p"] == pytest.approx(hand["alpha"]["p"], rel=1e-8, abs=1e-300)
        kq = got["kappa_quadratic"]
        assert kq["delta"] == pytest.approx(hand["kappa"]["delta"], abs=1e-12)
        assert kq["ci"] == pytest.approx(hand["kappa"]["ci"], abs=1e-10)
        assert kq["p"] == pytest.approx(hand["kappa"]["p"], rel=1e-8, abs=1e-300)
        raw_alpha.append(got["p"])
        raw_kappa.append(kq["p"])
    holm_alpha = multipletests(raw_alpha, method="holm")[1]
    holm_kappa = multipletests(raw_kappa, method="holm")[1]
    for i, name in enumerate(board.order[1:]):
        assert entries[name]["p_adjusted"] == pytest.approx(holm_alpha[i], rel=1e-12)
        assert entries[name]["kappa_quadratic"]["p_adjusted"] == pytest.approx(holm_kappa[i],
                                                                                rel=1e-12)
        assert entries[name]["worse"] == bool(holm_alpha[i] < 0.05)
    # the weak judge is shown worse; the two close real judges are not
    assert entries["coin-judge"]["worse"] is True
    assert entries["willia-umbrela1"]["worse"] is False
    assert board.not_shown_worse == [n for n in board.order if not entries.get(n, {}).get(
        "worse")]


def test_the_json_and_the_terminal_say_which_judges_are_not_shown_worse(board) -> None:
    out = json.loads(json.dumps(board.to_dict(), allow_nan=False))
    assert out["best"] == "Olz-gpt4o"
    assert {"judge", "delta_alpha", "ci", "p", "p_adjusted", "worse",
            "kappa_quadratic"} <= set(out["versus_best"][0])
    assert out["versus_best_test"] == {"statistic": "krippendorff_alpha_ordinal",
                                       "bootstrap": "paired, studentized", "n_resamples": B,
                                       "seed": SEED, "unit": "query", "alpha": 0.05,
                                       "adjustment": "holm"}
    assert out["not_shown_worse"] == board.not_shown_worse
    text = board.to_text()
    said = " ".join(text.split())
    worse = [v["judge"] for v in board.versus_best if v["worse"]]
    assert "coin-judge" in worse
    kept = said.split("Not shown worse than the best (Olz-gpt4o): ")[1].split(" (")[0]
    assert kept == "willia-umbrela1"
    assert f"(1 of 3); the other {len(worse)} are worse: {', '.join(worse)}." in said
    rows = {line.split()[1]: line for line in text.splitlines()[2:6]}
    assert rows["Olz-gpt4o"].endswith("best") and rows["coin-judge"].endswith("worse")
    assert rows["willia-umbrela1"].endswith("not shown worse")
    frame = board.to_frame()   # the notebook table says it too
    assert list(frame["versus_best"]) == ["best", *("worse" if v["worse"] else "not shown worse"
                                                    for v in board.versus_best)]
    assert frame["p_adjusted"].iloc[1:].tolist() == [v["p_adjusted"]
                                                     for v in board.versus_best]


def test_identical_judges_are_not_worse_and_no_bootstrap_tests_nothing() -> None:
    olz = io.read_qrels(LLMJUDGE / "Olz-gpt4o.qrels")
    same = leaderboard(human=LLMJUDGE / "test-human.qrels", llm={"a": olz, "b": olz.copy()},
                       bootstrap=20)
    [entry] = same.versus_best
    assert entry["delta_alpha"] == 0 and entry["ci"] == [0.0, 0.0] and entry["p"] == 1.0
    assert entry["worse"] is False
    bare = leaderboard(human=LLMJUDGE / "test-human.qrels", llm=_sets(), bootstrap=0)
    assert all(v["ci"] is None and v["p"] is None and v["worse"] is None
               for v in bare.versus_best)
    assert bare.not_shown_worse == bare.order
    assert "Not tested: that takes the bootstrap (--bootstrap N)" in bare.to_text()


def _many(tmp_path: Path, count: int = 33) -> list[str]:
    """``count`` judges named as the LLMJudge submissions: the three real label sets with a
    different share of their grades moved by one, as files."""
    rng = np.random.default_rng(5)
    specs = []
    for i, name in enumerate(SUBMISSIONS[:count]):
        base = io.read_qrels(LLMJUDGE / f"{REAL[i % 3]}.qrels")
        moved = rng.random(len(base)) < 0.04 * (i // 3)
        grade = np.clip(base["grade"].to_numpy() + np.where(moved, rng.choice([-1, 1],
                                                                              len(base)), 0),
                        0, 3)
        path = tmp_path / f"{name}.qrels"
        io.write_qrels(base.assign(grade=grade), path)
        specs.append(f"{name}={path}")
    return specs


def test_the_terminal_of_33_judges_stays_under_160_characters(tmp_path: Path) -> None:
    args = ["judges", "--human", str(LLMJUDGE / "test-human.qrels"), "--bootstrap", "20"]
    for spec in _many(tmp_path):
        args += ["--llm", spec]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(map(len, lines)) < 160
    rows = [line for line in lines if line[:3].strip().isdigit() and line[3] == " "]
    assert len(rows) == 33 and rows[0].endswith(" best")
    worse = [row.split()[1] for row in rows if row.endswith(" worse")
             and not row.endswith("not shown worse")]
    assert 1 < len(worse) < 32                          # some are worse, some not shown so
    text = " ".join(res.stdout.split())
    assert f"the other {len(worse)} are worse: {', '.join(worse)}." in text
    kept = text.split("Not shown worse than the best (")[1].split(" (")[0]
    assert not set(worse) & set(kept.split("): ")[1].split(", "))
    assert "judges' grades" in res.stdout   # disputed pairs as counts, not 33 names
