"""Do the intervals hold on the shapes users bring? Near-duplicate runs, boards of real-row
runs, runs that lack queries, the best run, rank statistics, three exchangeable runs.

On TREC DL 2019 (43 judged queries, NIST grades 0–3, its submitted runs). The truth is full
human labelling: each run's mean NDCG@10 over the 43 queries under the NIST labels. A study
has people judge a simple random sample of ``n`` of the 43 queries; the LLM labels cover all
43 (simulated judges, as ``bench_coverage.py``: human grade + shift + Gaussian noise, rounded
and clipped; and a judge biased toward one run: one more grade for every passage that run
ranks in its top 10). Every estimator is computed as labeler computes it (checked against
``labeler.statistics`` on the first studies); "before" is the estimator labeler used until
now, "now" the current one:

- before: plain PPI over every query, a zero-spread sample gives a zero-width interval and
  p = 0 or 1;
- now: a query where the two runs' top 10 are the same (or, with ``--complete``, both lack
  it) is a known zero and is not estimated; PPI runs over the informative queries, scaled by
  their share; no spread among the labelled informative values, or fewer than 5 of them,
  gives no interval (counted below as covering: it claims nothing), p null, unresolved.

Rows (each with its Monte-Carlo error, ± one binomial standard error):

- near-duplicates: two runs with the same top 10 on 40 of 43 queries (the ICT-BERT2 ranking,
  its top 20 shuffled on 3 queries): pair coverage, share of zero-width intervals, share of
  studies with a wrong-direction verdict;
- board: 10 real-row runs (the three complete ICT runs; four per-query mixtures of them;
  three rerankers that shuffle an ICT run's top 10 on 30% of the queries): some
  wrong-direction Holm verdict per study; Bonferroni simultaneous coverage;
- all 11 runs with ``--complete``: simultaneous pair coverage;
- the best set (PPI simultaneous intervals) holds the truly best run; its mean size; before:
  how often the winner named with ``confidence`` ≥ 0.95 was not the best;
- rank statistics: coverage of the query-bootstrap intervals of τ_AP, Kendall's τ and top-1
  overlap (both orders on the same resampled labelled queries) of the truth (the LLM order
  over the 43 queries against the human order over the 43);
- three exchangeable runs (each query's three ICT rankings dealt at random to the runs):
  family-wise error of ``--ppi-target population`` (Holm over 3 pairs) with the normal
  quantile (before) and the t(n − 1) quantile (now).

Usage::

    python benchmarks/bench_user_shapes.py --studies 400 --n 10 20
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtr, stdtr, stdtrit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_coverage import (check_known_zeros, holm_rows, load, pair_ppi,
                           simulated_labels)

from labeler.reconciliation.comparison import _top_k_signatures
from labeler.scoring import results as scoring
from labeler.statistics.bootstrap import query_resample_counts
from labeler.statistics.ranking import (kendall_tau, rank_intervals, tau_ap,
                                        top_k_overlap)

DATA = Path("/work/shared/data/trec-dl-2019")
K = 10
ALPHA = 0.05
ICT = ["ICT-BERT2", "ICT-CKNRM_B", "ICT-CKNRM_B50"]


# ---------------------------------------------------------------------- runs

def _shuffled(run: pd.DataFrame, queries: list[str], depth: int, rng: np.random.Generator
              ) -> pd.DataFrame:
    """``run`` with its top ``depth`` shuffled on ``queries`` (scores rewritten)."""
    out = []
    for qid, g in run.groupby("query_id", sort=False):
        g = g.sort_values(["score", "chunk_id"], ascending=[False, False]).copy()
        if qid in queries:
            top = g.iloc[:depth].copy()
            top["chunk_id"] = rng.permutation(top["chunk_id"].to_numpy())
            g = pd.concat([top, g.iloc[depth:]])
        g["score"] = np.arange(len(g), 0, -1, dtype=float)
        out.append(g)
    return pd.concat(out, ignore_index=True)


def near_duplicates(runs: pd.DataFrame, qids: list[str], seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = runs.loc[runs["system"] == "ICT-BERT2"]
    b = _shuffled(a, list(rng.choice(qids, 3, replace=False)), 20, rng)
    return pd.concat([a.assign(system="A"), b.assign(system="A-ablation")], ignore_index=True)


def board(runs: pd.DataFrame, qids: list[str], seed: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = [runs.loc[runs["system"] == s] for s in ICT]
    by = {s: {q: g for q, g in p.groupby("query_id")} for s, p in zip(ICT, parts)}
    for i in range(4):
        pick = rng.integers(0, 3, len(qids))
        parts.append(pd.concat([by[ICT[j]][q] for j, q in zip(pick, qids)]).assign(
            system=f"mix{i}"))
    for i, s in enumerate(ICT):
        share = list(rng.choice(qids, int(0.3 * len(qids)), replace=False))
        parts.append(_shuffled(by_run(runs, s), share, 10, rng).assign(system=f"rerank{i}"))
    return pd.concat(parts, ignore_index=True)


def by_run(runs: pd.DataFrame, system: str) -> pd.DataFrame:
    return runs.loc[runs["system"] == system]


def table(qrels: pd.DataFrame, runs: pd.DataFrame, qids: list[str]) -> np.ndarray:
    """(queries × runs) NDCG@10 with --complete (0 where a run lacks a query)."""
    systems = list(dict.fromkeys(runs["system"]))
    pq = scoring.evaluate(qrels, runs, k=K, complete=True).per_query
    wide = pq.pivot_table(index="query_id", columns="system", values="ndcg", aggfunc="first")
    return wide.reindex(index=qids, columns=systems).fillna(0.0).to_numpy(dtype=float)


def known_zero(runs: pd.DataFrame, qids: list[str], a: np.ndarray, b: np.ndarray
               ) -> np.ndarray:
    """(queries × pairs): the two runs' top 10 are the same (or both lack the query)."""
    systems = list(dict.fromkeys(runs["system"]))
    sig = _top_k_signatures(runs, K, set(qids))
    codes = np.array([[hash(sig[s][q]) for s in systems] for q in qids])
    return codes[:, a] == codes[:, b]


