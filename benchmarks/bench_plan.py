"""Does `labeler plan`'s number of queries reach the ±W it promises? A simulation on real runs.

TREC DL 2019 (passages): the three ICT runs cover all 43 judged queries. LLM labels come from
a simulated judge that sees each NIST grade, adds an upward shift and Gaussian noise and rounds
back to 0-3 (seeded), and from the built-in lexical judge (passages graded from their text).
One study:

1. a pilot: a simple random sample of ``--pilot`` (10) of the 43 queries is judged by hand;
2. ``plan`` (``labeler.statistics.planning.queries_needed`` with the margins of
   ``planning.settings``, or ``--assurance``/``--assurance-human``/``--kurtosis``) names n,
   the number of labelled queries every run's 95% PPI interval needs to be at most ±W (the
   largest over the runs; with ``--pairs`` every pair's; the pilot itself where every
   interval is within ±W already, as ``labeler plan`` says "enough now"), and the number the
   human-only t interval needs;
3. a fresh simple random sample of that size is drawn ("fresh"), and, as a user of
   ``labeler sample --more`` would, the pilot extended by random queries to that size
   ("extended"); each interval's half-width is measured on it.

The table gives, per W, the median n named and the share of studies in which every interval
reached ±W (the bar: at least 80%; ``--one``: each run or pair planned alone, the lowest of
their shares), for the PPI (difference estimator with the finite-
population correction) and the human-only interval. About ±1.3 points is sampling error at
1,000 studies.

Data: ``--data DIR`` with ``2019qrels-pass.txt``, ``msmarco-test2019-queries.tsv``,
``dl2019_document.jsonl`` and ``runs/ICT-*.run`` (the ``data/dl2019`` folder of the public
repository TREMA-UNH/appendix-umbrella-other-llm).

``--example DIR`` instead walks through one study with the command line (sample 10 queries,
plan, sample the number asked for, plan again), the NIST labels standing in for the people
who label, and prints every command and its output (the worked example of docs/planning.md).

Usage::

    python benchmarks/bench_plan.py --data DIR                 # 1,000 studies per W
    python benchmarks/bench_plan.py --studies 300 --widths 0.04 0.06 0.10 --pilot 5 --pairs
    python benchmarks/bench_plan.py --assurance 0.8 --assurance-human 0.8   # another margin
    python benchmarks/bench_plan.py --example /tmp/plan-example
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from labeler import io, scoring
from labeler.statistics import planning

DATA = next((p / "shared" / "data" / "trec-dl-2019" for p in Path(__file__).resolve().parents
             if (p / "shared" / "data" / "trec-dl-2019").is_dir()), Path("trec-dl-2019"))
RUNS = ("ICT-BERT2", "ICT-CKNRM_B", "ICT-CKNRM_B50")
K = 10
PILOT = 10


def simulated_labels(human: pd.DataFrame, shift: float, noise: float, seed: int) -> pd.DataFrame:
    """A judge that sees the human grade: grade + ``shift`` + N(0, ``noise``), rounded and
    clipped to 0-3."""
    rng = np.random.default_rng(seed)
    g = human["grade"].to_numpy(dtype=float) + shift + rng.normal(0.0, noise, len(human))
    return human.assign(grade=np.clip(np.rint(g), 0, 3).astype(int))


def lexical_labels(data: Path, human: pd.DataFrame) -> pd.DataFrame:
    """The lexical judge's grades of every judged passage."""
    from labeler.judges.lexical import LexicalJudge

    queries = io.read_queries(data / "msmarco-test2019-queries.tsv")
    docs = pd.read_json(data / "dl2019_document.jsonl", lines=True, dtype={"docid": str})
    docs = docs.rename(columns={"docid": "chunk_id", "doc": "chunk"})
    pairs = human[["query_id", "chunk_id"]].merge(queries, on="query_id").merge(docs,
                                                                                on="chunk_id")
    return LexicalJudge().grade_frame(pairs)[["query_id", "chunk_id", "grade"]]


def ndcg_table(qrels: pd.DataFrame, runs: pd.DataFrame, index: pd.Index | None = None
               ) -> pd.DataFrame:
    """NDCG@10 per query (rows) and run (columns); 0 where a query has no relevant label."""
    pq = scoring.evaluate(qrels, runs, k=K, include_empty=True).per_query
    table = pq.pivot(index="query_id", columns="system", values="ndcg").astype(float)
    table = table.reindex(columns=list(RUNS))
    return table if index is None else table.reindex(index).fillna(0.0)


