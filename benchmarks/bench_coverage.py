"""Does every "95%" interval of `labeler compare` cover the truth 95% of the time?

On TREC DL 2019 (passages; 43 judged queries, NIST grades 0–3) and its submitted runs. The
truth is what full human labelling reports: each run's mean NDCG@10 over the 43 queries under
the NIST labels (and each difference of two runs' means). A "study" has people judge a simple
random sample of ``n`` of the 43 queries; the LLM labels cover all 43. For many studies per n
it computes, exactly as labeler does (checked against ``labeler.statistics`` on the first
studies of every setting):

- run-mean PPI intervals: the default (finite-population difference estimator, t quantile),
  ``--ppi-target population`` (ppi_py's plain PPI estimate and se, t(n − 1) quantile),
  ``--ppi-tune`` (cross-fitted λ, within-fold-centred se) and its width against plain PPI's;
- pair PPI intervals of a − b: each at 95% (raw), and Bonferroni simultaneous intervals (the
  share of studies in which *every* pair's interval holds its truth);
- the human-only Student-t interval of the n judged queries;
- the family-wise rate of false "different" PPI verdicts (Holm over the family) under a null of
  equal runs: next to every real run, a copy whose per-query values are those of the run at
  other queries (a fixed random permutation of the 43), so the copy's mean over the 43 queries
  equals the run's exactly; the family is every real pair plus these null pairs;
- the bias of the default and the tuned estimates (mean of estimate − truth over the studies;
  the largest |bias| over runs).

LLM labels, made offline for every judged passage: simulated judges (human grade + upward
shift + Gaussian noise, rounded and clipped to 0..3, seeded) and labeler's lexical judge.
Two sets of runs: the three ICT runs, which rank all 43 queries (complete runs), and all eleven
runs scored with ``--complete`` (a query a run lacks counts 0). Prints one Markdown table:
coverage % (mean width) of each interval.

Usage::

    python benchmarks/bench_coverage.py                    # 2,000 studies per n (~2 min)
    python benchmarks/bench_coverage.py --studies 500 --n 10 20
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import stdtr, stdtrit

from labeler import io
from labeler.scoring import results as scoring
from labeler.statistics.inference import mean_ci
from labeler.statistics.pairs import holm
from labeler.statistics.ppi import MIN_TUNE, ppi_mean

DATA = next((p / "shared" / "data" / "trec-dl-2019" for p in Path(__file__).resolve().parents
             if (p / "shared" / "data" / "trec-dl-2019").is_dir()),
            Path("/work/shared/data/trec-dl-2019"))
K = 10
ALPHA = 0.05
JUDGES = {"simulated +0.5, sd 0.8": (0.5, 0.8), "simulated +1.0, sd 1.2": (1.0, 1.2),
          "simulated +0.2, sd 0.5": (0.2, 0.5)}


# ---------------------------------------------------------------------- data

def load(data: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """NIST qrels, runs, queries and passages."""
    human = io.read_qrels(data / "2019qrels-pass.txt")
    runs = io.read_runs(sorted((data / "runs").glob("*.run")))
    queries = io.read_queries(data / "msmarco-test2019-queries.tsv")
    docs = pd.read_json(data / "dl2019_document.jsonl", lines=True, dtype={"docid": str})
    return human, runs, queries, docs.rename(columns={"docid": "chunk_id", "doc": "chunk"})


def simulated_labels(human: pd.DataFrame, shift: float, sd: float, seed: int) -> pd.DataFrame:
    """Each judged pair graded human + shift + N(0, sd), rounded, clipped to 0..3."""
    rng = np.random.default_rng(seed)
    g = human["grade"].to_numpy(dtype=float) + shift + rng.normal(0, sd, len(human))
    return human.assign(grade=np.clip(np.rint(g), 0, 3).astype(int))


def lexical_labels(human: pd.DataFrame, queries: pd.DataFrame, docs: pd.DataFrame
                   ) -> pd.DataFrame:
    from labeler.judges.lexical import LexicalJudge

    pairs = human[["query_id", "chunk_id"]].merge(queries, on="query_id").merge(
        docs, on="chunk_id")
    return LexicalJudge().grade_frame(pairs)[["query_id", "chunk_id", "grade"]]


def ndcg_table(qrels: pd.DataFrame, runs: pd.DataFrame, systems: list[str],
               queries: list[str]) -> np.ndarray:
    """(queries × runs) NDCG@10 with --complete; a query without a relevant label counts 0
    (as labeler's PPI counts it)."""
    pq = scoring.evaluate(qrels, runs, k=K, complete=True).per_query
    wide = pq.pivot_table(index="query_id", columns="system", values="ndcg", aggfunc="first")
    return wide.reindex(index=queries, columns=systems).fillna(0.0).to_numpy(dtype=float)


# ---------------------------------------------------------------------- estimators

def ppi_default(y: np.ndarray, yhat: np.ndarray, picks: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Estimate and se of the default estimator for every study and column:
    (studies × columns) each; ``y``/``yhat`` (queries × columns), ``picks`` (studies × n)."""
    big_n, n = y.shape[0], picks.shape[1]
    d = y[picks] - yhat[picks]                      # studies × n × columns
    est = yhat.mean(axis=0) + d.mean(axis=1)
    se = np.sqrt((1 - n / big_n) * d.var(axis=1, ddof=1) / n)
    return est, se, n - 1


def ppi_population(y: np.ndarray, yhat: np.ndarray, picks: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    big_n, n = y.shape[0], picks.shape[1]
    m = big_n - n
    d = y[picks] - yhat[picks]
    lab_hat = yhat[picks]
    u_sum = yhat.sum(axis=0) - lab_hat.sum(axis=1)
    u_sq = (yhat ** 2).sum(axis=0) - (lab_hat ** 2).sum(axis=1)
    u_mean = u_sum / m
    u_var = u_sq / m - u_mean ** 2
    est = u_mean + d.mean(axis=1)
    se = np.sqrt(np.maximum(u_var, 0) / m + d.var(axis=1) / n)
    return est, se


def ppi_tuned(y: np.ndarray, yhat: np.ndarray, picks: np.ndarray, seed: int
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """The cross-fitted estimator; folds as labeler draws them from ``seed`` (positions in
    the sample, the same permutation for every study)."""
    big_n, n = y.shape[0], picks.shape[1]
    if n < MIN_TUNE:  # labeler keeps lambda = 1 below MIN_TUNE labelled queries
        return ppi_default(y, yhat, picks)
    order = np.random.default_rng(seed).permutation(n)
    fold = np.zeros(n, dtype=int)
    fold[order[n // 2:]] = 1
    ys, hs = y[picks], yhat[picks]                   # studies × n × columns
    lam = np.zeros((2, *ys.shape[::2]))
    for j in (0, 1):
        o = fold != j
        yo, ho = ys[:, o], hs[:, o]
        cov = ((yo - yo.mean(axis=1, keepdims=True)) * (ho - ho.mean(axis=1, keepdims=True))
               ).sum(axis=1) / (o.sum() - 1)
        var = ho.var(axis=1, ddof=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            lam[j] = np.where(var > 0, np.clip(cov / np.where(var > 0, var, 1), 0, 1), 0)
    lam_i = lam[fold].transpose(1, 0, 2)              # studies × n × columns
    resid = ys - lam_i * hs
    mean_hat = yhat.mean(axis=0)
    est = np.zeros(lam.shape[1:])
    for j in (0, 1):
        o = fold != j
        share = o.sum() / big_n
        r = ys - lam[j][:, None, :] * hs
        est += (lam[j] * mean_hat + share * r[:, o].mean(axis=1)
                + (1 - share) * r[:, ~o].mean(axis=1)) / 2
    # each fold's residuals centred on their own fold's mean (two degrees of freedom spent)
    dev = np.concatenate([resid[:, fold == j] - resid[:, fold == j].mean(axis=1, keepdims=True)
                          for j in (0, 1)], axis=1)
    se = np.sqrt((1 - n / big_n) * (dev ** 2).sum(axis=1) / (n - 2) / n)
    return est, se, n - 1


def pair_ppi(dy: np.ndarray, dh: np.ndarray, picks: np.ndarray, zero: np.ndarray | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimate, se and degrees of freedom (studies × pairs) of the pair PPI; NaN se where
    there is no interval. ``zero`` None: before (every query estimated, zero spread gives
    se 0); else now (known zeros post-stratified, no spread or < 5 informative: NaN)."""
    big_n = dy.shape[0]
    info = np.ones_like(dy, dtype=bool) if zero is None else ~zero
    n_info = info.sum(axis=0)                                    # pairs
    lab = info[picks]                                            # studies × n × pairs
    k = lab.sum(axis=1)                                          # studies × pairs
    r = np.where(lab, (dy - dh)[picks], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_r = r.sum(axis=1) / k
        dev = np.where(lab, r - mean_r[:, None, :], 0.0)
        var = (dev * dev).sum(axis=1) / (k - 1)
        mean_hat = np.where(info, dh, 0.0).sum(axis=0) / np.maximum(n_info, 1)
        share = n_info / big_n
        est = share * (mean_hat + mean_r)
        se = share * np.sqrt(np.maximum(0.0, 1 - k / np.maximum(n_info, 1)) * var / k)
    every = k == n_info
    if zero is not None:
        spread = var > (1e-12 * np.maximum(1.0, np.abs(mean_r))) ** 2
        se = np.where(every, 0.0, np.where((k >= 5) & spread, se, np.nan))
        est = np.where(n_info == 0, 0.0, est)
    return est, se, np.maximum(k - 1, 1)


def holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm per row; NaN p-values are left out of the family (and stay NaN)."""
    q = np.where(np.isnan(p), np.inf, p)
    m = np.isfinite(q).sum(axis=1, keepdims=True)
    order = np.argsort(q, axis=1, kind="stable")
    ranked = np.take_along_axis(q, order, axis=1) * np.maximum(m - np.arange(p.shape[1]), 1)
    adjusted = np.minimum(1.0, np.maximum.accumulate(ranked, axis=1))
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=1)
    return np.where(np.isnan(p), np.nan, out)


def interval(est: np.ndarray, se: np.ndarray, q: float, lo: float, hi: float
             ) -> tuple[np.ndarray, np.ndarray]:
    return np.clip(est - q * se, lo, hi), np.clip(est + q * se, lo, hi)


def check_against_labeler(y: np.ndarray, yhat: np.ndarray, picks: np.ndarray,
                          est: dict[str, np.ndarray], se: dict[str, np.ndarray]) -> None:
    """The vectorised figures equal labeler's own on the first studies."""
    for s in range(min(3, len(picks))):
        lab = np.zeros(y.shape[0], bool)
        lab[picks[s]] = True
        for c in range(y.shape[1]):
            for name, kw in (("default", {}), ("population", {"target": "population"}),
                             ("tuned", {"tune": True})):
                # labeler's folds follow the order of the labelled values it is given
                yy, hh = y[picks[s], c], yhat[picks[s], c]
                r = ppi_mean(yy, hh, yhat[~lab, c], **kw)  # type: ignore[arg-type]
                if r.estimate is None or r.se is None:
                    continue  # no interval (no spread): the vectorised figure is the old one
                if not (np.isclose(r.estimate, est[name][s, c], atol=1e-9)
                        and np.isclose(r.se, se[name][s, c], atol=1e-9)):
                    raise SystemExit(f"{name} differs from labeler's ppi_mean "
                                     f"({r.estimate}, {r.se} vs {est[name][s, c]}, "
                                     f"{se[name][s, c]})")


# ---------------------------------------------------------------------- one setting

def check_known_zeros(y: np.ndarray, yhat: np.ndarray, picks: np.ndarray, zero: np.ndarray,
                      est: np.ndarray, se: np.ndarray) -> None:
    """The vectorised estimates with known zeros (columns: runs, or pairs' differences)
    equal labeler's ``ppi_mean`` (``ppi_mean_diff`` is it on the differences)."""
    for s in range(min(3, len(picks))):
        lab = np.zeros(y.shape[0], bool)
        lab[picks[s]] = True
        for c in range(y.shape[1]):
            i = ~zero[:, c]
            r = ppi_mean(y[lab & i, c], yhat[lab & i, c], yhat[~lab & i, c],
                         n_known_zero=int(zero[:, c].sum()))
            want = np.nan if r.se is None else r.se
            if not (np.isclose(want, se[s, c], equal_nan=True)
                    and (r.estimate is None or np.isclose(r.estimate, est[s, c]))):
                raise SystemExit(f"run PPI differs from labeler's ({r}, {est[s, c]}, "
                                 f"{se[s, c]})")


def simulate(y: np.ndarray, yhat: np.ndarray, n: int, studies: int, seed: int,
             absent: np.ndarray | None = None) -> dict[str, str]:
    """Coverage and width of every interval for one judge, set of runs and n. ``absent``
    (queries × runs): the queries each run lacks (``--complete``: known zeros)."""
    rng = np.random.default_rng(seed)
    big_n, runs = y.shape
    picks = np.argsort(rng.random((studies, big_n)), axis=1)[:, :n]
    truth = y.mean(axis=0)
    zero = np.zeros_like(y, dtype=bool) if absent is None else absent
    out: dict[str, str] = {}

    def cell(lo: np.ndarray, hi: np.ndarray, target: np.ndarray) -> str:
        """Coverage (mean width); no interval (NaN) claims nothing and counts as covering."""
        none = np.isnan(lo)
        cover = (none | ((lo - 1e-12 <= target) & (target <= hi + 1e-12))).mean()
        width = (hi - lo)[~none].mean() if (~none).any() else float("nan")
        share = "" if not none.any() else f", {100 * (~none).mean():.0f}% given"
        return f"{100 * cover:.1f}% ({width:.3f}{share})"

    def bounded(e: np.ndarray, half: np.ndarray, lo: float, hi: float
                ) -> tuple[np.ndarray, np.ndarray]:
        return np.clip(e - half, lo, hi), np.clip(e + half, lo, hi)

    est: dict[str, np.ndarray] = {}
    se: dict[str, np.ndarray] = {}
    est["default"], se["default"], df = ppi_default(y, yhat, picks)
    est["population"], se["population"] = ppi_population(y, yhat, picks)
    est["tuned"], se["tuned"], _ = ppi_tuned(y, yhat, picks, seed=0)
    check_against_labeler(y, yhat, picks, est, se)
    t = float(stdtrit(df, 1 - ALPHA / 2))
    now, now_se, now_df = pair_ppi(y, yhat, picks, zero)
    check_known_zeros(y, yhat, picks, zero, now, now_se)
    out["run PPI"] = cell(*bounded(now, stdtrit(now_df, 1 - ALPHA / 2) * now_se, 0, 1), truth)
    if zero.any():  # not mirrored for runs with known zeros
        out["run PPI population"] = out["run PPI tuned"] = out["tuned / plain width"] = "—"
    else:
        out["run PPI population"] = cell(*interval(est["population"], se["population"], t, 0,
                                                   1), truth)
        out["run PPI tuned"] = cell(*interval(est["tuned"], se["tuned"], t, 0, 1), truth)
        out["tuned / plain width"] = f"{se['tuned'].mean() / se['default'].mean():.2f}"
    hy = y[picks]
    ci = [mean_ci(hy[s, :, c], bounds=(0, 1)) for s in range(studies) for c in range(runs)]
    lo = np.array([c[0] if c else 0.0 for c in ci]).reshape(studies, runs)
    hi = np.array([c[1] if c else 1.0 for c in ci]).reshape(studies, runs)
    out["human-only t"] = cell(lo, hi, truth)
    with np.errstate(invalid="ignore"):  # runs without an estimate in some studies
        out["bias"] = f"{np.nanmax(np.abs(np.nanmean(now - truth, axis=0))):.4f}"
    out["bias tuned"] = (f"{np.abs((est['tuned'] - truth).mean(axis=0)).max():.4f}"
                         if not zero.any() else "—")
    # pairs: every real pair, then a null copy of each run (its values at permuted queries)
    a, b = map(np.array, zip(*itertools.combinations(range(runs), 2)))
    perm = np.random.default_rng(seed + 1).permutation(big_n)
    y2, h2 = np.hstack([y, y[perm]]), np.hstack([yhat, yhat[perm]])
    z2 = np.hstack([zero, zero[perm]])
    na, nb = np.arange(runs), np.arange(runs) + runs
    fa, fb = np.concatenate([a, na]), np.concatenate([b, nb])
    dy, dh = y2[:, fa] - y2[:, fb], h2[:, fa] - h2[:, fb]
    pe, ps, pdf = pair_ppi(dy, dh, picks, z2[:, fa] & z2[:, fb])
    real = len(a)
    ptruth = dy.mean(axis=0)
    out["pair PPI"] = cell(*bounded(pe[:, :real], stdtrit(pdf, 1 - ALPHA / 2)[:, :real]
                                    * ps[:, :real], -1, 1), ptruth[:real])
    m = np.maximum(np.isfinite(ps[:, :real]).sum(axis=1, keepdims=True), 1)
    slo, shi = bounded(pe[:, :real], stdtrit(pdf[:, :real], 1 - ALPHA / (2 * m))
                       * ps[:, :real], -1, 1)
    held = np.isnan(slo) | ((slo - 1e-12 <= ptruth[:real]) & (ptruth[:real] <= shi + 1e-12))
    out["pair PPI simultaneous"] = (f"{100 * held.all(axis=1).mean():.1f}% "
                                    f"({np.nanmean(shi - slo):.3f})")
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(ps > 0, 2 * stdtr(pdf, -np.abs(pe) / np.where(ps > 0, ps, 1)),
                     np.where(ps == 0, np.where(pe == 0, 1.0, 0.0), np.nan))
    adjusted = holm_rows(p)
    if not np.allclose(adjusted[0], [np.nan if v is None else v for v in holm(list(p[0]))],
                       equal_nan=True):
        raise SystemExit("Holm differs from labeler's")
    out["FWER"] = f"{100 * (adjusted[:, real:] < ALPHA).any(axis=1).mean():.1f}%"
    return out


COLUMNS = ["run PPI", "run PPI population", "run PPI tuned", "tuned / plain width",
           "human-only t", "pair PPI",
           "pair PPI simultaneous", "FWER", "bias", "bias tuned"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--n", type=int, nargs="+", default=[5, 10, 15, 20])
    ap.add_argument("--no-lexical", action="store_true", help="simulated judges only")
    args = ap.parse_args()
    start = time.perf_counter()
    human, runs, queries, docs = load(args.data)
    qids = sorted(set(human["query_id"]))
    every = sorted(set(runs["system"]))
    complete = [s for s in every if set(runs.loc[runs["system"] == s, "query_id"]) >= set(qids)]
    labels = {name: simulated_labels(human, shift, sd, seed=i)
              for i, (name, (shift, sd)) in enumerate(JUDGES.items())}
    if not args.no_lexical:
        labels["lexical judge"] = lexical_labels(human, queries, docs)
    y_all = ndcg_table(human, runs, every, qids)
    print(f"TREC DL 2019: {len(qids)} queries, {len(every)} runs ({len(complete)} complete: "
          f"{', '.join(complete)}); {args.studies:,} studies per n\n")
    print("| LLM labels | runs | n | " + " | ".join(COLUMNS) + " |")
    print("| --- | --- | ---: | " + " | ".join("---:" for _ in COLUMNS) + " |")
    for name, llm in labels.items():
        yhat_all = ndcg_table(llm, runs, every, qids)
        for group, systems in (("complete", complete), ("all, --complete", every)):
            cols = [every.index(s) for s in systems]
            y, yhat = y_all[:, cols], yhat_all[:, cols]
            have = runs.groupby("system")["query_id"].agg(set)
            absent = np.array([[q not in have[s] for s in systems] for q in qids])
            for n in args.n:
                cells = simulate(y, yhat, n, args.studies, seed=n, absent=absent)
                print(f"| {name} | {group} ({len(systems)}) | {n} | "
                      + " | ".join(cells[c] for c in COLUMNS) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
