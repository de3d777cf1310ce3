"""evaluate() equals pytrec_eval (trec_eval ndcg_cut) to 1e-9, per query and in the mean.

Generated qrels/runs (seeded) hold ties, unjudged chunks, queries without a relevant chunk,
queries only in the run or only in the qrels, ids with leading zeros, long and non-ASCII ids,
several systems and several k. Scores are float32 values (pytrec_eval stores float32), so
ties are the same for both. Exponential gain (not in trec_eval's ndcg_cut) is checked against
a small independent reference implementation. Real data: a slice of TREC DL 2019.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labeler import _arrow, io

from labeler.scoring import results as scoring
pytrec_eval = pytest.importorskip("pytrec_eval")

KS = [1, 3, 5, 10, 20, 1000]


def _ids(rng: np.random.Generator, n: int, style: str) -> list[str]:
    base = rng.choice(10 * n, size=n, replace=False)
    if style == "short":      # ≤ 8 bytes, with leading-zero twins ("7" and "007")
        return [f"{b:03d}" if b % 3 else str(b) for b in base]
    # long (> 8 bytes) and non-ASCII ids, byte order ≠ ASCII habits
    return [f"msmarco_passage_{b:07d}" if b % 2 else f"é-doc{b}" for b in base]


def generate(seed: int, style: str = "short", n_queries: int = 40, depth: int = 30,
             wide_grades: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Qrels and runs; ``wide_grades``: grades -1..4 (trec_eval takes any integer)."""
    rng = np.random.default_rng(seed)
    queries = [str(i) for i in range(n_queries)] + ["007", "0007", "q-é"]
    run_rows, qrel_rows = [], []
    for qi, q in enumerate(queries):
        pool = _ids(rng, 3 * depth, style)
        only_in_qrels, only_in_run = qi % 11 == 5, qi % 13 == 6
        if not only_in_run:
            judged = rng.choice(len(pool), size=rng.integers(1, 2 * depth), replace=False)
            no_relevant = qi % 9 == 4
            for j in judged:
                if wide_grades:
                    grade = (int(rng.choice([-1, 0], p=[0.3, 0.7])) if no_relevant else
                             int(rng.choice([-1, 0, 1, 2, 3, 4],
                                            p=[.05, .45, .2, .15, .1, .05])))
                else:
                    grade = 0 if no_relevant else int(rng.choice(4, p=[0.5, 0.2, 0.2, 0.1]))
                qrel_rows.append((q, pool[j], grade))
        if only_in_qrels:
            continue
        for system, tie_step in (("bm25", 0.25), ("dense", 0.0), ("short", 0.5)):
            d = int(rng.integers(1, depth + 1)) if system != "short" else 3
            picked = rng.choice(len(pool), size=d, replace=False)
            raw = rng.random(d) * 4
            scores = np.round(raw / tie_step) * tie_step if tie_step else raw
            for j, s in zip(picked, scores.astype(np.float32)):
                run_rows.append((q, pool[j], float(s), system))
    run = pd.DataFrame(run_rows, columns=["query_id", "chunk_id", "score", "system"])
    qrels = pd.DataFrame(qrel_rows, columns=["query_id", "chunk_id", "grade"])
    return qrels, run


def pytrec_scores(qrels: pd.DataFrame, run: pd.DataFrame, ks: list[int]
                  ) -> dict[str, dict[str, dict[int, float]]]:
    """{system: {query: {k: ndcg}}} from pytrec_eval."""
    qd: dict[str, dict[str, int]] = {}
    for q, c, g in qrels[["query_id", "chunk_id", "grade"]].itertuples(index=False):
        qd.setdefault(q, {})[c] = int(g)
    evaluator = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut." + ",".join(map(str, ks))})
    out = {}
    for system, part in run.groupby("system", sort=False):
        rd: dict[str, dict[str, float]] = {}
        for q, c, s in part[["query_id", "chunk_id", "score"]].itertuples(index=False):
            rd.setdefault(q, {})[c] = float(s)
        res = evaluator.evaluate(rd)
        out[str(system)] = {q: {k: v[f"ndcg_cut_{k}"] for k in ks} for q, v in res.items()}
    return out