def targets(table: pd.DataFrame, pairs: bool) -> np.ndarray:
    """Per-query values (rows: queries) of each run, or of each pairwise difference."""
    if not pairs:
        return table.to_numpy()
    return np.column_stack([table[a].to_numpy() - table[b].to_numpy()
                            for a, b in itertools.combinations(RUNS, 2)])


def realized(values: np.ndarray, idx: np.ndarray, n_total: int) -> np.ndarray:
    """The 95% half-width of each column's interval on the rows ``idx``."""
    sd = np.std(values[idx], axis=0, ddof=1)
    return np.array([planning.half_width(float(s), len(idx), n_total) for s in sd])


def study(y: np.ndarray, yhat: np.ndarray, w: float, studies: int, seed: int,
          margins: dict[str, tuple[float, float]], pilot: int = PILOT) -> dict[str, float]:
    """Median n named and the share of studies reaching ±``w`` (every column at once);
    ``margins``: each kind's (assurance, kurtosis)."""
    rng = np.random.default_rng(seed)
    n_total = len(y)
    kinds = {"ppi": y - yhat, "human_only": y}
    out: dict[str, list[float]] = {f"{k}_{m}": [] for k in kinds
                                   for m in ("n", "fresh", "extended")}
    for _ in range(studies):
        order = rng.permutation(n_total)
        first = order[:pilot]
        for kind, values in kinds.items():
            assurance, kurtosis = margins[kind]
            needs = [planning.queries_needed(values[first, j], n_total, w,
                                             assurance=assurance, kurtosis=kurtosis)
                     for j in range(values.shape[1])]
            # as `labeler plan`: an interval within ±W now needs no more queries; one wider
            # than W needs at least one more
            n = max(pilot if (x.half_width_now or 0) <= w else max(int(x.n or 0), pilot + 1)
                    for x in needs)
            fresh = rng.choice(n_total, n, replace=False)
            extended = order[:max(n, pilot)]
            out[f"{kind}_n"].append(n)
            out[f"{kind}_fresh"].append(
                float((realized(values, fresh, n_total) <= w + 1e-12).all()))
            out[f"{kind}_extended"].append(
                float((realized(values, extended, n_total) <= w + 1e-12).all()))
    return {k: float(np.median(v)) if k.endswith("_n") else float(np.mean(v))
            for k, v in out.items()}


def example(data: Path, out: Path, seed: int, width: float = 0.05) -> None:
    """The worked example: every command run and its output printed."""
    import shlex

    from click.testing import CliRunner

    from labeler.cli import main as cli

    out.mkdir(parents=True, exist_ok=True)
    nist = io.read_qrels(data / "2019qrels-pass.txt")
    io.write_qrels(simulated_labels(nist, 0.5, 0.8, seed), out / "llm.qrels")
    run_args = [a for r in RUNS for a in ("--run", str(data / "runs" / f"{r}.run"))]

    def sh(*args: str) -> str:
        shown = " ".join(shlex.quote(a) for a in args).replace(str(data), "$DL19")
        print(f"$ labeler {shown.replace(str(out) + '/', '')}")
        r = CliRunner().invoke(cli, list(args))
        print(r.output.rstrip().replace(str(out) + "/", ""), end="\n\n")
        return str(r.output)

    def annotate() -> None:  # the NIST labels of every query drawn so far
        drawn = set()
        for sheet in (out / "sheets").glob("todo*.csv"):
            drawn |= set(pd.read_csv(sheet, dtype=str)["query_id"])
        io.write_qrels(nist.loc[nist["query_id"].isin(drawn)], out / "human.qrels")
        print(f"(people label the sheets: {len(drawn)} queries in human.qrels)\n")

    sh("sample", "--unit", "query", "--labels", str(out / "llm.qrels"), "--n", "10",
       "--seed", str(seed), "--out", str(out / "sheets" / "todo.csv"))
    annotate()
    plan = ["plan", "--human", str(out / "human.qrels"), "--llm", str(out / "llm.qrels"),
            *run_args, "--half-width", f"{width:g}"]
    text = sh(*plan, "--minutes-per-query", "15")
    import re

    more = re.search(r"--more (\d+)", text)
    if more:
        sh("sample", "--more", more.group(1), "--from", str(out / "sheets" / "todo.csv"))
        annotate()
    sh(*plan)


