"""Scoring at any size: wall time and peak RSS of labeler (in-memory and DuckDB engines),
pytrec_eval, ir_measures and ranx on 10^5 .. 10^8 run rows.

Data (generated into a temporary folder, deleted at the end unless ``--keep``): queries ×
depth run rows (depth 100 up to 10^7 rows; 10^5 queries × 1,000 at 10^8, as TREC runs are
deep), MS MARCO-like numeric passage ids, scores with 4 decimals (ties within a query, which
trec_eval breaks by docno), 30 judgements per query (grades 0-3, 20 of them on retrieved
passages). Each size is written as a TREC run and qrels (text) and as Parquet; 10^8 rows as
Parquet only (about 1 GB).

Every job runs in its own process, timed from outside (``resource.getrusage`` of the child:
wall time, and peak RSS from ``ru_maxrss``); each tool parses the files itself, as a user's
script would:

- ``labeler score --engine memory|duckdb --measure nDCG@10 --measure AP --json`` (the whole
  command, JSON on stdout; DuckDB with ``--memory-limit 2GB``, from Parquet);
- pytrec_eval: ``parse_qrel`` + ``parse_run`` + ``evaluate({ndcg_cut.10, map})``;
- ir_measures: ``read_trec_qrels`` + ``read_trec_run`` + ``calc_aggregate`` with the same two
  measures (its pytrec_eval provider);
- ranx: ``Qrels.from_file`` + ``Run.from_file`` + ``evaluate`` (ndcg@10, map).

Per-query nDCG@10 and AP of every tool are compared with labeler's (max |diff| ≤ 1e-9; at
10^8 rows pytrec_eval runs on a sample of queries cut out of the data). A tool is skipped at a
size where it would not fit in memory (``--max-rows-inmemory``). Prints a Markdown table.

Usage::

    python benchmarks/bench_scale.py                        # 10^5, 10^6, 10^7, 10^8
    python benchmarks/bench_scale.py --sizes 1e5 1e6        # quick
    python benchmarks/bench_scale.py --sizes 1e8 --tmp /work/tmp
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

JUDGED, RETRIEVED_JUDGED = 30, 20
MEASURES = ["nDCG@10", "AP"]


# --------------------------------------------------------------------------- data

def shape(n_rows: int) -> tuple[int, int]:
    """(queries, depth) for ``n_rows`` run rows."""
    depth = 1000 if n_rows >= 10**8 else 100
    return n_rows // depth, depth


def generate(n_rows: int, folder: Path, text: bool = True, seed: int = 2019) -> None:
    """``run.parquet`` and ``qrels.parquet`` (and ``run.trec``, ``qrels.trec`` when
    ``text``) of ``n_rows`` rows, written block by block (a few million rows in memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_q, depth = shape(n_rows)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per_block = max(1, 4_000_000 // depth)
    run_w = pq.ParquetWriter(folder / "run.parquet", pa.schema(
        [("query_id", pa.string()), ("chunk_id", pa.string()), ("score", pa.float64()),
         ("system", pa.string())]), compression="zstd")
    qrels_w = pq.ParquetWriter(folder / "qrels.parquet", pa.schema(
        [("query_id", pa.string()), ("chunk_id", pa.string()), ("grade", pa.int64())]))
    run_txt = open(folder / "run.trec", "w") if text else None   # noqa: SIM115
    qrels_txt = open(folder / "qrels.trec", "w") if text else None   # noqa: SIM115
    try:
        for q0 in range(0, n_q, per_block):
            nq = min(per_block, n_q - q0)
            qids = (1_000_000 + q0 + np.arange(nq)).astype(str)
            start = rng.integers(0, 8_000_000, nq)
            stride = rng.integers(1, 97, nq)
            docs = start[:, None] + stride[:, None] * np.arange(depth + JUDGED)[None, :]
            score = np.round(rng.gamma(2.0, 5.0, (nq, depth)), 4)   # ties within a query
            run_q = np.repeat(qids, depth)
            run_d = docs[:, :depth].ravel().astype(str)
            order = np.argsort(-score, axis=1, kind="stable")      # rows ranked by score
            score = np.take_along_axis(score, order, axis=1).ravel()
            run_d = run_d.reshape(nq, depth)
            run_d = np.take_along_axis(run_d, order, axis=1).ravel()
            run_w.write_table(pa.table({"query_id": run_q, "chunk_id": run_d, "score": score,
                                        "system": np.full(len(score), "sys")}))
            pick = np.sort(rng.permuted(np.tile(np.arange(depth), (nq, 1)), axis=1)
                           [:, :RETRIEVED_JUDGED], axis=1)
            judged = np.concatenate([np.take_along_axis(docs, pick, axis=1),
                                     docs[:, depth:depth + JUDGED - RETRIEVED_JUDGED]], axis=1)
            grade = rng.choice(4, size=judged.shape, p=[0.5, 0.25, 0.15, 0.1])
            grade[:, 0] = np.maximum(grade[:, 0], 1)   # every query has a relevant passage
            q_q = np.repeat(qids, JUDGED)
            q_d = judged.ravel().astype(str)
            qrels_w.write_table(pa.table({"query_id": q_q, "chunk_id": q_d,
                                          "grade": grade.ravel().astype(np.int64)}))
            if run_txt is not None and qrels_txt is not None:
                rank = np.tile(np.arange(1, depth + 1), nq).astype(str)
                lines = np.char.add(np.char.add(np.char.add(run_q, " Q0 "), run_d), " ")
                lines = np.char.add(np.char.add(np.char.add(lines, rank), " "),
                                    np.char.mod("%.4f", score))
                run_txt.write("\n".join(np.char.add(lines, " sys").tolist()) + "\n")
                ql = np.char.add(np.char.add(np.char.add(q_q, " 0 "), q_d), " ")
                qrels_txt.write("\n".join(np.char.add(ql, grade.ravel().astype(str))
                                          .tolist()) + "\n")
    finally:
        run_w.close()
        qrels_w.close()
        for fh in (run_txt, qrels_txt):
            if fh is not None:
                fh.close()


def sample(folder: Path, n_queries: int, out: Path) -> list[str]:
    """TREC files of the first ``n_queries`` queries (for pytrec_eval at 10^8 rows)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    first = pq.ParquetFile(folder / "run.parquet").read_row_group(0, columns=["query_id"])
    qids = pc.unique(first.column("query_id")).to_pylist()[:n_queries]
    out.mkdir(parents=True, exist_ok=True)
    filt = [("query_id", "in", qids)]
    run = pq.read_table(folder / "run.parquet", filters=filt).to_pandas()
    qrels = pq.read_table(folder / "qrels.parquet", filters=filt).to_pandas()
    with open(out / "run.trec", "w") as fh:
        for q, d, s in zip(run["query_id"], run["chunk_id"], run["score"]):
            fh.write(f"{q} Q0 {d} 0 {s:.4f} sys\n")
    with open(out / "qrels.trec", "w") as fh:
        for q, d, g in zip(qrels["query_id"], qrels["chunk_id"], qrels["grade"]):
            fh.write(f"{q} 0 {d} {g}\n")
    return qids


# --------------------------------------------------------------------------- jobs

PYTREC = """
import json, sys, pytrec_eval
with open(sys.argv[1]) as q, open(sys.argv[2]) as r:
    ev = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), {"ndcg_cut.10", "map"})
    res = ev.evaluate(pytrec_eval.parse_run(r))
