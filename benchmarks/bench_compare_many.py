"""How long does `labeler compare` take over many runs, and how big are its outputs? (bars:
1,000 runs of 20 queries < 2 min; 2,000 runs of 20 queries: report < 5 MB, --json < 50 MB,
peak memory < 2 GiB)

Writes synthetic TREC files into a temporary directory: qrels for ``--queries`` queries (human:
40 judged passages per query, grades 0–3; LLM: the same pairs, each grade moved by one step with
probability 0.3), and ``--runs`` runs of the top 100 passages per query (each run a seeded
shuffle of the judged passages plus unjudged ones). Then times the whole command
``labeler compare --human --llm --run ... --json`` (start-up, reading, scoring, tests, JSON),
with the default pairs (best above 50 runs) and with ``--pair-set all`` when asked; with
``--report`` the same command writing ``--report DIR`` too. Each command's peak memory (the
child's maximum resident set) and the size of what it wrote are printed with its time.

Usage::

    python benchmarks/bench_compare_many.py                 # 1,000 runs of 20 queries
    python benchmarks/bench_compare_many.py --runs 300 --pair-set all
    python benchmarks/bench_compare_many.py --runs 2000 --report
"""

from __future__ import annotations

import argparse
import os
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


def measured(cmd: list[str]) -> tuple[float, float, bytes]:
    """Wall seconds, peak memory (MiB) and stdout of ``cmd``."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"exit {proc.returncode}: {' '.join(cmd[:8])} ...")
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, out.read()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--pair-set", "--pairs", dest="pairs", default=None,
                    choices=["all", "best", "adjacent"])
    ap.add_argument("--report", action="store_true", help="time --report DIR too")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run_args = write_data(root, args.runs, args.queries)
        cmd = [sys.executable, "-m", "labeler", "compare", "--human", str(root / "human.qrels"),
               "--llm", str(root / "llm.qrels")]
        if args.pairs:
            cmd += ["--pair-set", args.pairs]
        for r in run_args:
            cmd += ["--run", r]
        wall, peak, out = measured([*cmd, "--json"])
        rows.append(("--json", wall, peak, len(out) / 1e6))
        if args.report:
            wall, peak, _ = measured([*cmd, "--report", str(root / "report")])
            for path in sorted((root / "report").glob("report.*")):
                rows.append((f"--report: {path.name}", wall, peak, path.stat().st_size / 1e6))
    print("| runs | queries | pairs | output | wall (s) | peak memory (MiB) | size (MB) |"
          "\n| ---: | ---: | --- | --- | ---: | ---: | ---: |")
    for what, wall, peak, mb in rows:
        print(f"| {args.runs:,} | {args.queries} | {args.pairs or 'default'} | {what} | "
              f"{wall:.1f} | {peak:,.0f} | {mb:.1f} |")


if __name__ == "__main__":
    main()
