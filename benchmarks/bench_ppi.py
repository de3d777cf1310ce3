"""How often does a 95% interval cover the truth, and how wide is it? PPI vs human-only.

On TREC DL 2019 (passages): the three ICT runs cover all 43 judged queries. The truth is each
run's mean NDCG@10 over the 43 queries under the NIST labels (and each pairwise difference of
those means). A "study" judges a simple random sample of ``n`` of the 43 queries by hand; the
LLM labels cover all 43. Per study and per run (and per pair of runs) three 95% intervals:

- human only: the t-interval over the ``n`` human-judged queries (``stats.mean_ci``);
- PPI++: ``stats.ppi_mean`` — the LLM mean over the other queries corrected on the sample;
- LLM only: the t-interval over all 43 queries under the LLM labels (ignores the humans;
  no sampling, so it either covers a target or not).

LLM labels come from two judges: the built-in lexical judge (``labeler.judges.lexical``,
passages graded from their text), and a simulated judge whose NDCG on each query is the human
NDCG plus a bias and Gaussian noise of a chosen size (clipped to [0, 1]) — the per-query error
is under our control. Prints a Markdown table: coverage (share of studies whose interval holds
the truth; about ±1.4 points is sampling error at 1,000 studies) and mean width.

Data: ``--data DIR`` with ``2019qrels-pass.txt``, ``msmarco-test2019-queries.tsv``,
``dl2019_document.jsonl`` and ``runs/ICT-*.run`` (the ``data/dl2019`` folder of the public
repository TREMA-UNH/appendix-umbrella-other-llm).

Usage::

    python benchmarks/bench_ppi.py --data DIR                   # 1,000 studies per n
    python benchmarks/bench_ppi.py --data DIR --studies 200 --n 10 15
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from labeler import io

from labeler.scoring import results as scoring

from labeler.statistics import inference as stats
from labeler.judges.lexical import LexicalJudge

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "trec-dl-2019"
RUNS = ("ICT-BERT2", "ICT-CKNRM_B", "ICT-CKNRM_B50")
K = 10
BIAS = 0.06


def per_query_ndcg(data: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """NDCG@10 per query (rows) and run (columns) under the NIST labels and the lexical
    judge's labels of the same judged passages (0 where a query has no relevant label)."""
    human = io.read_qrels(data / "2019qrels-pass.txt")
    runs = io.read_runs([data / "runs" / f"{r}.run" for r in RUNS])
    queries = io.read_queries(data / "msmarco-test2019-queries.tsv")
    docs = pd.read_json(data / "dl2019_document.jsonl", lines=True, dtype={"docid": str})
    docs = docs.rename(columns={"docid": "chunk_id", "doc": "chunk"})
    pairs = human[["query_id", "chunk_id"]].merge(queries, on="query_id").merge(docs,
                                                                                on="chunk_id")
    lexical = LexicalJudge().grade_frame(pairs)[["query_id", "chunk_id", "grade"]]
    tables = []
    for qrels in (human, lexical):
        pq = scoring.evaluate(qrels, runs, k=K, include_empty=True).per_query
        tables.append(pq.pivot(index="query_id", columns="system", values="ndcg")
                      .reindex(columns=list(RUNS)).astype(float))
    h, m = tables
    m = m.reindex(h.index).fillna(0.0)
    return h, m


def targets(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per-query values of each run and of each pairwise difference of runs."""
    out = {r: table[r].to_numpy() for r in RUNS}
    for a, b in itertools.combinations(RUNS, 2):
        out[f"{a} − {b}"] = table[a].to_numpy() - table[b].to_numpy()
    return out


def simulated(human: pd.DataFrame, bias: float, noise: float, seed: int) -> pd.DataFrame:
    """A judge whose NDCG@10 is the human one + ``bias`` + N(0, ``noise``), clipped."""
    rng = np.random.default_rng(seed)
    return (human + bias + rng.normal(0.0, noise, human.shape)).clip(0.0, 1.0)


def study(y_all: dict[str, np.ndarray], yhat_all: dict[str, np.ndarray], n: int,
          studies: int, seed: int) -> dict[str, float]:
    """Coverage and mean width of the human-only and PPI intervals over ``studies`` random
    samples of ``n`` queries (averaged over the targets given)."""
    rng = np.random.default_rng(seed)
    size = len(next(iter(y_all.values())))
    hits = {"human": 0, "ppi": 0}
    width = {"human": 0.0, "ppi": 0.0}
    count = 0
    for _ in range(studies):
        picked = np.zeros(size, dtype=bool)
        picked[rng.choice(size, n, replace=False)] = True
        for target, y in y_all.items():
            truth, yhat = y.mean(), yhat_all[target]
            cis = {"human": stats.mean_ci(y[picked]),
                   "ppi": stats.ppi_mean(y[picked], yhat[picked], yhat[~picked]).ci}
            for name, ci in cis.items():
                if ci is None:  # no spread in the sample: an interval of width 0
                    ci = (float(y[picked].mean()),) * 2
                hits[name] += ci[0] <= truth <= ci[1]
                width[name] += ci[1] - ci[0]
            count += 1
    return {**{f"cover_{k}": v / count for k, v in hits.items()},
            **{f"width_{k}": v / count for k, v in width.items()}}


def llm_only(y_all: dict[str, np.ndarray], yhat_all: dict[str, np.ndarray]) -> str:
    """How many targets the LLM-only t-interval over all queries covers (no sampling)."""
    covered = 0
    for target, y in y_all.items():
        ci = stats.mean_ci(yhat_all[target])
        covered += ci is not None and ci[0] <= y.mean() <= ci[1]
    return f"{covered} of {len(y_all)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--studies", type=int, default=1000)
    ap.add_argument("--n", type=int, nargs="+", default=[5, 10, 15, 20, 30])
    ap.add_argument("--seed", type=int, default=2019)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    human, lexical = per_query_ndcg(args.data)
    y = targets(human)
    judges = {"lexical judge": lexical}
    for noise in (0.05, 0.10, 0.20):  # +0.06: GPT-4o's leniency on these runs
        judges[f"simulated: bias +{BIAS:.2f}, noise {noise:.2f}"] = simulated(
            human, BIAS, noise, args.seed)
    print(f"TREC DL 2019, {len(human)} queries, runs {', '.join(RUNS)}: 95% intervals of "
          f"the 3 run means and the 3 differences between runs, {args.studies} random query "
          f"samples per row\n")
    print("| LLM labels | corr. | of | human queries | coverage human-only | coverage PPI | "
          "width human-only | width PPI | PPI / human | LLM-only covers |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, table in judges.items():
        corr = float(np.mean([np.corrcoef(human[r], table[r])[0, 1] for r in RUNS]))
        yhat = targets(table)
        for kind in ("means", "differences"):
            yk = {t: v for t, v in y.items() if ("−" in t) == (kind == "differences")}
            yhk = {t: yhat[t] for t in yk}
            for n in args.n:
                r = study(yk, yhk, n, args.studies, args.seed + n)
                print(f"| {name} | {corr:.2f} | {kind} | {n} | {r['cover_human']:.1%} | "
                      f"{r['cover_ppi']:.1%} | {r['width_human']:.3f} | {r['width_ppi']:.3f} | "
                      f"{r['width_ppi'] / r['width_human']:.2f} | {llm_only(yk, yhk)} |")
    print(f"\n({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
