"""Do the agreement intervals cover the truth? Pair vs query bootstrap, on real LLM labels.

Population: the LLMJudge 2024 test set — 25 queries, 4,423 human-judged pairs, and the 33
real LLM label sets submitted for them. For each label set, the statistic on all 25 queries is
the truth. A user with human labels for only n queries (a random draw of n of the 25, without
replacement) gets a 95% bootstrap interval from those n queries, resampling pairs
(``--bootstrap-unit pair``, percentile interval) or whole queries (the default): the
percentile interval labeler gave before, and the studentized one it gives now (estimate ±
t(n − 1)·sd·sqrt(n/(n − 1)), clipped). Printed: per n and statistic, the share of draws whose
interval covers the truth (± its Monte-Carlo error), and the mean width.

Then calibration held out by query: per label set and method, fit on a random 12 of the 25
queries (its gate judged by 5-fold cross-validation whose folds are whole queries, or, for
comparison, pairs), apply it to the other 13, and count how often the applied calibration
lowers Krippendorff's alpha there.

Usage::

    python benchmarks/bench_agreement_coverage.py [--data /work/shared/data/llmjudge]
        [--draws 30] [--sizes 10 15 20] [--bootstrap 1000] [--splits 3]
        [--parts llmjudge dl19 calibration]
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path
from typing import Any

GRADE_MAP = {"5": 3, "10": 3}   # a few submissions grade on a wider scale
KEYS = ["query_id", "chunk_id"]
PARTS = ("llmjudge", "dl19", "calibration")
STATS = {"cohen_kappa_quadratic": "kappa (quadratic)",
         "krippendorff_alpha_ordinal": "alpha (ordinal)",
         "exact_agreement": "exact agreement"}


def _label_sets(data: Path) -> tuple[Any, dict[str, Any]]:
    from labeler import io

    human = io.read_qrels(data / "test-human.qrels")
    sets = {}
    for path in sorted((data / "submissions").glob("*.qrels")):
        llm = io.read_labels(path, grade_map=GRADE_MAP)
        both = human.merge(llm[[*KEYS, "grade"]], on=KEYS, suffixes=("_h", "_l"))
        sets[path.stem] = both.dropna(subset=["grade_l"]).astype({"grade_l": int,
                                                                  "grade_h": int})
    return human, sets


def _simulated_sets(qrels: Path, judges: int) -> dict[str, Any]:
    """TREC DL 2019 human labels with simulated judges whose errors cluster by query: grade =
    human + a per-query lean (normal, sd 0.6) + per-pair noise (normal, sd 0.8), rounded and
    clipped to 0-3."""
    import numpy as np

    from labeler import io

    human = io.read_qrels(qrels)
    codes = np.unique(human["query_id"].to_numpy(), return_inverse=True)[1]
    sets = {}
    for j in range(judges):
        rng = np.random.default_rng(100 + j)
        lean = rng.normal(0, 0.6, codes.max() + 1)[codes]
        grade = np.clip(np.rint(human["grade"] + lean + rng.normal(0, 0.8, len(human))), 0, 3)
        sets[f"sim{j}"] = human.rename(columns={"grade": "grade_h"}).assign(
            grade_l=grade.astype(int), grade_h=human["grade"].astype(int))
    return sets


def coverage(sets: dict[str, Any], sizes: list[int], draws: int, n_boot: int,
             population: str) -> None:
    """Print coverage and mean width of pair- and query-unit intervals against the full set."""
    import numpy as np

    from labeler.statistics import bootstrap as boot

    rng = np.random.default_rng(2024)
    units = ("pair", "query", "studentized")
    hits: dict[tuple[int, str, str], list[bool]] = {
        (n, u, s): [] for n in sizes for u in units for s in STATS}
    widths: dict[tuple[int, str, str], list[float]] = {key: [] for key in hits}
    start = time.perf_counter()
    for both in sets.values():
        codes = np.unique(both["query_id"].to_numpy(), return_inverse=True)[1]
        h, g = both["grade_h"].to_numpy(), both["grade_l"].to_numpy()
        per_query = boot.query_tables(h, g, codes)
        truth = {k: float(v) for k, v in boot.statistics(per_query.sum(axis=0)).items()}
        for n in sizes:
            for _ in range(draws):
                pick = rng.choice(len(per_query), n, replace=False)
                tables = per_query[pick]
                seed = int(rng.integers(0, 2**31))
                counts = boot.query_resample_counts(n, n_boot, seed)
                by_unit = {"query": np.einsum("bq,qij->bij", counts, tables)}
                mask = np.isin(codes, pick)
                by_unit["pair"] = boot.pair_resample_tables(h[mask], g[mask], n_boot, seed)
                whole = boot.statistics(tables.sum(axis=0))
                for unit, reps in by_unit.items():
                    values = boot.statistics(reps)
                    for s in STATS:
                        cis = {unit: boot.percentile_interval(values[s])}
                        if unit == "query":
                            cis["studentized"] = boot.studentized_interval(
                                float(whole[s]), values[s], n, bounds=boot.RANGES[s])
                        for name, ci in cis.items():
                            if not np.isfinite(truth[s]):
                                continue
                            if ci is None:  # no interval: the statistic's whole range
                                ci = list(boot.RANGES[s])
                            hits[(n, name, s)].append(ci[0] <= truth[s] <= ci[1])
                            widths[(n, name, s)].append(ci[1] - ci[0])
    took = time.perf_counter() - start
    print(f"Coverage of 95% intervals, {population}: {len(sets)} label sets x {draws} random "
          f"query samples per size, {n_boot} resamples ({took:.0f} s)\n")
    print("| queries | statistic | pair unit, percentile | query unit, percentile (before) "
          "| query unit, studentized (now) |")
    print("|---:|---|---:|---:|---:|")

    def cell(key: tuple[int, str, str]) -> str:
        h = np.asarray(hits[key], dtype=float)
        err = np.sqrt(h.mean() * (1 - h.mean()) / max(1, len(h)))
        return f"{h.mean():.1%} ± {err:.1%} ({np.mean(widths[key]):.3f})"

    for n in sizes:
        for s, label in STATS.items():
            print(f"| {n} | {label} | {cell((n, 'pair', s))} | {cell((n, 'query', s))} | "
                  f"{cell((n, 'studentized', s))} |")
    print()


def calibration_check(human: Any, data: Path, splits: int) -> None:
    """How often an applied calibration lowers alpha on 13 held-out queries."""
    import krippendorff
    import numpy as np
    from sklearn.model_selection import KFold

    from labeler import io
    cal_mod = importlib.import_module("labeler.reconciliation.calibrate")

    def alpha(h: np.ndarray, g: np.ndarray) -> float:
        return float(krippendorff.alpha(reliability_data=[h, g], value_domain=[0, 1, 2, 3],
                                        level_of_measurement="ordinal"))

    def pair_folds(groups: np.ndarray, folds: int, seed: int) -> list[Any]:
        return list(KFold(n_splits=folds, shuffle=True, random_state=seed).split(groups))

    by_query = cal_mod.query_folds
    queries = np.array(sorted(human["query_id"].unique()))
    rng = np.random.default_rng(7)
    tally = {fold: {"fits": 0, "applied": 0, "lowered": 0} for fold in ("query", "pair")}
    start = time.perf_counter()
    paths = sorted((data / "submissions").glob("*.qrels"))
    for split in range(splits):
        fit_q = set(rng.choice(queries, 12, replace=False))
        fit = human.loc[human["query_id"].isin(fit_q)]
        test = human.loc[~human["query_id"].isin(fit_q)]
        for path in paths:
            llm = io.read_labels(path, grade_map=GRADE_MAP)
            for method in cal_mod.METHODS:
                for fold, splitter in (("query", by_query), ("pair", pair_folds)):
                    cal_mod.query_folds = splitter  # type: ignore[assignment]
                    try:
                        cal = cal_mod.calibrate(llm=llm, human=fit, folds=5, seed=split,
                                                method=method)  # type: ignore[arg-type]
                    finally:
                        cal_mod.query_folds = by_query
                    t = tally[fold]
                    t["fits"] += 1
                    if not cal.applied:
                        continue
                    t["applied"] += 1
                    both = test.merge(cal.apply(llm), on=KEYS, suffixes=("_h", ""))
                    both = both.dropna(subset=["calibrated_grade"])
                    h = both["grade_h"].to_numpy(int)
                    t["lowered"] += alpha(h, both["calibrated_grade"].to_numpy(int)) < alpha(
                        h, both["grade"].to_numpy(int))
    took = time.perf_counter() - start
    print(f"Calibration fitted on 12 random queries, applied to the other 13 ({splits} "
          f"split(s) x {len(paths)} label sets x {len(cal_mod.METHODS)} methods, {took:.0f} s)\n")
    print("| gate's cross-validation folds | fits | applied | applied and lowered alpha |")
    print("|---|---:|---:|---:|")
    for fold, t in tally.items():
        words = "whole queries (GroupKFold)" if fold == "query" else "pairs (KFold, before)"
        print(f"| {words} | {t['fits']} | {t['applied']} | {t['lowered']} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/llmjudge"))
    parser.add_argument("--draws", type=int, default=30, help="query samples per size and set")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 15, 20])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--splits", type=int, default=3, help="12/13 query splits")
    parser.add_argument("--dl19", type=Path,
                        default=Path("/work/shared/data/trec-dl-2019/2019qrels-pass.txt"))
    parser.add_argument("--judges", type=int, default=10, help="simulated DL 2019 judges")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    human, sets = _label_sets(args.data)
    if "llmjudge" in args.parts:
        coverage(sets, args.sizes, args.draws, args.bootstrap,
                 "LLMJudge 2024 (25 queries, the 33 real LLM label sets)")
    if "dl19" in args.parts:
        coverage(_simulated_sets(args.dl19, args.judges), args.sizes, args.draws,
                 args.bootstrap, "TREC DL 2019 (43 queries, simulated judges whose errors "
                 "cluster by query)")
    if "calibration" in args.parts:
        calibration_check(human, args.data, args.splits)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