def assert_equals_pytrec(qrels: pd.DataFrame, run: pd.DataFrame, ks: list[int]) -> None:
    expected = pytrec_scores(qrels, run, ks)
    full = scoring.evaluate(qrels, run, k=ks, include_empty=True)
    default = scoring.evaluate(qrels, run, k=ks)
    relevant = set(qrels.loc[qrels["grade"] > 0, "query_id"])
    assert sorted(full.systems) == sorted(expected)
    for system, per_q in expected.items():
        for k in ks:
            pq = full.per_query[(full.per_query["system"] == system) & (full.per_query["k"] == k)]
            ours = dict(zip(pq["query_id"], pq["ndcg"]))
            scored = {q: v for q, v in ours.items() if not math.isnan(v)}
            assert set(scored) == set(per_q)            # run ∩ qrels, as trec_eval
            for q, v in per_q.items():
                assert scored[q] == pytest.approx(v[k], abs=1e-9), (system, q, k)
            theirs = [v[k] for v in per_q.values()]
            assert full.mean(system, k) == pytest.approx(np.mean(theirs), abs=1e-9)
            kept = [v[k] for q, v in per_q.items() if q in relevant]
            assert default.mean(system, k) == pytest.approx(np.mean(kept), abs=1e-9)
            assert default.median(system, k) == pytest.approx(np.median(kept), abs=1e-9)