json.dump({q: [v["ndcg_cut_10"], v["map"]] for q, v in res.items()}, open(sys.argv[3], "w"))
"""
IR_MEASURES = """
import json, sys, ir_measures
from ir_measures import nDCG, AP
qrels = list(ir_measures.read_trec_qrels(sys.argv[1]))
run = list(ir_measures.read_trec_run(sys.argv[2]))
out = {}
for m in ir_measures.iter_calc([nDCG@10, AP], qrels, run):
    out.setdefault(m.query_id, {})[str(m.measure)] = m.value
json.dump({q: [v["nDCG@10"], v["AP"]] for q, v in out.items()}, open(sys.argv[3], "w"))
"""
RANX = """
import json, sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
evaluate(qrels, run, ["ndcg@10", "map"])
json.dump({q: [run.scores["ndcg@10"][q], run.scores["map"][q]] for q in run.scores["ndcg@10"]},
          open(sys.argv[3], "w"))
"""


def run_job(cmd: list[str], timeout: float, stdout: Path | None = None
            ) -> tuple[float, float, int, float]:
    """(wall s, peak RSS GB, exit code, CPU s) of ``cmd``, run under a fresh helper process
    so that ``ru_maxrss`` of its children is this job's alone."""
    helper = ("import json, resource, subprocess, sys, time\n"
              "out = open(sys.argv[3], 'wb') if sys.argv[3] else subprocess.DEVNULL\n"
              "t = time.perf_counter()\n"
              "p = subprocess.run(json.loads(sys.argv[1]), stdout=out, "
              "stderr=subprocess.PIPE, timeout=float(sys.argv[2]))\n"
              "w = time.perf_counter() - t\n"
              "sys.stderr.buffer.write(p.stderr[-3000:] if p.returncode else b'')\n"
              "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
              "print(json.dumps([w, r.ru_maxrss, p.returncode, r.ru_utime + r.ru_stime]))\n")
    try:
        out = subprocess.run([sys.executable, "-c", helper, json.dumps(cmd), str(timeout),
                              str(stdout or "")],
                             capture_output=True, text=True, timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        return float("nan"), float("nan"), -9, float("nan")
    if out.returncode:
        sys.stderr.write(out.stderr[-3000:])
        return float("nan"), float("nan"), out.returncode, float("nan")
    if out.stderr:
        sys.stderr.write(out.stderr)
    wall, rss_kb, code, cpu = json.loads(out.stdout)
    return wall, rss_kb / 1024**2, code, cpu


def labeler_values(path: Path) -> dict[str, list[float]]:
    runs = json.loads(path.read_text())["runs"]
    entry = next(iter(runs.values()))
    nd, ap = entry["nDCG@10"]["per_query"], entry["AP"]["per_query"]
    return {q: [nd[q], ap[q]] for q in nd}


def max_diff(ours: dict[str, list[float]], theirs: dict[str, list[float]]) -> float:
    if set(theirs) - set(ours):
        return float("inf")
    return max((abs(a - b) for q, vs in theirs.items() for a, b in zip(ours[q], vs)),
               default=0.0)


# --------------------------------------------------------------------------- main

def label(n: int) -> str:
    return f"10^{round(np.log10(n))}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e5, 1e6, 1e7, 1e8])
    ap.add_argument("--tmp", default=None, help="where to write the data (default: $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    ap.add_argument("--max-rows-inmemory", type=float, default=2e7,
                    help="largest size given to in-memory tools (pytrec_eval, ir_measures, "
                         "ranx, labeler --engine memory)")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--sample", type=int, default=300,
                    help="queries checked against pytrec_eval at 10^8 rows")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="labeler-scale-", dir=args.tmp))
    labeler = [sys.executable, "-m", "labeler", "score"]
    rows = ["| rows | tool | wall (s) | CPU (s) | peak RSS (GB) | vs pytrec_eval (wall) "
            "| max abs diff |", "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    try:
        for size in args.sizes:
            n = int(size)
            folder = root / label(n)
            text = n <= args.max_rows_inmemory
            t0 = time.perf_counter()
            generate(n, folder, text=text)
            print(f"[{label(n)}] data in {time.perf_counter() - t0:.0f} s "
                  f"({sum(f.stat().st_size for f in folder.iterdir()) / 1e9:.2f} GB)",
                  file=sys.stderr, flush=True)
            results: dict[str, tuple[float, float, float, float]] = {}
            ours: dict[str, list[float]] | None = None
            jobs: list[tuple[str, list[str], Path]] = []
            meas = [a for m in MEASURES for a in ("--measure", m)]
            if text:
                jobs.append(("labeler (memory, TREC)", [
                    *labeler, "--qrels", str(folder / "qrels.trec"), "--run",
                    str(folder / "run.trec"), *meas, "--engine", "memory", "--json"],
                    folder / "mem.json"))
            jobs.append(("labeler (duckdb, Parquet, 2GB)", [
                *labeler, "--qrels", str(folder / "qrels.parquet"), "--run",
                str(folder / "run.parquet"), *meas, "--engine", "duckdb",
                "--memory-limit", "2GB", "--temp-dir", str(root / "spill"), "--json"],
                folder / "duck.json"))
            if text:
                for tool, script in (("pytrec_eval", PYTREC), ("ir_measures", IR_MEASURES),
                                     ("ranx", RANX)):
                    out = folder / f"{tool}.json"
                    jobs.append((tool, [sys.executable, "-c", script,
                                        str(folder / "qrels.trec"), str(folder / "run.trec"),
                                        str(out)], out))
            for tool, cmd, out in jobs:
                wall, rss, code, cpu = run_job(cmd, args.timeout,
                                               out if tool.startswith("labeler") else None)
                diff = float("nan")
                if code == 0 and out.exists():
                    if tool.startswith("labeler"):
                        vals = labeler_values(out)
                        if ours is None:
                            ours = vals
                        else:
                            diff = max_diff(ours, vals)
                    elif ours is not None:
                        diff = max_diff(ours, {q: v for q, v in json.loads(
                            out.read_text()).items()})
                results[tool] = (wall, rss, diff, cpu) if code == 0 else (float("nan"),) * 4
                print(f"[{label(n)}] {tool}: {wall:.1f} s ({cpu:.1f} s CPU), {rss:.2f} GB, "
                      f"diff {diff:.1e}, exit {code}", file=sys.stderr, flush=True)
            if not text and ours is not None:   # pytrec_eval on a sample of the queries
                sub = root / "sample"
                sample(folder, args.sample, sub)
                out = sub / "pytrec.json"
                wall, rss, code, cpu = run_job([sys.executable, "-c", PYTREC, str(
                    sub / "qrels.trec"), str(sub / "run.trec"), str(out)], args.timeout)
                if code == 0:
                    ref = json.loads(out.read_text())
                    diff = max_diff(ours, ref)
                    results[f"pytrec_eval ({len(ref)} sampled queries)"] = (wall, rss, diff,
                                                                             cpu)
            base = results.get("pytrec_eval", (float("nan"),))[0]
            for tool, (wall, rss, diff, cpu) in results.items():
                if wall != wall:
                    rows.append(f"| {label(n)} | {tool} | failed | | | | |")
                    continue
                ratio = base / wall if tool.startswith("labeler") and base == base else None
                shown = "reference" if tool == "labeler (memory, TREC)" or (
                    not text and tool.startswith("labeler")) else f"{diff:.1e}"
                rows.append(f"| {label(n)} | {tool} | {wall:.1f} | {cpu:.1f} | {rss:.2f} | "
                            f"{'' if ratio is None else f'{ratio:.1f}×'} | {shown} |")
            print("\n".join(rows), file=sys.stderr, flush=True)
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
