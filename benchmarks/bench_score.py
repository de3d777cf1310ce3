"""Benchmark the NDCG@10 scorer against pytrec_eval and ranx (SPEC §7, issue 2).

Generates seeded TREC-DL-like data (queries × 100 run rows, MS MARCO-style numeric passage
ids, ~30 judgements per query, grades 0–3, float32-distinct scores, every query with a
relevant chunk so all means agree), then times, each in its own subprocess so peak RSS is
that one job's:

- labeler library call: ``scoring.evaluate(qrels_df, run_df, k=10)`` on in-memory DataFrames
  (as ``pd.read_parquet`` gives them), rows in run-file order; and with rows shuffled;
- ``labeler score --json`` as a command: files in, JSON out (wall time of the process);
- the same job as a pytrec_eval script: ``parse_qrel`` + ``parse_run`` + ``evaluate`` + JSON
  out (wall time of the process, interpreter start-up included for both);
- pytrec_eval: ``evaluate`` on prebuilt dicts (evaluator built beforehand, not timed);
- ranx: ``evaluate(Qrels, Run, "ndcg@10")`` warm (the second call; the first compiles);
- a measure set (nDCG@10, P@10, R@100, RR, AP): ``scoring.evaluate(..., measures=[...])``
  against pytrec_eval's ``evaluate`` with the same measures (``ndcg_cut.10``, ``P.10``,
  ``recall.100``, ``recip_rank``, ``map``) on prebuilt dicts, every value compared.

Every tool's per-query NDCG@10 is compared with labeler's (max |diff| must be ≤ 1e-9).
Prints a Markdown table. Usage::

    python benchmarks/bench_score.py                 # 1M and 10M rows
    python benchmarks/bench_score.py --quick         # 1M only, no ranx
    python benchmarks/bench_score.py --sizes 1M --no-ranx
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEPTH = 100
JUDGED = 30


# --------------------------------------------------------------------------- data

def generate(n_rows: int, out: Path, seed: int = 2019) -> Path:
    """Write qrels/run as TREC files and Parquet frames under ``out/<size>/``."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pcsv

    n_q = n_rows // DEPTH
    folder = out / _label(n_rows)
    if (folder / "done").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    qids = np.char.add("q", (1_000_000 + np.arange(n_q)).astype(str)).astype(object)
    # distinct passage ids per query: a random start and a random stride in an 8.8M corpus
    start = rng.integers(0, 8_841_823, n_q)[:, None]
    stride = rng.integers(1, 997, n_q)[:, None]
    docs = (start + stride * np.arange(DEPTH + JUDGED)) % 8_841_823
    as_ids = _chunk_ids if os.environ.get("BENCH_IDS") == "chunk" else (lambda a: a.astype(str))
    scores = np.sort(rng.random((n_q, DEPTH), dtype=np.float32), axis=1)[:, ::-1]
    run = pd.DataFrame({
        "query_id": pd.array(np.repeat(qids, DEPTH), dtype="str"),
        "chunk_id": pd.array(as_ids(docs[:, :DEPTH].ravel()), dtype="str"),
        "score": scores.ravel().astype(np.float64),
        "system": "bench",
    })
    # judged: half from the top 40 of the run (pooled), half never retrieved
    pooled = rng.permuted(np.tile(np.arange(40), (n_q, 1)), axis=1)[:, :JUDGED // 2]
    judged_docs = np.concatenate([np.take_along_axis(docs, pooled, axis=1),
                                  docs[:, DEPTH:DEPTH + JUDGED // 2]], axis=1)
    grades = rng.choice(4, size=judged_docs.shape, p=[0.56, 0.17, 0.19, 0.08])
    grades[:, 0] = np.maximum(grades[:, 0], 1)            # every query has a relevant chunk
    qrels = pd.DataFrame({
        "query_id": pd.array(np.repeat(qids, JUDGED), dtype="str"),
        "chunk_id": pd.array(as_ids(judged_docs.ravel()), dtype="str"),
        "grade": grades.ravel().astype(np.int64),
    })
    run.to_parquet(folder / "run.parquet", index=False)
    run.sample(frac=1.0, random_state=0).to_parquet(folder / "run-shuffled.parquet", index=False)
    qrels.to_parquet(folder / "qrels.parquet", index=False)
    opts = pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    rank = np.tile(np.arange(1, DEPTH + 1), n_q)
    pcsv.write_csv(pa.table({"q": run["query_id"], "q0": pa.array(["Q0"] * len(run)),
                             "d": run["chunk_id"], "rank": rank,
                             "s": [repr(x) for x in run["score"].tolist()],
                             "tag": run["system"]}), folder / "run.run", opts)
    pcsv.write_csv(pa.table({"q": qrels["query_id"], "z": np.zeros(len(qrels), np.int64),
                             "d": qrels["chunk_id"], "g": qrels["grade"]}),
                   folder / "qrels.qrels", opts)
    (folder / "done").write_text("ok")
    return folder


def _chunk_ids(docs: np.ndarray) -> np.ndarray:
    """RAG chunk ids of 7 to 16 bytes (``doc12_c10``): either side of the 8-byte word."""
    return np.char.add(np.char.add("doc", (docs // 40).astype(str)),
                       np.char.add("_c", (docs % 40).astype(str)))


def _label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("KM")) * mult)


# --------------------------------------------------------------------------- children

MEASURES = ["nDCG@10", "P@10", "R@100", "RR", "AP"]
TREC_MEASURES = {"nDCG@10": "ndcg_cut_10", "P@10": "P_10", "R@100": "recall_100",
                 "RR": "recip_rank", "AP": "map"}

PYTREC_MEASURES_SCRIPT = """
import json, sys, pytrec_eval
with open(sys.argv[1]) as fq, open(sys.argv[2]) as fr:
    qrels, run = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
res = pytrec_eval.RelevanceEvaluator(
    qrels, {"ndcg_cut.10", "P.10", "recall.100", "recip_rank", "map"}).evaluate(run)
names = {"nDCG@10": "ndcg_cut_10", "P@10": "P_10", "R@100": "recall_100", "RR": "recip_rank",
         "AP": "map"}
print(json.dumps({f"{q}|{m}": v[t] for q, v in res.items() for m, t in names.items()}))
"""

PYTREC_SCRIPT = """
import json, sys, pytrec_eval
with open(sys.argv[1]) as fq, open(sys.argv[2]) as fr:
    qrels, run = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
print(json.dumps({q: v["ndcg_cut_10"] for q, v in res.items()}))
"""


def _best(fn, repeat: int) -> tuple[float, float, object]:
    """(first call, best of ``repeat`` calls) in seconds, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times[0], min(times), result


def _child(task: str, folder: Path, repeat: int) -> dict:
    """One measurement, run in a fresh process: first and best wall time, per-query values."""
    if task in ("labeler", "labeler-shuffled"):
        import pandas as pd

        from labeler.scoring import results as scoring
        qrels = pd.read_parquet(folder / "qrels.parquet")
        run = pd.read_parquet(folder / ("run-shuffled.parquet" if task == "labeler-shuffled"
                                        else "run.parquet"))
        first, best, res = _best(lambda: scoring.evaluate(qrels, run, k=10), repeat)
        pq = res.per_query
        return {"first": first, "wall": best, "values": dict(zip(pq["query_id"], pq["ndcg"]))}
    if task == "labeler-measures":
        import pandas as pd

        from labeler.scoring import results as scoring
        qrels = pd.read_parquet(folder / "qrels.parquet")
        run = pd.read_parquet(folder / "run.parquet")
        first, best, res = _best(lambda: scoring.evaluate(qrels, run, k=10, measures=MEASURES),
                                 repeat)
        v = res.values[res.values["measure"].isin(MEASURES)]
        keys = (v["query_id"] + "|" + v["measure"]).tolist()
        return {"first": first, "wall": best, "values": dict(zip(keys, v["value"].tolist()))}
    if task in ("labeler-cli-measures", "pytrec-script-measures"):
        files = [str(folder / "qrels.qrels"), str(folder / "run.run")]
        cmd = (["labeler", "score", "--qrels", files[0], "--run", files[1], "--json",
                *(x for m in MEASURES for x in ("--measure", m))]
               if task == "labeler-cli-measures" else
               [sys.executable, "-c", PYTREC_MEASURES_SCRIPT, *files])
        first, best, out = _best(lambda: subprocess.run(cmd, check=True, capture_output=True,
                                                        text=True).stdout, repeat)
        payload = json.loads(out)
        if task == "labeler-cli-measures":
            runs = payload["runs"]["bench"]
            payload = {f"{q}|{m}": v for m in MEASURES
                       for q, v in runs[m]["per_query"].items()}
        return {"first": first, "wall": best, "values": payload}
    if task in ("labeler-cli", "pytrec-script"):
        cmd = (["labeler", "score", "--qrels", str(folder / "qrels.qrels"), "--run",
                str(folder / "run.run"), "--json"] if task == "labeler-cli" else
               [sys.executable, "-c", PYTREC_SCRIPT, str(folder / "qrels.qrels"),
                str(folder / "run.run")])
        first, best, out = _best(lambda: subprocess.run(cmd, check=True, capture_output=True,
                                                        text=True).stdout, repeat)
        payload = json.loads(out)
        if task == "labeler-cli":
            payload = payload["runs"]["bench"]["ndcg@10"]["per_query"]
        return {"first": first, "wall": best, "values": payload}
    import pytrec_eval
    with open(folder / "qrels.qrels") as fq, open(folder / "run.run") as fr:
        qrels_d, run_d = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
    if task == "pytrec-dicts":
        evaluator = pytrec_eval.RelevanceEvaluator(qrels_d, {"ndcg_cut.10"})
        first, best, res = _best(lambda: evaluator.evaluate(run_d), repeat)
        return {"first": first, "wall": best,
                "values": {q: v["ndcg_cut_10"] for q, v in res.items()}}
    if task == "pytrec-measures":
        evaluator = pytrec_eval.RelevanceEvaluator(
            qrels_d, {"ndcg_cut.10", "P.10", "recall.100", "recip_rank", "map"})
        first, best, res = _best(lambda: evaluator.evaluate(run_d), repeat)
        return {"first": first, "wall": best,
                "values": {f"{q}|{m}": v[t] for q, v in res.items()
                           for m, t in TREC_MEASURES.items()}}
    if task == "ranx":
        import warnings

        from ranx import Qrels, Run, evaluate
        warnings.filterwarnings("ignore")
        t0 = time.perf_counter()
        rq, rr = Qrels(qrels_d), Run(run_d)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        evaluate(rq, rr, "ndcg@10")                       # compiles (numba)
        first = time.perf_counter() - t0
        print(f"# ranx Qrels + Run from dicts: {build:.1f} s", file=sys.stderr)
        _, best, _ = _best(lambda: evaluate(rq, rr, "ndcg@10", save_results_in_run=True),
                           repeat)
        return {"first": first, "wall": best,
                "values": {q: float(v) for q, v in rr.scores["ndcg@10"].items()}}
    raise SystemExit(f"unknown task {task}")


def measure(task: str, folder: Path, work: Path, repeat: int) -> dict:
    """Run ``task`` in a child; wall time (as the child measured it) and that child's peak RSS."""
    result = work / f"{task}-{folder.name}.json"
    proc = subprocess.Popen([sys.executable, __file__, "--child", task, str(folder),
                             str(result), str(repeat)])
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{task} on {folder.name} failed (status {status})")
    data = json.loads(result.read_text())
    # ru_maxrss is in KiB on Linux; the command tasks report their own child's peak
    data["rss_mib"] = (data["child_rss_kib"] if task in CLI_TASKS
                       else usage.ru_maxrss) / 1024
    return data


# --------------------------------------------------------------------------- main

TASKS = [("labeler", "labeler `scoring.evaluate` (DataFrames in memory)"),
         ("labeler-shuffled", "labeler `scoring.evaluate`, run rows shuffled"),
         ("pytrec-dicts", "pytrec_eval `evaluate` (prebuilt dicts)"),
         ("ranx", "ranx `evaluate`, warm (prebuilt Qrels/Run)"),
         ("labeler-cli", "`labeler score --json` command (files in, JSON out)"),
         ("pytrec-script", "pytrec_eval script: parse_qrel + parse_run + evaluate + JSON out"),
         ("labeler-measures", "labeler `scoring.evaluate`, nDCG@10 P@10 R@100 RR AP"),
         ("pytrec-measures", "pytrec_eval `evaluate`, the same five measures (prebuilt dicts)"),
         ("labeler-cli-measures", "`labeler score --json --measure ...` (the five measures)"),
         ("pytrec-script-measures", "pytrec_eval script, the same five measures")]
CLI_TASKS = ("labeler-cli", "pytrec-script", "labeler-cli-measures", "pytrec-script-measures")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1M,10M", help="run rows, comma separated (1M,10M)")
    ap.add_argument("--quick", action="store_true", help="1M rows only, no ranx")
    ap.add_argument("--no-ranx", action="store_true", help="skip ranx")
    ap.add_argument("--ranx-max", default="1M", help="largest size ranx is run on (its Run "
                    "construction alone takes minutes beyond)")
    ap.add_argument("--work", default=str(HERE / "_work"), help="data and results folder")
    ap.add_argument("--repeat", type=int, default=3, help="calls per measurement (best kept)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds over all tools (best kept; 1 round beyond 2M rows)")
    ap.add_argument("--ids", choices=["msmarco", "chunk"], default="msmarco",
                    help="passage ids: MS MARCO numbers (≤ 7 bytes) or RAG chunk ids "
                    "(doc12_c10, 7–16 bytes)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--generate", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        generate(_parse_size(args.generate[0]), Path(args.generate[1]))
        return
    if args.child:
        task, folder, result, repeat = args.child
        data = _child(task, Path(folder), int(repeat))
        data["child_rss_kib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        Path(result).write_text(json.dumps(data))
        return
    if args.ids == "chunk":   # the children read it; their data gets its own folder
        os.environ["BENCH_IDS"] = "chunk"
        if args.work == str(HERE / "_work"):
            args.work = str(HERE / "_work-chunk")
    sizes = [1_000_000] if args.quick else [_parse_size(s) for s in args.sizes.split(",")]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        # in a child: a big parent would lend its peak RSS to every child it starts (Linux
        # keeps ru_maxrss across fork + exec)
        subprocess.run([sys.executable, __file__, "--generate", str(n), str(work)], check=True)
        folder = work / _label(n)
        print(f"# data {_label(n)}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        tasks = [(t, title) for t, title in TASKS
                 if t != "ranx" or not (args.quick or args.no_ranx
                                        or n > _parse_size(args.ranx_max))]
        big = n > 2_000_000
        best: dict[str, dict] = {}
        # the machine may be shared: rounds interleave the tools, and each keeps its best
        for rnd in range(1 if big else args.rounds):
            for task, _ in tasks:
                data = measure(task, folder, work, 1 if big else args.repeat)
                print(f"# {_label(n)} round {rnd + 1} {task}: {data['wall']:.3f} s (first "
                      f"{data['first']:.3f} s), {data['rss_mib']:.0f} MiB", file=sys.stderr)
                old = best.get(task)
                if old is None or data["wall"] < old["wall"]:
                    data["first"] = old["first"] if old else data["first"]
                    data["rss_mib"] = max(data["rss_mib"], old["rss_mib"] if old else 0)
                    best[task] = data
                else:
                    old["rss_mib"] = max(old["rss_mib"], data["rss_mib"])
        for task, title in tasks:
            data = best[task]
            values = data["values"]
            reference = best["labeler-measures" if "measures" in task else tasks[0][0]]["values"]
            rows.append((_label(n), task, title, data["wall"], data["first"], data["rss_mib"],
                         _max_diff(reference, values), float(np.mean(list(values.values())))))
    print(_table(rows))


def _max_diff(ref: dict, other: dict) -> float:
    if set(ref) != set(other):
        return float("inf")
    return max((abs(ref[q] - other[q]) for q in ref), default=0.0)


def _table(rows: list) -> str:
    lines = [("| rows | what is timed | wall (s) | first call (s) | peak RSS (MiB) | vs labeler | "
              "mean value | max per-query diff |"),
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    base: dict[tuple[str, str], float] = {}
    for size, task, title, wall, first, rss, diff, mean in rows:
        kind = ("cli-measures" if task in CLI_TASKS and "measures" in task else
                "cli" if task in CLI_TASKS else "measures" if "measures" in task else "lib")
        if task in ("labeler", "labeler-cli", "labeler-measures", "labeler-cli-measures"):
            base[(size, kind)] = wall
        ratio = wall / base[(size, kind)] if (size, kind) in base else float("nan")
        lines.append(f"| {size} | {title} | {wall:.3f} | {first:.3f} | {rss:.0f} | "
                     f"{ratio:.2f}× | {mean:.6f} | {diff:.1e} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
