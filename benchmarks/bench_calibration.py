"""Calibration on all 33 LLMJudge 2024 submissions: does it ever hurt on held-out labels?

For each submission and seed: a random 10% of the human test labels is the human sample the
calibration is fitted on (with its k-fold gate); the other 90% judge the result. Reported per
submission (means over seeds): Krippendorff's alpha (ordinal, krippendorff package) of the raw
grades on the 90%, and of the grades *as applied* by each method (calibrated only where the
gate found a held-out gain, else raw); for isotonic also the alpha it would give without the
gate. Then, per method, how often it was applied and how often the applied result was worse.

Usage::

    python benchmarks/bench_calibration.py [--data /work/shared/data/llmjudge] [--seeds 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

GRADE_MAP = {"5": 3, "10": 3}
KEYS = ["query_id", "chunk_id"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/llmjudge"))
    parser.add_argument("--seeds", type=int, default=3, help="random 10%% samples per set")
    parser.add_argument("--share", type=float, default=0.1, help="size of the human sample")
    args = parser.parse_args()

    import krippendorff
    import numpy as np

    from labeler import fmt, io
    from labeler.reconciliation.calibrate import METHODS, calibrate

    def alpha(h: np.ndarray, g: np.ndarray) -> float:
        return float(krippendorff.alpha(reliability_data=[h, g], value_domain=[0, 1, 2, 3],
                                        level_of_measurement="ordinal"))

    human = io.read_qrels(args.data / "test-human.qrels")
    paths = sorted((args.data / "submissions").glob("*.qrels"))
    start = time.perf_counter()
    tally = {m: {"applied": 0, "worse": 0, "gain": 0.0, "runs": 0} for m in METHODS}
    rows = []
    for path in paths:
        llm = io.read_labels(path, grade_map=GRADE_MAP)
        sums = {"raw": 0.0, **{m: 0.0 for m in METHODS}, "isotonic, no gate": 0.0}
        for seed in range(args.seeds):
            sample = human.sample(frac=args.share, random_state=seed)
            rest = human.drop(sample.index)
            raw_alpha = None
            for method in METHODS:
                cal = calibrate(llm=llm, human=sample, folds=5, seed=0,
                                method=method)  # type: ignore[arg-type]
                both = rest.merge(cal.apply(llm), on=KEYS, suffixes=("_h", ""))
                h = both["grade_h"].to_numpy(int)
                if raw_alpha is None:
                    raw_alpha = alpha(h, both["grade"].to_numpy(int))
                    sums["raw"] += raw_alpha
                got = alpha(h, both["calibrated_grade"].to_numpy(int))
                sums[method] += got
                t = tally[method]
                t["runs"] += 1
                t["applied"] += cal.applied
                t["worse"] += got < raw_alpha - 1e-12
                t["gain"] += got - raw_alpha
                if method == "isotonic":
                    forced = cal.model_copy(update={"applied": True}).apply(llm)
                    f = rest.merge(forced, on=KEYS, suffixes=("_h", ""))
                    sums["isotonic, no gate"] += alpha(f["grade_h"].to_numpy(int),
                                                       f["calibrated_grade"].to_numpy(int))
        rows.append((path.stem, {k: v / args.seeds for k, v in sums.items()}))
    wall = time.perf_counter() - start

    cols = ["raw", *METHODS, "isotonic, no gate"]
    print(f"## Held-out Krippendorff's alpha on the other {fmt.share(1 - args.share)} "
          f"({len(paths)} submissions, {args.seeds} random {fmt.share(args.share)} human samples "
          f"each; {fmt.num(wall, 0)} s)\n")
    print("| submission | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for name, means in rows:
        print(f"| {name} | " + " | ".join(fmt.num(means[c]) for c in cols) + " |")
    print("\n| method | applied | worse than raw when applied | mean change vs raw |")
    print("|---|---|---|---|")
    for method, t in tally.items():
        print(f"| {method} | {t['applied']} of {t['runs']} | {t['worse']} | "
              f"{fmt.num(t['gain'] / t['runs'], signed=True)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
