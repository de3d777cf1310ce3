"""Agreement intervals: the cluster (query) bootstrap, the pair bootstrap, and where the unit
shows (reconcile, judges, compare, the run config). Real LLMJudge label sets (tests/data)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result
from sklearn.metrics import cohen_kappa_score

from labeler import io
from labeler.cli import main
from labeler.errors import ConfigError
from labeler.reconciliation.agreement import agreement, joined
from labeler.statistics import bootstrap as boot

DATA = Path(__file__).parent / "data" / "llmjudge"
HUMAN = DATA / "test-human.qrels"
COMPARE = Path(__file__).parent / "data" / "compare"
FOUR = ["q49", "q0", "q1", "q2"]


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _human_of(queries: list[str]) -> pd.DataFrame:
    human = io.read_qrels(HUMAN)
    return human.loc[human["query_id"].isin(queries)].reset_index(drop=True)


def _library_stats(h: np.ndarray, g: np.ndarray) -> dict[str, float]:
    """The interval statistics of one resample, from scikit-learn and krippendorff."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {"exact_agreement": float(np.mean(h == g))}
        for name, w in (("cohen_kappa", None), ("cohen_kappa_linear", "linear"),
                        ("cohen_kappa_quadratic", "quadratic")):
            out[name] = float(cohen_kappa_score(h, g, labels=[0, 1, 2, 3], weights=w))
        try:
            out["krippendorff_alpha_ordinal"] = float(krippendorff.alpha(
                reliability_data=np.vstack([h, g]).astype(float),
                level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]))
        except ValueError:
            out["krippendorff_alpha_ordinal"] = float("nan")
    return out


def _percentiles(draws: list[dict[str, float]], name: str) -> list[float]:
    values = np.array([d[name] for d in draws])
    values = values[np.isfinite(values)]
    return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]


def test_table_statistics_equal_the_libraries() -> None:
    rng = np.random.default_rng(1)
    for trial in range(60):
        n = int(rng.integers(2, 50))
        h = rng.integers(0, 4, n)
        g = np.clip(h + rng.integers(-1, 2, n), 0, 3) if trial % 5 else np.full(n, 2)
        got = {k: float(v) for k, v in boot.statistics(boot.table_of(h, g)).items()}
        want = _library_stats(h, g)
        for name, value in want.items():
            if np.isnan(value):
                assert np.isnan(got[name]), name
            else:
                assert got[name] == pytest.approx(value, abs=1e-9), name


def _studentized(draws: list[dict[str, float]], name: str, estimate: float, n: int,
                 lo: float) -> list[float]:
    """estimate ± t(0.975, n − 1) · sd of the replicates · sqrt(n/(n − 1)), clipped."""
    from scipy import stats as sps

    values = np.array([d[name] for d in draws])
    values = values[np.isfinite(values)]
    half = sps.t.ppf(0.975, n - 1) * np.std(values, ddof=1) * np.sqrt(n / (n - 1))
    return [max(estimate - half, lo), min(estimate + half, 1.0)]


def test_query_bootstrap_reproduces_a_hand_made_resampling_of_whole_queries() -> None:
    llm = DATA / "RMITIR-llama38b.qrels"
    human = _human_of([*FOUR, "q3", "q5"])
    seed, n_resamples = 5, 40
    rep = agreement(llm=llm, human=human, bootstrap=n_resamples, seed=seed)
    assert rep.bootstrap_unit == "query" and rep.ci is not None and rep.ci["unit"] == "query"
    both, _ = joined(llm=llm, human=human)
    queries = sorted(both["query_id"].unique())
    draws = np.random.default_rng(seed).integers(0, len(queries), (n_resamples, len(queries)))
    stats = []
    for row in draws:  # every drawn query brings all of its pairs, a query drawn twice twice
        sample = pd.concat([both.loc[both["query_id"] == queries[i]] for i in row])
        stats.append(_library_stats(sample["human"].to_numpy(), sample["llm"].to_numpy()))
    whole = _library_stats(both["human"].to_numpy(), both["llm"].to_numpy())
    assert rep.ci["method"] == "studentized bootstrap"
    for name in boot.names():
        lo = 0.0 if name == "exact_agreement" else -1.0
        want = _studentized(stats, name, whole[name], len(queries), lo)
        assert rep.ci[name] == pytest.approx(want, abs=1e-9), name
        # wider than the percentile interval of the same resamples at 6 queries
        pct = _percentiles(stats, name)
        assert rep.ci[name][1] - rep.ci[name][0] > pct[1] - pct[0], name


