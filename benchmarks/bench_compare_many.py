"""How long does `labeler compare` take over many runs? (bar: 1,000 runs of 20 queries < 2 min)

Writes synthetic TREC files into a temporary directory: qrels for ``--queries`` queries (human:
40 judged passages per query, grades 0–3; LLM: the same pairs, each grade moved by one step with
probability 0.3), and ``--runs`` runs of the top 100 passages per query (each run a seeded
shuffle of the judged passages plus unjudged ones). Then times the whole command
``labeler compare --human --llm --run ... --json`` (start-up, reading, scoring, tests, JSON),
with the default pairs (best above 50 runs) and with ``--pair-set all`` when asked.

Usage::

    python benchmarks/bench_compare_many.py                 # 1,000 runs of 20 queries
    python benchmarks/bench_compare_many.py --runs 300 --pair-set all
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write_data(root: Path, n_runs: int, n_queries: int, seed: int = 0) -> list[str]:
    """The qrels and run files; returns the ``--run`` arguments."""
    rng = np.random.default_rng(seed)
    judged = 40
    human = rng.integers(0, 4, (n_queries, judged))
    llm = np.clip(human + rng.choice([-1, 0, 1], human.shape, p=[0.15, 0.7, 0.15]), 0, 3)
    for name, grades in (("human", human), ("llm", llm)):
        lines = [f"q{q} 0 d{q}_{j} {grades[q, j]}" for q in range(n_queries)
                 for j in range(judged)]
        (root / f"{name}.qrels").write_text("\n".join(lines) + "\n")
    runs = root / "runs"
    runs.mkdir()
    args = []
    for r in range(n_runs):
        lines = []
        skill = rng.uniform(0, 2)
        for q in range(n_queries):
            score = human[q] * skill + rng.normal(0, 1, judged)
            docs = [f"d{q}_{j}" for j in np.argsort(-score)] + [f"u{q}_{j}" for j in range(60)]
            lines += [f"q{q} Q0 {d} {i + 1} {100 - i} r{r}" for i, d in enumerate(docs)]
        path = runs / f"r{r}.run"
        path.write_text("\n".join(lines) + "\n")
        args.append(str(path))
    return args


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--pair-set", "--pairs", dest="pairs", default=None,
                    choices=["all", "best", "adjacent"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run_args = write_data(root, args.runs, args.queries)
        cmd = [sys.executable, "-m", "labeler", "compare", "--human", str(root / "human.qrels"),
               "--llm", str(root / "llm.qrels"), "--json"]
        if args.pairs:
            cmd += ["--pair-set", args.pairs]
        for r in run_args:
            cmd += ["--run", r]
        start = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
    print(f"| runs | queries | pairs | wall (s) | JSON (MB) |\n| ---: | ---: | --- | ---: | ---: |"
          f"\n| {args.runs:,} | {args.queries} | {args.pairs or 'default'} | {wall:.1f} | "
          f"{len(out.stdout) / 1e6:.1f} |")


if __name__ == "__main__":
    main()