def margins_text(args: argparse.Namespace) -> str:
    """The margins' settings used, in words."""
    out = []
    for kind, override in (("ppi", args.assurance), ("human_only", args.assurance_human)):
        a, kurt = planning.settings(kind, args.pairs)
        a = a if override is None else override
        kurt = kurt if args.kurtosis is None else args.kurtosis
        out.append(f"{kind} assurance {a:g}, kurtosis {kurt:g}")
    return "; ".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--studies", type=int, default=1000)
    ap.add_argument("--widths", type=float, nargs="+", default=[0.04, 0.05, 0.06, 0.08, 0.10])
    ap.add_argument("--pairs", action="store_true", help="plan for the differences of runs")
    ap.add_argument("--one", action="store_true",
                    help="plan for each run (pair) alone; print the lowest of their rates")
    ap.add_argument("--assurance", type=float, default=None,
                    help="the PPI margin's assurance (default: the planner's)")
    ap.add_argument("--assurance-human", type=float, default=None,
                    help="the human-only margin's assurance (default: the planner's)")
    ap.add_argument("--seed", type=int, default=2019)
    ap.add_argument("--pilot", type=int, default=PILOT, help="queries labelled before planning")
    ap.add_argument("--kurtosis", type=float, default=None,
                    help="the excess kurtosis assumed (default: the planner's)")
    ap.add_argument("--example", type=Path, help="walk through one study in DIR instead")
    args = ap.parse_args(argv)
    if args.example is not None:
        example(args.data, args.example, args.seed)
        return 0

    t0 = time.perf_counter()
    human = io.read_qrels(args.data / "2019qrels-pass.txt")
    runs = io.read_runs([args.data / "runs" / f"{r}.run" for r in RUNS])
    h = ndcg_table(human, runs)
    judges = {f"simulated (shift +{s}, noise {z})": simulated_labels(human, s, z, args.seed)
              for s, z in ((0.3, 0.5), (0.5, 0.8), (0.5, 1.2))}
    judges["lexical judge"] = lexical_labels(args.data, human)
    what = "differences of the 3 pairs of runs" if args.pairs else "means of the 3 runs"
    what += (", each planned alone (the lowest rate of the 3, the largest n)" if args.one
             else ", all planned at once (every interval must reach ±W)")
    print(f"TREC DL 2019, {len(h)} queries, {what}; pilot of {args.pilot} random queries; "
          f"{args.studies} studies per row; margins {margins_text(args)}\n")
    print("| LLM labels | corr. | ±W | PPI n (median) | reached, fresh | reached, extended | "
          "human-only n (median) | reached, fresh | reached, extended |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    y = targets(h, args.pairs)
    for name, labels in judges.items():
        yhat = targets(ndcg_table(labels, runs, h.index), args.pairs)
        corr = float(np.mean([np.corrcoef(y[:, j], yhat[:, j])[0, 1]
                              for j in range(y.shape[1])]))
        margins = {}
        for kind, override in (("ppi", args.assurance), ("human_only", args.assurance_human)):
            a, kurt = planning.settings(kind, args.pairs)
            margins[kind] = (a if override is None else override,
                             kurt if args.kurtosis is None else args.kurtosis)
        for i, w in enumerate(args.widths):
            if args.one:  # each interval planned alone: the lowest rate, the largest n
                each = [study(y[:, [j]], yhat[:, [j]], w, args.studies, args.seed + i,
                              margins, args.pilot) for j in range(y.shape[1])]
                r = {key: (max if key.endswith("_n") else min)(e[key] for e in each)
                     for key in each[0]}
            else:
                r = study(y, yhat, w, args.studies, args.seed + i, margins, args.pilot)
            print(f"| {name} | {corr:.2f} | {w:.2f} | {r['ppi_n']:.0f} | {r['ppi_fresh']:.1%} | "
                  f"{r['ppi_extended']:.1%} | {r['human_only_n']:.0f} | "
                  f"{r['human_only_fresh']:.1%} | {r['human_only_extended']:.1%} |")
    print(f"\n({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