def biased_labels(human: pd.DataFrame, runs: pd.DataFrame, system: str, seed: int
                  ) -> pd.DataFrame:
    """The +0.5/0.8 judge, one grade more for every passage ``system`` ranks in its top 10."""
    base = simulated_labels(human, 0.5, 0.8, seed)
    r = by_run(runs, system).sort_values(["query_id", "score"], ascending=[True, False])
    top = r.groupby("query_id").head(K)[["query_id", "chunk_id"]].assign(bump=1)
    out = base.merge(top, on=["query_id", "chunk_id"], how="left")
    out["grade"] = np.clip(out["grade"] + out["bump"].fillna(0).astype(int), 0, 3)
    return out.drop(columns="bump")


# ---------------------------------------------------------------------- estimators

def verdicts(est: np.ndarray, se: np.ndarray, df: np.ndarray) -> dict[str, np.ndarray]:
    """p, Holm-adjusted p, interval and Bonferroni interval (NaN where none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(se > 0, 2 * stdtr(df, -np.abs(est) / se),
                     np.where(se == 0, np.where(est == 0, 1.0, 0.0), np.nan))
    adj = holm_rows(p)
    m = np.maximum(np.isfinite(se).sum(axis=1, keepdims=True), 1)
    half = stdtrit(df, 1 - ALPHA / 2) * se
    sim = stdtrit(df, 1 - ALPHA / (2 * m)) * se
    return {"p": p, "adj": adj, "lo": est - half, "hi": est + half,
            "slo": est - sim, "shi": est + sim}


def rate(x: np.ndarray) -> str:
    x = np.asarray(x, dtype=float)
    return f"{100 * x.mean():.1f}% ± {100 * np.sqrt(x.mean() * (1 - x.mean()) / len(x)):.1f}"


def pair_rows(y: np.ndarray, yhat: np.ndarray, zero: np.ndarray, a: np.ndarray,
              b: np.ndarray, n: int, studies: int, seed: int) -> dict[str, dict[str, str]]:
    """Pair coverage, zero width, wrong direction and simultaneous coverage, before/now."""
    return {name: formatted(o) for name, o in
            pair_outcomes(y, yhat, zero, a, b, n, studies, seed).items()}


def formatted(o: dict[str, np.ndarray]) -> dict[str, str]:
    return {"pair coverage": rate(o["cover"]),
            "coverage where given": rate(o["given"]) if len(o["given"]) else "n/a",
            "zero width": rate(o["zero width"]), "with interval": rate(o["with interval"]),
            "wrong direction (some pair)": rate(o["wrong"]),
            "simultaneous coverage": rate(o["simultaneous"])}


def pair_outcomes(y: np.ndarray, yhat: np.ndarray, zero: np.ndarray, a: np.ndarray,
                  b: np.ndarray, n: int, studies: int, seed: int
                  ) -> dict[str, dict[str, np.ndarray]]:
    """The raw outcomes of :func:`pair_rows` (to pool over label sets)."""
    rng = np.random.default_rng(seed)
    big_n = y.shape[0]
    picks = np.argsort(rng.random((studies, big_n)), axis=1)[:, :n]
    dy, dh = y[:, a] - y[:, b], yhat[:, a] - yhat[:, b]
    truth = dy.mean(axis=0)
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, z in (("before", None), ("now", zero)):
        est, se, df = pair_ppi(dy, dh, picks, z)
        if z is not None:
            check_known_zeros(dy, dh, picks[:3], z, est, se)
        v = verdicts(est, se, df)
        none = np.isnan(se)
        tol = 1e-12  # a difference known exactly (every informative query labelled)
        cover = none | ((v["lo"] - tol <= truth) & (truth <= v["hi"] + tol))
        scover = none | ((v["slo"] - tol <= truth) & (truth <= v["shi"] + tol))
        sig = v["adj"] < ALPHA
        wrong = sig & (np.sign(est) * np.sign(truth) < 0)
        out[name] = {"cover": cover.ravel(), "given": cover.ravel()[~none.ravel()],
                     "zero width": (se == 0).ravel(), "with interval": ~none.ravel(),
                     "wrong": wrong.any(axis=1), "simultaneous": scover.all(axis=1)}
    return out


def run_rows(y: np.ndarray, yhat: np.ndarray, absent: np.ndarray, n: int, studies: int,
             seed: int) -> dict[str, str]:
    """Run-mean PPI coverage with ``--complete``: before (every query estimated) and now (a
    query the run lacks is a known 0)."""
    rng = np.random.default_rng(seed)
    picks = np.argsort(rng.random((studies, y.shape[0])), axis=1)[:, :n]
    truth = y.mean(axis=0)
    out = {}
    for name, z in (("before", None), ("now", absent)):
        est, se, df = pair_ppi(y, yhat, picks, z)
        if z is not None:
            check_known_zeros(y, yhat, picks, z, est, se)
        half = stdtrit(df, 1 - ALPHA / 2) * se
        none = np.isnan(se)
        cover = none | ((est - half - 1e-12 <= truth) & (truth <= est + half + 1e-12))
        out[name] = f"{rate(cover.ravel())} (with interval {rate(~none.ravel())})"
    return out


# ---------------------------------------------------------------------- the best run

def best_rows(y: np.ndarray, yhat: np.ndarray, zero: np.ndarray, n: int, studies: int,
              seed: int, n_boot: int = 200) -> dict[str, str]:
    holds, size, wrong_sure, n_sure = best_outcomes(y, yhat, zero, n, studies, seed, n_boot)
    return {"best set holds the best": rate(holds), "mean size": f"{size.mean():.2f}",
            "before: winner wrong when confidence ≥ 0.95": rate(wrong_sure)
            + f" (of {n_sure})"}


def best_outcomes(y: np.ndarray, yhat: np.ndarray, zero: np.ndarray, n: int, studies: int,
                  seed: int, n_boot: int = 200
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Per study: the best set holds the best run, its size; the old "confidence" check
    (skipped with ``n_boot`` 0)."""
    rng = np.random.default_rng(seed)
    big_n, runs = y.shape
    a, b = map(np.array, zip(*itertools.combinations(range(runs), 2)))
    picks = np.argsort(rng.random((studies, big_n)), axis=1)[:, :n]
    est, se, df = pair_ppi(y[:, a] - y[:, b], yhat[:, a] - yhat[:, b], picks, zero)
    v = verdicts(est, se, df)
    best = int(np.argmax(y.mean(axis=0)))
    beaten = np.zeros((studies, runs), dtype=bool)
    for p, (i, j) in enumerate(zip(a, b)):
        beaten[:, j] |= v["slo"][:, p] > 0
        beaten[:, i] |= v["shi"][:, p] < 0
    holds = ~beaten[:, best]
    size = (~beaten).sum(axis=1)
    # before: the PPI winner and its bootstrap "confidence"
    lab = y[picks] - yhat[picks]                                 # studies × n × runs
    ppi_means = yhat.mean(axis=0) + lab.mean(axis=1)
    winner = ppi_means.argmax(axis=1)
    conf = np.zeros(studies)
    for s in range(studies if n_boot else 0):
        counts = query_resample_counts(big_n, n_boot, seed + s)
        m = counts @ yhat / big_n
        lab_mask = np.zeros(big_n)
        lab_mask[picks[s]] = 1
        corr = (counts * lab_mask) @ (y - yhat) / np.maximum((counts * lab_mask).sum(axis=1),
                                                              1)[:, None]
        means = m + corr
        conf[s] = np.mean(means.argmax(axis=1) == winner[s])
    sure = conf >= 0.95
    wrong_sure = (winner != best)[sure] if sure.any() else np.array([0.0])
    return holds, size, wrong_sure, int(sure.sum())