@pytest.mark.parametrize("style", ["short", "long"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_equals_pytrec(seed: int, style: str) -> None:
    qrels, run = generate(seed, style)
    assert_equals_pytrec(qrels, run, KS)


@pytest.mark.parametrize("order", ["shuffled", "ranked"])
def test_row_order_does_not_matter(order: str) -> None:
    qrels, run = generate(3)
    if order == "shuffled":
        run = run.sample(frac=1, random_state=3).reset_index(drop=True)
        qrels = qrels.sample(frac=1, random_state=4).reset_index(drop=True)
    else:  # grouped by query, scores descending; tied chunks ascending (not trec_eval's)
        run = run.sort_values(["system", "query_id", "score", "chunk_id"],
                              ascending=[True, True, False, True])
        assert_equals_pytrec(qrels, run[run["system"] == "dense"], [3, 10])  # no ties
    assert_equals_pytrec(qrels, run, [3, 10])


def test_exact_path_when_hashes_collide(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every chunk id hashing alike forces the exact fallback; results must not change.
    qrels, run = generate(5, "long", n_queries=15)
    monkeypatch.setattr(_arrow, "hash_ids", lambda arr, codes=None: np.zeros(len(arr), np.uint64))
    assert_equals_pytrec(qrels, run, [5, 10])


def test_files_parsed_by_io_equal_pytrec(tmp_path: Path) -> None:
    qrels, run = generate(6, "short", n_queries=20)
    io.write_qrels(qrels, tmp_path / "h.qrels")
    for system, part in run.groupby("system"):
        io.write_run(part, tmp_path / f"{system}.run")
    res = scoring.evaluate_files(tmp_path / "h.qrels", sorted(tmp_path.glob("*.run")), k=[5, 10],
                               include_empty=True)
    expected = pytrec_scores(qrels, run, [5, 10])
    for system, per_q in expected.items():
        for k in (5, 10):
            assert res.mean(system, k) == pytest.approx(
                np.mean([v[k] for v in per_q.values()]), abs=1e-9)


# --------------------------------------------------------------------------- exponential

def reference_ndcg(qrels: pd.DataFrame, run: pd.DataFrame, k: int, gain: str, ideal: str
                   ) -> dict[tuple[str, str], float]:
    """A plain-Python NDCG@k: sort by (score, chunk id) descending, gains, log2 discounts."""
    judged = {(q, c): g for q, c, g in qrels[["query_id", "chunk_id", "grade"]]
              .itertuples(index=False)}
    by_query: dict[str, list[int]] = {}
    for (q, _), g in judged.items():
        by_query.setdefault(q, []).append(g)

    def gain_of(g: float) -> float:
        return 2.0 ** g - 1.0 if gain == "exponential" else float(g)

    def dcg(rels: list[int]) -> float:
        return sum(gain_of(r) / math.log2(i + 2) for i, r in enumerate(rels[:k]))

    out = {}
    for (system, q), part in run.groupby(["system", "query_id"], sort=False):
        ranked = sorted(zip(part["score"], part["chunk_id"]), reverse=True)
        rels = [judged.get((q, c), 0) for _, c in ranked]
        pool = rels if ideal == "run" else by_query.get(q, [])
        idcg = dcg(sorted(pool, reverse=True))
        out[(system, q)] = dcg(rels) / idcg if idcg > 0 else math.nan
    return out


@pytest.mark.parametrize("gain,ideal", [("exponential", "qrels"), ("exponential", "run"),
                                        ("linear", "run")])
def test_options_equal_reference(gain: str, ideal: str) -> None:
    qrels, run = generate(7, "long", n_queries=25)
    for k in (3, 10):
        expected = reference_ndcg(qrels, run, k, gain, ideal)
        res = scoring.evaluate(qrels, run, k=k, gain=gain, ideal=ideal)
        ours = {(s, q): v for s, q, v in res.per_query[["system", "query_id", "ndcg"]]
                .itertuples(index=False)}
        assert ours.keys() == expected.keys()
        for key, v in expected.items():
            assert ours[key] == pytest.approx(v, abs=1e-9, nan_ok=True), key


# --------------------------------------------------------------------------- real data

def test_trec_dl_2019_slice_equals_pytrec(data_dir: Path) -> None:
    base = data_dir / "dl19"
    runs = sorted((base / "runs").glob("*.run"))
    res = scoring.evaluate_files(base / "qrels-pass.qrels", runs, k=[5, 10, 100])
    with open(base / "qrels-pass.qrels") as fh:
        evaluator = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fh),
                                                   {"ndcg_cut.5,10,100"})
    assert res.systems == [p.stem for p in runs]
    for path in runs:
        with open(path) as fh:
            expected = evaluator.evaluate(pytrec_eval.parse_run(fh))
        assert len(expected) == 10
        for k in (5, 10, 100):
            pq = res.per_query[(res.per_query["system"] == path.stem) & (res.per_query["k"] == k)]
            ours = dict(zip(pq["query_id"], pq["ndcg"]))
            for q, v in expected.items():
                assert ours[q] == pytest.approx(v[f"ndcg_cut_{k}"], abs=1e-9), (path.stem, q, k)
            mean = np.mean([v[f"ndcg_cut_{k}"] for v in expected.values()])
            assert res.mean(path.stem, k) == pytest.approx(mean, abs=1e-9)


@pytest.mark.parametrize("twin,of", [(12, 11), (9, 6)])
def test_a_chunk_ranked_twice_is_found_in_whole_rankings(monkeypatch: pytest.MonkeyPatch,
                                                          twin: int, of: int) -> None:
    # With an uncut measure every row is looked up a block at a time, and the run is checked
    # on the way: a repeat must be found wherever it falls. Queries of 5 rows, blocks of 8:
    # rows 11 and 12 share a query that lies inside the second block; rows 6 and 9 share
    # one cut by the edge between the first two blocks.
    from labeler.scoring import lookup as _lookup
    from labeler.errors import InputError

    monkeypatch.setattr(_lookup, "BLOCK", 8)
    n = 40
    run = pd.DataFrame({"query_id": [f"q{i // 5}" for i in range(n)],
                        "chunk_id": [f"d{i}" for i in range(n)],
                        "score": [float(5 - i % 5) for i in range(n)], "system": "bm25"})
    qrels = pd.DataFrame({"query_id": [f"q{i // 5}" for i in range(0, n, 2)],
                          "chunk_id": [f"d{i}" for i in range(0, n, 2)], "grade": 1})
    assert scoring.evaluate(qrels, run, k=10, measures=["AP"]).mean("bm25", measure="AP") > 0
    assert run.loc[twin, "query_id"] == run.loc[of, "query_id"]
    run.loc[twin, "chunk_id"] = run.loc[of, "chunk_id"]
    with pytest.raises(InputError, match="ranked twice"):
        scoring.evaluate(qrels, run, k=10, measures=["AP"])
