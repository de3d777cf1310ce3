"""Exact on any ids: thousands of random cases, every scoring path against pytrec_eval.

Each case draws qrels and 1–3 runs whose ids come from different families (RAG chunk ids
``doc12_c10``, UUIDs, URLs, numbers, long shared prefixes, non-ASCII, 1–200 bytes), with tied
scores, queries a run lacks and ranked documents the qrels lack. Every path scores it and
each per-query NDCG@1/3/10 is compared with pytrec_eval's (a difference is > 1e-9):

- ``frames``: ``scoring.evaluate`` on one DataFrame holding every run;
- ``dicts``: ``labeler.score`` on pytrec_eval-style dicts, all runs at once;
- ``one-run``: the same, one run per call (a value must not depend on the other runs);
- ``files``: ``evaluate_files`` on TREC files (what ``labeler score`` runs);
- ``duckdb``: the same with ``engine="duckdb"`` (when the extra is installed);
- ``compare``: ``labeler.compare``'s human and LLM means (both on the same qrels).

Usage::

    python benchmarks/bench_exact_ids.py --cases 3000     # prints a Markdown table
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytrec_eval

import labeler
from labeler.scoring.results import evaluate, evaluate_files
from labeler.statistics.options import StatsOptions

KS = [1, 3, 10]
Run = dict[str, dict[str, float]]
SCORES = [0.0, 0.5, 1.0, 2.25, -1.5, 3.0, 7.75]
UNICODE = "éüßøçñ日本語検索文書Ωλπжщю한국어中文😀🔍"


def _id(rng: np.random.Generator, family: str) -> str:
    if family == "chunk":
        return f"doc{rng.integers(0, 120)}_c{rng.integers(0, 40)}"
    if family == "uuid":
        return str(uuid.UUID(int=int(rng.integers(0, 2**62)) << 64 | int(rng.integers(0, 2**62))))
    if family == "url":
        return f"https://en.example.org/wiki/{rng.integers(0, 10**int(rng.integers(1, 12)))}"
    if family == "number":
        return str(rng.integers(0, 10**int(rng.integers(1, 13))))
    if family == "prefix":
        return "msmarco_passage_v2_0123456789"[:int(rng.integers(7, 26))] + str(
            rng.integers(0, 1000))
    if family == "unicode":
        n = int(rng.integers(1, 40))
        return "".join(UNICODE[i] for i in rng.integers(0, len(UNICODE), n))
    if family == "long":
        return "p" * int(rng.integers(100, 190)) + str(rng.integers(0, 10**6))
    return str(rng.integers(0, 1000))   # short


FAMILIES = ["chunk", "uuid", "url", "number", "prefix", "unicode", "long", "short"]


def case(rng: np.random.Generator) -> tuple[list[tuple[str, str, int]], dict[str, Run]]:
    qf, jf, rf = (FAMILIES[i] for i in rng.integers(0, len(FAMILIES), 3))
    queries = list(dict.fromkeys(_id(rng, qf) for _ in range(int(rng.integers(1, 6)))))
    qrels, judged = [], {}
    for q in queries[:max(1, len(queries) - int(rng.integers(0, 2)))]:
        docs = list(dict.fromkeys(_id(rng, jf) for _ in range(int(rng.integers(1, 10)))))
        judged[q] = docs
        qrels += [(q, d, int(rng.integers(0, 4))) for d in docs]
    runs: dict[str, Run] = {}
    for s in range(int(rng.integers(1, 4))):
        run: Run = {}
        for q in queries:
            if s and run and rng.random() < 0.3:
                continue
            pool = judged.get(q, [])
            mine = [pool[i] for i in rng.permutation(len(pool))[:int(rng.integers(0, 7))]]
            other = [_id(rng, rf) for _ in range(int(rng.integers(0, 6)))]
            docs = list(dict.fromkeys(mine + other))
            if docs:
                run[q] = {d: float(SCORES[rng.integers(0, len(SCORES))]) for d in docs}
        if run:
            runs[f"sys{s}"] = run
    if not runs:
        runs["sys0"] = {queries[0]: {"only": 1.0}}
    return qrels, runs


def reference(qrels: list[tuple[str, str, int]], runs: dict[str, Run]
              ) -> dict[str, dict[str, dict[int, float]]]:
    qd: dict[str, dict[str, int]] = {}
    for q, d, g in qrels:
        qd.setdefault(q, {})[d] = g
    ev = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut." + ",".join(map(str, KS))})
    return {s: {q: {k: v[f"ndcg_cut_{k}"] for k in KS} for q, v in ev.evaluate(r).items()}
            for s, r in runs.items()}


def per_query(result: Any) -> dict[str, dict[str, dict[int, float]]]:
    out: dict[str, dict[str, dict[int, float]]] = {}
    for s, q, k, v in result.per_query[["system", "query_id", "k", "ndcg"]].itertuples(
            index=False):
        if not math.isnan(v):
            out.setdefault(str(s), {}).setdefault(str(q), {})[int(k)] = float(v)
    return out


def differs(got: dict[str, dict[str, dict[int, float]]],
            want: dict[str, dict[str, dict[int, float]]]) -> bool:
    for s, per_q in want.items():
        mine = got.get(s, {})
        if not set(mine) <= set(per_q):
            return True
        for q, vals in per_q.items():
            for k, v in vals.items():
                if abs(mine.get(q, {}).get(k, 0.0) - v) > 1e-9:
                    return True
    return False


def paths(tmp: Path, qrels: list[tuple[str, str, int]], runs: dict[str, Run],
          with_duckdb: bool) -> dict[str, bool]:
    """Whether each path differs from pytrec_eval on this case."""
    want = reference(qrels, runs)
    qdf = pd.DataFrame(qrels, columns=["query_id", "chunk_id", "grade"])
    rdf = pd.DataFrame([(q, d, sc, s) for s, r in runs.items() for q, docs in r.items()
                        for d, sc in docs.items()],
                       columns=["query_id", "chunk_id", "score", "system"])
    qd: dict[str, dict[str, int]] = {}
    for q, d, g in qrels:
        qd.setdefault(q, {})[d] = g
    out = {"frames": differs(per_query(evaluate(qdf, rdf, k=KS, include_empty=True)), want),
           "dicts": differs(per_query(labeler.score(qd, runs, k=KS, include_empty=True)),
                            want),
           "one-run": any(differs(per_query(labeler.score(qd, {s: r}, k=KS,
                                                          include_empty=True)), {s: want[s]})
                          for s, r in runs.items())}
    qpath = tmp / "qrels.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels), encoding="utf-8")
    specs = []
    for s, r in runs.items():
        p = tmp / f"{s}.run"
        p.write_text("".join(f"{q} Q0 {d} {i + 1} {sc!r} {s}\n" for q, docs in r.items()
                             for i, (d, sc) in enumerate(docs.items())), encoding="utf-8")
        specs.append(f"{s}={p}")
    out["files"] = differs(per_query(evaluate_files(qpath, specs, k=KS, include_empty=True)),
                           want)
    if with_duckdb:
        out["duckdb"] = differs(per_query(evaluate_files(qpath, specs, k=KS, include_empty=True,
                                                         engine="duckdb")), want)
    cmp = labeler.compare(human=qdf, llm=qdf, runs=rdf, k=10, include_empty=True,
                          stats=StatsOptions(bootstrap=20)).to_dict()   # the means only
    bad = False
    for s, per_q in want.items():
        if not per_q:   # no query of this run is judged
            continue
        mean = float(np.mean([v[10] for v in per_q.values()]))
        got = cmp["runs"].get(s, {})
        if got.get("human") is not None and (abs(got["human"] - mean) > 1e-9
                                             or abs(got["llm"] - mean) > 1e-9):
            bad = True
    out["compare"] = bad
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    try:
        import duckdb  # noqa: F401
        with_duckdb = True
    except ImportError:
        with_duckdb = False
    rng = np.random.default_rng(args.seed)
    wrong: dict[str, int] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.cases):
            qrels, runs = case(rng)
            for name, bad in paths(Path(d), qrels, runs, with_duckdb).items():
                wrong[name] = wrong.get(name, 0) + int(bad)
    secs = time.perf_counter() - t0
    print(f"{args.cases} random cases (seed {args.seed}), {secs:.0f} s\n")
    print("| path | cases that differ from pytrec_eval |\n| --- | ---: |")
    for name, n in wrong.items():
        print(f"| {name} | {n} of {args.cases} |")


if __name__ == "__main__":
    main()