def test_pair_bootstrap_is_todays_pair_bootstrap() -> None:
    # The pair unit keeps the figures it always gave: one rng.integers(0, n, n) per resample,
    # the statistics from scikit-learn and krippendorff, percentiles of the defined values.
    llm = DATA / "RMITIR-llama38b.qrels"
    human = _human_of(FOUR)
    rep = agreement(llm=llm, human=human, bootstrap=50, seed=3, unit="pair")
    both, _ = joined(llm=llm, human=human)
    h, g = both["human"].to_numpy(), both["llm"].to_numpy()
    rng = np.random.default_rng(3)
    stats = []
    for _ in range(50):
        idx = rng.integers(0, len(h), len(h))
        stats.append(_library_stats(h[idx], g[idx]))
    assert rep.ci is not None and rep.ci["unit"] == "pair" and rep.bootstrap_unit == "pair"
    for name in ("cohen_kappa", "cohen_kappa_quadratic", "krippendorff_alpha_ordinal",
                 "exact_agreement", "cohen_kappa_linear"):
        assert rep.ci[name] == pytest.approx(_percentiles(stats, name), abs=1e-9), name


def test_whole_queries_give_wider_intervals_than_pairs() -> None:
    llm = DATA / "Olz-gpt4o.qrels"
    query = agreement(llm=llm, human=HUMAN, bootstrap=200).ci
    pair = agreement(llm=llm, human=HUMAN, bootstrap=200, unit="pair").ci
    assert query is not None and pair is not None
    for name in boot.names():
        assert query[name][1] - query[name][0] > pair[name][1] - pair[name][0], name


def test_an_unknown_unit_is_refused() -> None:
    with pytest.raises(ConfigError, match="bootstrap unit"):
        agreement(llm=DATA / "Olz-gpt4o.qrels", human=HUMAN, unit="run")  # type: ignore[arg-type]


@pytest.mark.parametrize("unit", [None, "pair"])
def test_reconcile_json_says_which_unit(tmp_path: Path, unit: str | None) -> None:
    extra = ["--bootstrap-unit", unit] if unit else []
    res = _run("reconcile", "--llm", DATA / "Olz-gpt4o.qrels", "--human", HUMAN,
               "--out", tmp_path / "merged.jsonl", "--report", tmp_path / "a.json",
               "--bootstrap", "30", "--json", *extra)
    assert res.exit_code == 0, res.output
    for data in (json.loads(res.stdout), json.loads((tmp_path / "a.json").read_text())):
        assert data["bootstrap_unit"] == (unit or "query") == data["ci"]["unit"]
    lib = agreement(llm=DATA / "Olz-gpt4o.qrels", human=HUMAN, bootstrap=30,
                    unit=unit or "query")  # type: ignore[arg-type]
    assert json.loads(res.stdout)["ci"] == lib.to_dict()["ci"]
    assert ("whole queries" if unit is None else "of pairs") in _run(
        "reconcile", "--llm", DATA / "Olz-gpt4o.qrels", "--human", HUMAN, "--out",
        tmp_path / "m2.jsonl", "--bootstrap", "30", *extra).stdout


@pytest.mark.parametrize("unit", [None, "pair"])
def test_judges_json_says_which_unit(unit: str | None) -> None:
    extra = ["--bootstrap-unit", unit] if unit else []
    res = _run("judges", "--human", HUMAN, "--llm", DATA / "Olz-gpt4o.qrels",
               "--llm", DATA / "RMITIR-llama38b.qrels", "--bootstrap", "30", "--json", *extra)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["bootstrap_unit"] == (unit or "query")
    for judge in data["judges"].values():
        assert judge["bootstrap_unit"] == judge["ci"]["unit"] == (unit or "query")
        assert judge["ci"]["n_resamples"] == 30


def test_compare_json_says_its_resamples_are_whole_queries() -> None:
    runs = sorted((COMPARE / "runs").glob("*.run"))
    res = _run("compare", "--human", COMPARE / "human.qrels", "--llm", COMPARE / "human.qrels",
               *[a for r in runs for a in ("--run", r)], "--bootstrap", "50", "--json")
    assert res.exit_code == 0, res.output
    ranking = json.loads(res.stdout)["ranking"]
    assert ranking["bootstrap_unit"] == "query" and ranking["bootstrap"] == 50


def test_the_run_config_takes_the_unit_from_the_one_declaration() -> None:
    from labeler.pipeline.config import HumanConfig
    from labeler.settings import BootstrapConfig

    assert HumanConfig(qrels=Path("h.qrels")).bootstrap_unit == "query"
    assert HumanConfig(qrels=Path("h.qrels"), bootstrap_unit="pair").bootstrap_unit == "pair"
    for name, field in BootstrapConfig.model_fields.items():
        assert HumanConfig.model_fields[name].default == field.default
    with pytest.raises(ValueError):
        HumanConfig(qrels=Path("h.qrels"), bootstrap_unit="run")  # type: ignore[arg-type]