# ---------------------------------------------------------------------- rank statistics

def rank_rows(y: np.ndarray, yhat: np.ndarray, n: int, studies: int, seed: int,
              n_boot: int = 200) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    big_n, runs = y.shape
    tags = [str(i) for i in range(runs)]

    def order(v: np.ndarray) -> list[str]:
        return [tags[i] for i in np.argsort(-v, kind="stable")]

    oh, ol = order(y.mean(axis=0)), order(yhat.mean(axis=0))
    truth = {"tau_ap": tau_ap(ol, oh), "kendall_tau": kendall_tau(y.mean(axis=0),
                                                                   yhat.mean(axis=0)),
             "top1": top_k_overlap(ol, oh, 1)}
    hits: dict[str, list[bool]] = {k: [] for k in truth}
    widths: dict[str, list[float]] = {k: [] for k in truth}
    for s in range(studies):
        pick = rng.choice(big_n, n, replace=False)
        ci = rank_intervals(y[pick], yhat[pick], n_resamples=n_boot, seed=s)
        if ci is None:
            continue
        for key, c in (("tau_ap", ci["tau_ap"]), ("kendall_tau", ci["kendall_tau"]),
                       ("top1", ci["top_k_overlap"]["1"])):
            hits[key].append(c is None or c[0] <= truth[key] <= c[1])  # type: ignore[operator]
            widths[key].append(2.0 if c is None else c[1] - c[0])
    return {f"{k} coverage": f"{rate(np.array(v))} (width {np.mean(widths[k]):.2f}; "
            f"truth {truth[k]:.2f})" for k, v in hits.items()}


