"""Does the τ_AP interval of "would the leaderboard change?" cover the truth?

Population: TREC DL 2019 passage ranking: the 43 queries with NIST judgements and 11 real runs
(NDCG@10; the shared slices of 8 runs hold 11 to 23 of the queries, so their means are over
the queries they have, as in the nightly job). "Before" labels are the NIST grades;
"tonight's" are those of a judge that changed: a share of the pairs (``--shifts``, drawn at
random) moved to another grade. The truth is τ_AP of the runs' order by their mean over all
43 queries under tonight's labels against the order under the labels before. A nightly job
scores only n queries (a random draw of n of the 43, without replacement) and reports the 95%
percentile interval of τ_AP from resamples of whole queries
(:func:`labeler.pipeline.shift.tau_ap_interval`). Printed: per shift and n, the truth, the
share of draws whose interval covers it, and the mean width.

Usage::

    python benchmarks/bench_tau_ap_coverage.py [--data /work/shared/data/trec-dl-2019]
        [--draws 200] [--sizes 10 20 30] [--shifts 0.1 0.3] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

K = 10


def _per_query(qrels: pd.DataFrame, runs: pd.DataFrame, queries: list[str],
               systems: list[str]) -> np.ndarray:
    """queries × runs NDCG@10 (NaN where a run has no value for a query)."""
    from labeler.scoring.results import score

    res = score(qrels, runs, k=[K]).to_dict()["runs"]
    out = np.full((len(queries), len(systems)), np.nan)
    row = {q: i for i, q in enumerate(queries)}
    for j, s in enumerate(systems):
        for q, v in (res[s][f"ndcg@{K}"].get("per_query") or {}).items():
            if q in row and v is not None:
                out[row[q], j] = v
    return out


def _shifted(qrels: pd.DataFrame, share: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    grades = qrels["grade"].to_numpy().copy()
    move = rng.random(len(grades)) < share
    grades[move] = (grades[move] + rng.integers(1, 4, int(move.sum()))) % 4
    return qrels.assign(grade=grades)


def main() -> None:
    from labeler import io
    from labeler.pipeline.shift import _orders, tau_ap_interval
    from labeler.statistics.ranking import tau_ap

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/trec-dl-2019"))
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 30])
    ap.add_argument("--shifts", type=float, nargs="+", default=[0.1, 0.3])
    ap.add_argument("--bootstrap", type=int, default=1000)
    args = ap.parse_args()

    t0 = time.perf_counter()
    human = io.read_qrels(args.data / "2019qrels-pass.txt")
    runs = io.read_runs(sorted(str(p) for p in (args.data / "runs").glob("*.run")))
    systems = sorted(runs["system"].unique())
    queries = sorted(human["query_id"].unique())
    before = _per_query(human, runs, queries, systems)
    print(f"{len(queries)} queries, {len(systems)} runs, NDCG@{K}; {args.draws} draws per "
          f"size, {args.bootstrap} query resamples per interval")
    print(f"{'shift':>5}  {'n':>3}  {'truth τ_AP':>10}  {'coverage':>8}  {'mean width':>10}")
    for share in args.shifts:
        now = _per_query(_shifted(human, share, seed=1), runs, queries, systems)
        b_all, n_all = before, now  # a run lacking a query has NaN there (as in the job)

        def order(m: np.ndarray) -> list[str]:
            return [systems[i] for i in _orders(np.nanmean(m, axis=0), systems)]

        truth = tau_ap(order(n_all), order(b_all))
        assert truth is not None
        rng = np.random.default_rng(0)
        for n in args.sizes:
            covered, widths = 0, []
            for _ in range(args.draws):
                rows = rng.choice(len(b_all), size=n, replace=False)
                band = tau_ap_interval(b_all[rows], n_all[rows], systems,
                                       n_resamples=args.bootstrap,
                                       seed=int(rng.integers(2**31)))
                assert band is not None
                lo, hi = band
                covered += lo - 1e-12 <= truth <= hi + 1e-12
                widths.append(hi - lo)
            print(f"{share:>5.0%}  {n:>3}  {truth:>10.4f}  {covered / args.draws:>8.1%}  "
                  f"{np.mean(widths):>10.4f}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
