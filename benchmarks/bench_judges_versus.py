"""Is the best judge really better? How often the paired intervals of ``labeler judges`` cover
the truth, and how often a judge that is not worse is called worse.

Population: the LLMJudge 2024 test set — 25 queries, 4,423 human-judged pairs, the 33 real LLM
label sets submitted for them (grades 5 and 10 mapped to 3). A user with human labels for n of
the 25 queries (a random draw without replacement) runs ``labeler judges`` on them: the judges
are ranked by alpha on those n queries, the best is compared with each other judge (paired
query bootstrap, studentized; Holm over the 32 comparisons). The truth of a comparison is the
same difference of alpha (or quadratic kappa) on all 25 queries. Printed per n: the share of
the intervals that cover the truth, their mean width, and the share of draws in which at
least one judge is called worse although, on all 25 queries, it is not worse than the sample's
best (the family-wise error Holm bounds by 5%).

Usage::

    python benchmarks/bench_judges_versus.py [--data /work/shared/data/llmjudge]
        [--draws 100] [--sizes 10 15 20] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

GRADE_MAP = {"5": 3, "10": 3}
KEYS = ["query_id", "chunk_id"]


def _grades(data: Path) -> tuple[pd.DataFrame, list[str]]:
    """One row per pair every submission graded: query_id, human, one column per judge."""
    from labeler import io

    table = io.read_qrels(data / "test-human.qrels").rename(columns={"grade": "human"})
    names = []
    for path in sorted((data / "submissions").glob("*.qrels")):
        llm = io.read_labels(path, grade_map=GRADE_MAP)
        llm = llm.loc[llm["status"] == "ok", [*KEYS, "grade"]].rename(
            columns={"grade": path.stem})
        table = table.merge(llm, on=KEYS)
        names.append(path.stem)
    return table.astype({n: "int64" for n in ["human", *names]}), names


def _statistic(table: pd.DataFrame, name: str, which: str) -> float:
    from labeler.statistics import bootstrap as boot

    t = boot.table_of(table["human"].to_numpy(), table[name].to_numpy())
    return float(boot.alpha_ordinal(t) if which == "alpha" else boot.kappa(t, "quadratic"))


def run(data: Path, draws: int, sizes: list[int], bootstrap: int) -> list[dict[str, Any]]:
    from labeler.reconciliation.versus_best import versus_best

    table, names = _grades(data)
    queries = np.array(sorted(table["query_id"].unique()))
    truth = {w: {n: _statistic(table, n, w) for n in names} for w in ("alpha", "kappa")}
    rng = np.random.default_rng(20241)
    rows = []
    for n in sizes:
        cover: dict[str, list[bool]] = {"alpha": [], "kappa": []}
        width: dict[str, list[float]] = {"alpha": [], "kappa": []}
        family_errors = 0
        for d in range(draws):
            sample = table.loc[table["query_id"].isin(rng.choice(queries, n, replace=False))]
            order = sorted(names, key=lambda j: (-_statistic(sample, j, "alpha"), j))
            out = versus_best(sample, order, bootstrap=bootstrap, seed=d)
            best = order[0]
            wrong = False
            for entry in out:
                other = entry["judge"]
                for which, block in (("alpha", entry), ("kappa", entry["kappa_quadratic"])):
                    gap = truth[which][best] - truth[which][other]
                    lo, hi = block["ci"]
                    cover[which].append(lo <= gap <= hi)
                    width[which].append(hi - lo)
                if entry["worse"] and truth["alpha"][best] - truth["alpha"][other] <= 0:
                    wrong = True
            family_errors += wrong
        rows.append({"n": n, "draws": draws,
                     "alpha_coverage": float(np.mean(cover["alpha"])),
                     "alpha_width": float(np.mean(width["alpha"])),
                     "kappa_coverage": float(np.mean(cover["kappa"])),
                     "kappa_width": float(np.mean(width["kappa"])),
                     "family_error": family_errors / draws})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/llmjudge"))
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 15, 20])
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = run(args.data, args.draws, args.sizes, args.bootstrap)
    print(f"{'n':>3} {'draws':>6} {'alpha: covers':>14} {'width':>7} {'kappa q: covers':>16} "
          f"{'width':>7} {'a judge not worse called worse':>31}")
    for r in rows:
        print(f"{r['n']:>3} {r['draws']:>6} {r['alpha_coverage']:>14.1%} {r['alpha_width']:>7.3f}"
              f" {r['kappa_coverage']:>16.1%} {r['kappa_width']:>7.3f}"
              f" {r['family_error']:>31.1%}")
    print(f"({time.perf_counter() - start:.0f} s; {args.bootstrap} resamples per interval)")


if __name__ == "__main__":
    main()
