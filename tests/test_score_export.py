"""``ScoreResult.to_ir_measures()`` and ``.to_ranx()``: a score result in the shapes the two
libraries give their own results, with the same figures as ir_measures computes on the same
files (the bundled TREC DL 2019 sample) and ranx's paired tests equal to scipy's on
ir_measures' per-query values. ranx is only asked to hold the report (its import, not its
numba-compiled evaluation), and the ranx test is skipped without ranx.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import labeler
from labeler.demo import copy_sample
from labeler.errors import ConfigError

ir_measures = pytest.importorskip("ir_measures")
MEASURES = ["AP", "P(rel=2)@10", "Judged@10", "RR"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    data = copy_sample(tmp_path_factory.mktemp("export") / "sample")
    return data / "human.qrels", {p.stem: p for p in sorted((data / "runs").glob("*.run"))}


def _theirs(qrels: Path, run: Path) -> tuple[dict[object, float], list[object]]:
    measures = [ir_measures.parse_measure(m) for m in ["nDCG@10", *MEASURES]]
    q = list(ir_measures.read_trec_qrels(str(qrels)))
    r = list(ir_measures.read_trec_run(str(run)))
    return (ir_measures.calc_aggregate(measures, q, r),
            list(ir_measures.iter_calc(measures, q, r)))


def test_to_ir_measures_equals_calc_aggregate_and_iter_calc(sample) -> None:
    qrels, runs = sample
    res = labeler.score(qrels, runs, measures=MEASURES)
    means, per_query = res.to_ir_measures(), res.to_ir_measures(perquery=True)
    assert list(means) == list(runs)
    for name, path in runs.items():
        aggregate, metrics = _theirs(qrels, path)
        assert set(means[name]) == set(aggregate)     # ir_measures' own measure objects
        for measure, value in aggregate.items():
            assert means[name][measure] == pytest.approx(value, abs=1e-12)

        def key(m: object) -> tuple[str, str]:
            return str(m.measure), m.query_id      # type: ignore[attr-defined]

        mine = sorted(per_query[name], key=key)
        assert [key(m) for m in mine] == sorted(map(key, metrics))
        assert all(type(m).__name__ == "Metric" for m in mine)
        for a, b in zip(mine, sorted(metrics, key=key)):
            assert a.value == pytest.approx(b.value, abs=1e-12)


def test_exponential_gain_names_ir_measures_exp_dcg_and_run_ideal_is_refused(sample) -> None:
    qrels, runs = sample
    exp = labeler.score(qrels, runs, gain="exponential").to_ir_measures()
    name = next(iter(runs))
    measure = ir_measures.parse_measure("nDCG(dcg='exp-log2')@10")
    theirs = ir_measures.calc_aggregate([measure],
                                        list(ir_measures.read_trec_qrels(str(qrels))),
                                        list(ir_measures.read_trec_run(str(runs[name]))))
    # ir_measures computes this one with a provider that prints five decimals
    assert exp[name][measure] == pytest.approx(theirs[measure], abs=1e-5)
    with pytest.raises(ConfigError, match="ideal"):
        labeler.score(qrels, runs, ideal="run").to_ir_measures()


def test_to_ranx_is_a_report_with_ranx_names_means_and_paired_tests(sample) -> None:
    pytest.importorskip("ranx")
    from ranx.data_structures import Report

    qrels, runs = sample
    res = labeler.score(qrels, runs, measures=MEASURES)
    report = res.to_ranx(max_p=0.05)
    assert isinstance(report, Report)
    # Judged@10 has no ranx metric and is left out; P(rel=2) is ranx's relevance level 2
    assert report.metrics == ["ndcg@10", "map", "precision@10-l2", "mrr"]
    names = list(runs)
    pairs = {"ndcg@10": "nDCG@10", "map": "AP", "precision@10-l2": "P(rel=2)@10",
             "mrr": "RR"}
    values = {n: _theirs(qrels, runs[n])[1] for n in names}

    def per_query(name: str, measure: str) -> np.ndarray:
        found = sorted((m.query_id, m.value) for m in values[name] if str(m.measure) == measure)
        return np.array([v for _, v in found])

    for metric, measure in pairs.items():
        for a in names:
            assert report.results[a][metric] == pytest.approx(per_query(a, measure).mean(),
                                                              abs=1e-12)
            for b in names:
                if a < b:
                    p = stats.ttest_rel(per_query(a, measure), per_query(b, measure)).pvalue
                    got = report.comparisons[a, b][metric]
                    assert got["p_value"] == pytest.approx(p, rel=1e-9)
                    assert bool(got["significant"]) == bool(p <= 0.05)
                    wins = int(np.sum(per_query(a, measure) > per_query(b, measure)))
                    assert report.win_tie_loss[(a, b)][metric]["W"] == wins
    table = str(report)
    assert "NDCG@10" in table and "P@10-l2" in table and names[0] in table