# ---------------------------------------------------------------------- population null

def population_null(y: np.ndarray, yhat: np.ndarray, n: int, studies: int, seed: int
                    ) -> dict[str, str]:
    """Three runs whose per-query rankings are dealt at random: Holm FWER, z vs t."""
    rng = np.random.default_rng(seed)
    big_n = y.shape[0]
    errs = {"normal (before)": [], "t(n − 1) (now)": []}
    a, b = np.array([0, 0, 1]), np.array([1, 2, 2])
    for _ in range(studies):
        deal = np.argsort(rng.random((big_n, 3)), axis=1)
        ys, hs = np.take_along_axis(y, deal, 1), np.take_along_axis(yhat, deal, 1)
        pick = rng.permutation(big_n)
        lab, unl = pick[:n], pick[n:]
        d, dh = ys[:, a] - ys[:, b], hs[:, a] - hs[:, b]
        r = d[lab] - dh[lab]
        est = dh[unl].mean(axis=0) + r.mean(axis=0)
        se = np.sqrt(dh[unl].var(axis=0) / len(unl) + r.var(axis=0) / n)
        for name, q in (("normal (before)", None), ("t(n − 1) (now)", n - 1)):
            with np.errstate(invalid="ignore", divide="ignore"):
                z = np.abs(est) / se
                p = 2 * (stdtr(q, -z) if q is not None else ndtr(-z))
            errs[name].append(bool((holm_rows(p[None, :])[0] < ALPHA).any()))
    return {k: rate(np.array(v)) for k, v in errs.items()}


