"""Start-up: every `labeler … --help` against a bare `python -c "import click, rich"`, and
`labeler score` on the bundled sample (also against a bare `python -c "import numpy,
pyarrow"`). Prints a Markdown table (the README's `### Start-up`).

    python benchmarks/bench_startup.py            # best of 15 runs each
    python benchmarks/bench_startup.py --runs 5

Each figure is the best wall time of N fresh processes (the least disturbed by other jobs on
a shared machine). `--importtime` adds the heaviest imports of `labeler --help` from
`python -X importtime`.
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
COMMANDS = ["", "label", "reconcile", "sample", "compare", "score", "run", "demo"]


def best(cmd: list[str], runs: int) -> float:
    """Best time of ``runs`` fresh processes (output discarded): wall time, or with ``--cpu``
    the process's CPU time (user + system; steadier on a machine shared with other jobs)."""
    times = []
    for _ in range(runs):
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        r1, t1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        times.append(cpu if CPU else t1 - t0)
    return min(times)


CPU = False


def extra_commands() -> list[str]:
    """Commands the CLI lists beyond the usual ones (new ones are measured too)."""
    out = subprocess.run([sys.executable, "-m", "labeler", "--help"], capture_output=True,
                         text=True, check=True).stdout
    listed = re.findall(r"^  ([a-z][a-z-]*)\s", out.split("Commands:")[-1], flags=re.M)
    return [c for c in listed if c not in COMMANDS]


def importtime(top: int = 8) -> list[tuple[str, float]]:
    """The ``top`` heaviest cumulative imports of ``labeler --help``, in ms."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "labeler", "--help"],
                          capture_output=True, text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((parts[2].rstrip(), int(parts[1]) / 1000))
    return sorted(rows, key=lambda r: -r[1])[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--importtime", action="store_true")
    ap.add_argument("--cpu", action="store_true", help="time CPU (user+sys), not wall")
    args = ap.parse_args()
    global CPU
    CPU = args.cpu
    exe = [sys.executable, "-m", "labeler"]
    bare = best([sys.executable, "-c", "import click, rich"], args.runs)
    what = "CPU" if CPU else "wall"
    print(f"| command | best {what} (s) | over bare click+rich (s) | bar | ok |")
    print("| --- | ---: | ---: | --- | --- |")
    print(f"| `python -c \"import click, rich\"` | {bare:.3f} | — | — | — |")
    for cmd in COMMANDS + extra_commands():
        t = best([*exe, *([cmd] if cmd else []), "--help"], args.runs)
        print(f"| `labeler {cmd + ' ' if cmd else ''}--help` | {t:.3f} | {t - bare:+.3f} "
              f"| ≤ +0.200 | {'yes' if t - bare <= 0.2 else 'NO'} |")
    runs = sorted(str(p) for p in (DATA / "runs").glob("*.run"))
    score = [*exe, "score", "--qrels", str(DATA / "human.qrels"),
             *[a for r in runs for a in ("--run", r)]]
    t = best(score, args.runs)
    print(f"| `labeler score` on the bundled sample ({len(runs)} runs) | {t:.3f} | — "
          f"| < 0.5 | {'yes' if t < 0.5 else 'NO'} |")
    base = best([sys.executable, "-c", "import numpy, pyarrow"], args.runs)
    print(f"| `python -c \"import numpy, pyarrow\"` | {base:.3f} | — | — | — |")
    print(f"| `labeler score` on the sample, over bare numpy + pyarrow | {t:.3f} | "
          f"{t - base:+.3f} | ≤ +0.100 | {'yes' if t - base <= 0.1 else 'NO'} |")
    if args.importtime:
        print("\nheaviest imports of `labeler --help` (cumulative ms):")
        for name, ms in importtime():
            print(f"- {name.strip()}: {ms:.1f}")


if __name__ == "__main__":
    main()
