"""`labeler label --engine ray` against `--engine local` on this machine: pairs per second and
peak memory of the whole command, on the same pairs against the same fake server.

    python benchmarks/bench_ray.py                    # 10,000 pairs (needs labeler[ray])
    python benchmarks/bench_ray.py --n 2000 --rounds 1

Each engine labels the pairs into a fresh cache (so every pair is asked) through the CLI in a
fresh process; peak memory is the largest sum of the resident memory of the command and every
process under it (for Ray: its GCS, raylet, agents and actors), sampled every 0.1 s. The fake
server runs in its own process (`FakeLLMServer(in_process=False)`). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_label import make_pairs  # benchmarks/ is not a package


def peak_rss(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Run ``cmd``; (wall seconds, peak MB of its process tree, exit status)."""
    import psutil

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    root, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        total = 0
        with contextlib.suppress(psutil.Error):
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
        peak = max(peak, total)
        time.sleep(0.1)
    wall = time.perf_counter() - start
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        print(err, file=sys.stderr)
    return wall, peak / 2**20, proc.returncode


def measure(n: int, rounds: int, concurrency: int, latency: float, actors: int
            ) -> dict[str, Any]:
    from labeler.testing import FakeLLMServer

    pairs = make_pairs(n)
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key"}
    env.pop("RAY_ADDRESS", None)
    got: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            FakeLLMServer(latency=latency, in_process=False, record=False) as srv:
        src = Path(tmp) / "pairs.jsonl"
        pairs.to_json(src, orient="records", lines=True)
        for r in range(rounds):  # interleaved: the machine is shared
            for engine in ("local", "ray"):
                cmd = [sys.executable, "-m", "labeler", "label", "--pairs", str(src),
                       "--model", "fake-judge", "--base-url", srv.base_url,
                       "--concurrency", str(concurrency), "--engine", engine,
                       "--cache-dir", str(Path(tmp) / f"cache-{engine}-{r}"),
                       "--out", str(Path(tmp) / f"labels-{engine}-{r}.jsonl")]
                if engine == "ray":
                    cmd += ["--ray-actors", str(actors)]
                calls = srv.calls
                wall, mb, code = peak_rss(cmd, env)
                if code != 0:
                    raise SystemExit(f"{engine}: exit {code}")
                if srv.calls - calls != n:
                    raise SystemExit(f"{engine}: {srv.calls - calls} requests for {n} pairs")
                g = got.setdefault(engine, {"wall": 0.0, "mb": 0.0})
                g["wall"] += wall
                g["mb"] = max(g["mb"], mb)
    return {e: {"pps": n * rounds / g["wall"], "wall": g["wall"] / rounds, "mb": g["mb"]}
            for e, g in got.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.05,
                        help="seconds the fake server takes per answer")
    parser.add_argument("--actors", type=int, default=2)
    args = parser.parse_args()
    res = measure(args.n, args.rounds, args.concurrency, args.latency, args.actors)
    loc, ray = res["local"], res["ray"]
    print(f"`labeler label` on {args.n:,} pairs, --concurrency {args.concurrency}, fake server "
          f"answering in {args.latency:g} s, {os.cpu_count()} cores, {args.rounds} round(s):\n")
    print("| engine | wall (s) | pairs/s | peak RSS, all processes (MB) |")
    print("|---|---:|---:|---:|")
    print(f"| local | {loc['wall']:.1f} | {loc['pps']:.0f} | {loc['mb']:.0f} |")
    print(f"| ray ({args.actors} actors, local Ray) | {ray['wall']:.1f} | {ray['pps']:.0f} | "
          f"{ray['mb']:.0f} |")
    print(f"\nray / local: {ray['pps'] / loc['pps']:.2f}x the throughput, "
          f"{ray['mb'] / loc['mb']:.1f}x the memory")


if __name__ == "__main__":
    main()