# ---------------------------------------------------------------------- LLMJudge

def llmjudge(data: Path, n: int, studies: int) -> None:
    """The pair and best-set rows on LLMJudge 2024 (25 queries) with its 33 real LLM label
    sets. Runs: each query's judged passages ranked by the human grade plus Gaussian noise
    (five systems, sd 1.0–3.0: real-row quality spread), a near-duplicate of the best of them
    (its top 20 shuffled on 2 queries) and two per-query mixtures of the five."""
    from labeler import io

    human = io.read_qrels(data / "test-human.qrels")
    qids = sorted(set(human["query_id"]))
    rng = np.random.default_rng(5)
    parts = []
    for i, sd in enumerate((1.0, 1.5, 2.0, 2.5, 3.0)):
        score = human["grade"].to_numpy(float) + rng.normal(0, sd, len(human))
        r = human[["query_id", "chunk_id"]].assign(score=score, system=f"sys{i}")
        parts.append(r.sort_values(["query_id", "score"], ascending=[True, False])
                     .groupby("query_id").head(100))
    base = pd.concat(parts, ignore_index=True)
    by = {s: dict(tuple(g.groupby("query_id"))) for s, g in base.groupby("system")}
    dup = _shuffled(by_run(base, "sys0"), list(rng.choice(qids, 2, replace=False)), 20, rng)
    mixes = [pd.concat([by[f"sys{int(j)}"][q] for j, q in zip(rng.integers(0, 5, len(qids)),
                                                               qids)]).assign(system=f"mix{m}")
             for m in range(2)]
    runs = pd.concat([base, dup.assign(system="sys0-ablation"), *mixes], ignore_index=True)
    y = table(human, runs, qids)
    a, b = map(np.array, zip(*itertools.combinations(range(y.shape[1]), 2)))
    zero = known_zero(runs, qids, a, b)
    dup_pair = [i for i, (x, z) in enumerate(zip(a, b)) if {x, z} == {0, 5}]
    pooled: dict[str, dict[str, list[np.ndarray]]] = {}
    holds, sizes = [], []
    sets = sorted((data / "submissions").glob("*.qrels"))
    for k, path in enumerate(sets):
        llm = io.read_labels(path, grade_map={"5": 3, "10": 3})
        yhat = table(llm[["query_id", "chunk_id", "grade"]], runs, qids)
        res = pair_outcomes(y, yhat, zero, a, b, n, studies, seed=k)
        dres = pair_outcomes(y[:, [0, 5]], yhat[:, [0, 5]], zero[:, dup_pair], np.array([0]),
                             np.array([1]), n, studies, seed=k)
        for est_name in ("before", "now"):
            for key, o in (("board", res[est_name]), ("near-duplicates", dres[est_name])):
                for m, v in o.items():
                    pooled.setdefault(f"{key}|{est_name}", {}).setdefault(m, []).append(v)
        h, sz, _, _ = best_outcomes(y[:, :5], yhat[:, :5], np.zeros((len(qids), 10), bool),
                                    n, studies, k, 0)
        holds.append(h)
        sizes.append(sz)
    print(f"LLMJudge 2024: {len(qids)} queries, {len(sets)} real LLM label sets × {studies} "
          f"studies, n = {n}\n")
    print("| runs | estimator | pair coverage | coverage where given | zero width | "
          "with interval | wrong direction (some pair) | simultaneous coverage |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key, o in pooled.items():
        cells = formatted({m: np.concatenate(v) for m, v in o.items()})
        what, est_name = key.split("|")
        print(f"| {what} | {est_name} | " + " | ".join(cells.values()) + " |")
    print(f"\nbest set of the five noisy-ranking systems holds the best: "
          f"{rate(np.concatenate(holds))}, mean size {np.concatenate(sizes).mean():.2f}\n")


# ---------------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--studies", type=int, default=400)
    ap.add_argument("--n", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--parts", nargs="+",
                    default=["pairs", "runs", "best", "rank", "population", "llmjudge"])
    ap.add_argument("--llmjudge", type=Path, default=Path("/work/shared/data/llmjudge"))
    args = ap.parse_args()
    start = time.perf_counter()
    human, runs, _, _ = load(args.data)
    qids = sorted(set(human["query_id"]))
    good = simulated_labels(human, 0.5, 0.8, seed=0)
    dup = near_duplicates(runs, qids)
    brd = board(runs, qids)
    every = runs
    print(f"TREC DL 2019, {len(qids)} queries; {args.studies} studies per cell; "
          f"± one Monte-Carlo standard error\n")
    if "pairs" in args.parts:
        cases = [("near-duplicates, judge +0.5/0.8", dup, good),
                 ("near-duplicates, judge biased to A", dup, biased_labels(human, dup, "A", 0)),
                 ("board of 10 real-row runs", brd, good),
                 ("board, judge biased to mix0", brd, biased_labels(human, brd, "mix0", 0)),
                 ("all 11 runs, --complete", every, good)]
        print("| case | n | estimator | pair coverage | coverage where given | zero width | "
              "with interval | wrong direction (some pair) | simultaneous coverage |")
        print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, rr, llm in cases:
            y, yhat = table(human, rr, qids), table(llm, rr, qids)
            a, b = map(np.array, zip(*itertools.combinations(range(y.shape[1]), 2)))
            zero = known_zero(rr, qids, a, b)
            for n in args.n:
                res = pair_rows(y, yhat, zero, a, b, n, args.studies, seed=n)
                for est_name, cells in res.items():
                    print(f"| {name} | {n} | {est_name} | " + " | ".join(cells.values())
                          + " |", flush=True)
        print()
    if "runs" in args.parts:
        print("| all 11 runs, --complete: run PPI coverage | n | before | now |")
        print("| --- | ---: | ---: | ---: |")
        systems = list(dict.fromkeys(every["system"]))
        have = every.groupby("system")["query_id"].agg(set)
        absent = np.array([[q not in have[s] for s in systems] for q in qids])
        y, yhat = table(human, every, qids), table(good, every, qids)
        for n in [5, *args.n]:
            res = run_rows(y, yhat, absent, n, args.studies, seed=n)
            print(f"| simulated +0.5/0.8 | {n} | {res['before']} | {res['now']} |", flush=True)
        print()
    if "best" in args.parts:
        print("| runs | n | best set holds the best | mean size | before: winner wrong when "
              "confidence ≥ 0.95 |")
        print("| --- | ---: | ---: | ---: | ---: |")
        ict = runs.loc[runs["system"].isin(ICT)]
        five = brd.loc[brd["system"].isin(["ICT-BERT2", "mix0", "mix1", "rerank0",
                                           "ICT-CKNRM_B"])]
        for name, rr, n in (("3 ICT runs", ict, 5), ("3 ICT runs", ict, 10),
                            ("5 board runs", five, 10), ("5 board runs", five, 20)):
            y, yhat = table(human, rr, qids), table(good, rr, qids)
            a, b = map(np.array, zip(*itertools.combinations(range(y.shape[1]), 2)))
            res = best_rows(y, yhat, known_zero(rr, qids, a, b), n, args.studies, seed=n)
            print(f"| {name} | {n} | " + " | ".join(res.values()) + " |", flush=True)
        print()
    if "rank" in args.parts:
        print("| runs | n | τ_AP coverage | Kendall τ coverage | top-1 overlap coverage |")
        print("| --- | ---: | ---: | ---: | ---: |")
        y = table(human, brd, qids)
        for judge, llm in (("judge +0.5/0.8", good),
                           ("judge biased to mix0", biased_labels(human, brd, "mix0", 0))):
            yhat = table(llm, brd, qids)
            for n in args.n:
                res = rank_rows(y, yhat, n, args.studies, seed=n)
                print(f"| board of 10, {judge} | {n} | {res['tau_ap coverage']} | "
                      f"{res['kendall_tau coverage']} | {res['top1 coverage']} |", flush=True)
        print()
    if "population" in args.parts:
        ict = runs.loc[runs["system"].isin(ICT)]
        y, yhat = table(human, ict, qids), table(good, ict, qids)
        res = population_null(y, yhat, 10, args.studies * 5, seed=3)
        print("| three exchangeable runs, n = 10 | " + " | ".join(
            f"{k}: {v}" for k, v in res.items()) + " |")
    if "llmjudge" in args.parts:
        for n in args.n:
            llmjudge(args.llmjudge, n, max(20, args.studies // 10))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
