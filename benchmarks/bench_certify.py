"""Does `labeler certify` hold at every look, and how soon does it name the best run?

On TREC DL 2019 (passages; 43 judged queries, NIST grades 0–3). The truth is what full
human labelling reports: each run's mean NDCG@10 over the 43 queries under the NIST labels,
and each difference of two runs. A trajectory is one random order of the 43 queries (the
design's order); people label them one by one and look after every query from the 5th to the
last. LLM labels are simulated as in ``bench_coverage.py`` (human grade + shift + Gaussian
noise, rounded and clipped to 0..3, seeded).

Two boards: the three ICT runs (complete: they rank all 43 queries) and a clear-winner board
of runs made of real rows: ICT-BERT2 and three runs that take, query by query, the ranking of
a real submitted run (the first of a list of runs that ranks the query), the runner-up 0.12
behind (queries where two of them take the same run's list are known zeros).

Per board and judge it prints, with Monte-Carlo standard errors:

- the share of trajectories in which some run or pair sequence ever misses its truth
  (looking after every query from the 5th), and the same for the fixed-n PPI intervals
  (95% each; and Bonferroni-simultaneous) read under the same looking rule;
- the share of trajectories with a pair certified the wrong way round;
- the median widths at n = 10, 20, 30 of the sequences and of the fixed-n PPI intervals;
- the median number of labelled queries at which the best run is certified (it beats every
  other run), against the number `labeler plan --per-pair` names for the same gaps (computed
  from the spread of all 43 queries: the plan's best case);
- the same for the sequence taken literally (differences in [−1, 1], residual bets only, no
  per-query bounds or known zeros).

Usage::

    nice -n 10 python benchmarks/bench_certify.py --trajectories 200
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import stdtrit

from labeler import io
from labeler.reconciliation.certification import pair_bounds, top_lists
from labeler.scoring import results as scoring
from labeler.statistics import planning
from labeler.statistics.certify import batch_cs

DATA = Path("/work/shared/data/trec-dl-2019")
K = 10
ALPHA = 0.05
FIRST_LOOK = 5
TRUNCATION: float | None = None   # None: labeler's default
JUDGES = {"simulated +0.2, sd 0.5": (0.2, 0.5), "simulated +0.5, sd 0.8": (0.5, 0.8)}
ICT = ["ICT-BERT2", "ICT-CKNRM_B", "ICT-CKNRM_B50"]
BEST = "ICT-BERT2"
# the clear-winner board's other runs: per query, the list of the first run that ranks it
MIXES = {"mix-srch": ("srchvrs_ps_run1", "bm25tuned_p", "ICT-CKNRM_B50"),
         "mix-unh-bert": ("UNH_exDL_bm25", "p_exp_bert", "ICT-CKNRM_B50"),
         "mix-unh-bm25": ("UNH_exDL_bm25", "bm25tuned_p", "ICT-CKNRM_B50")}


def simulated(human: pd.DataFrame, shift: float, sd: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = human["grade"].to_numpy(dtype=float) + shift + rng.normal(0, sd, len(human))
    return human.assign(grade=np.clip(np.rint(g), 0, 3).astype(int))


def ndcg(qrels: pd.DataFrame, runs: pd.DataFrame, systems: list[str],
         queries: list[str]) -> np.ndarray:
    pq = scoring.evaluate(qrels, runs, k=K, include_empty=True).per_query
    wide = pq.pivot_table(index="query_id", columns="system", values="ndcg", aggfunc="first")
    return wide.reindex(index=queries, columns=systems).fillna(0.0).to_numpy(dtype=float)


def board(names: list[str], y: np.ndarray, yhat: np.ndarray,
          lists: list[list[tuple[str, ...] | None]], systems: list[str]
          ) -> tuple[np.ndarray, np.ndarray, list[list[tuple[str, ...] | None]]]:
    """Per-query tables of a board: a real run, or a mixture (the first source ranking the
    query)."""
    ix = {s: i for i, s in enumerate(systems)}
    cols = []
    for name in names:
        src = MIXES.get(name, (name,))
        pick = [next((ix[s] for s in src if lists[q][ix[s]] is not None), ix[src[-1]])
                for q in range(len(lists))]
        cols.append(pick)
    c = np.array(cols).T                                        # queries × board
    rows = np.arange(len(lists))[:, None]
    return (y[rows, c], yhat[rows, c],
            [[lists[q][c[q, j]] for j in range(len(names))] for q in range(len(lists))])


def series(y: np.ndarray, yhat: np.ndarray, lists: list[list[tuple[str, ...] | None]]
           ) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Every run and pair as (name, human values, LLM values, lower, upper), as certify
    builds them."""
    has = np.array([[t is not None for t in row] for row in lists], dtype=bool)
    out = []
    for j in range(y.shape[1]):
        out.append((f"run{j}", y[:, j], np.where(has[:, j], yhat[:, j], 0.0),
                    np.zeros(len(y)), np.where(has[:, j], 1.0, 0.0)))
    for a, b in itertools.combinations(range(y.shape[1]), 2):
        lo, hi = pair_bounds(lists, has, a, b)
        zero = lo == hi
        out.append((f"{a}-{b}", np.where(zero, 0.0, y[:, a] - y[:, b]),
                    np.where(zero, 0.0, yhat[:, a] - yhat[:, b]), lo, hi))
    return out


def sequences(s: tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
              perms: np.ndarray, alpha: float, literal: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:
    """The confidence sequence of one run or pair along every trajectory: (B, N + 1)."""
    _, y, yhat, lo_b, hi_b = s
    big_n = len(y)
    if literal:   # Δ = human − LLM in [−1, 1], residual bets only, no known zeros
        lo_b, hi_b = yhat - 1.0, yhat + 1.0
        streams: tuple[str, ...] = ("residual",)
    else:
        streams = ("human", "residual")
    info = lo_b < hi_b
    known_sum = float(lo_b[~info].sum())
    n_i = int(info.sum())
    if n_i == 0:
        flat = np.full((len(perms), big_n + 1), known_sum / big_n)
        return flat, flat.copy()
    order = np.array([p[info[p]] for p in perms])               # informative, in order
    t_info = np.concatenate([np.zeros((len(perms), 1), int), np.cumsum(info[perms], 1)], 1)
    lo, hi = batch_cs(y[order], yhat[order], lo_b[order], hi_b[order], n=n_i, alpha=alpha,
                      streams=streams, **({"truncation": TRUNCATION} if TRUNCATION else {}))
    share = n_i / big_n
    rows = np.arange(len(perms))[:, None]
    return known_sum / big_n + share * lo[rows, t_info], known_sum / big_n + share * hi[rows,
                                                                                       t_info]


def fixed_ppi(s: tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
              perms: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The default fixed-n PPI interval (finite-population, t quantile) after each look;
    NaN below 5 looks or where the labelled differences do not vary."""
    _, y, yhat, _, _ = s
    big_n = len(y)
    d = (y - yhat)[perms]
    t = np.arange(1, big_n + 1)
    mean = np.cumsum(d, 1) / t
    var = (np.cumsum(d * d, 1) - t * mean ** 2) / np.maximum(t - 1, 1)
    se = np.sqrt(np.maximum(1 - t / big_n, 0) * np.maximum(var, 0) / t)
    with np.errstate(invalid="ignore"):
        q = stdtrit(np.maximum(t - 1, 1), 1 - alpha / 2)
    est = yhat.mean() + mean
    ok = (t >= FIRST_LOOK) & (se > 1e-12)
    lo = np.where(ok, est - q * se, np.nan)
    hi = np.where(ok, est + q * se, np.nan)
    pad = np.full((len(perms), 1), np.nan)
    return np.concatenate([pad, lo], 1), np.concatenate([pad, hi], 1)


def mc(p: float, b: int) -> str:
    return f"{100 * p:.1f} ± {100 * np.sqrt(max(p * (1 - p), 1 / b) / b):.1f}"


def study(name: str, y: np.ndarray, yhat: np.ndarray, lists: list[list[tuple[str, ...] | None]],
          n_traj: int, seed: int, best: int | None) -> dict[str, str]:
    big_n = len(y)
    rng = np.random.default_rng(seed)
    perms = np.array([rng.permutation(big_n) for _ in range(n_traj)])
    ss = series(y, yhat, lists)
    each = ALPHA / len(ss)
    looks = slice(FIRST_LOOK, big_n + 1)
    miss = np.zeros(n_traj, bool)
    wrong = np.zeros(n_traj, bool)
    miss_ppi = np.zeros(n_traj, bool)
    miss_sim = np.zeros(n_traj, bool)
    widths: dict[str, list[np.ndarray]] = {"run": [], "pair": [], "ppi run": [], "ppi pair": []}
    certified_at: dict[str, np.ndarray] = {}
    need: dict[str, np.ndarray] = {"certify": np.ones((n_traj, big_n + 1), bool),
                                   "literal": np.ones((n_traj, big_n + 1), bool)}
    for s in ss:
        truth = float(s[1].mean())
        lo, hi = sequences(s, perms, each)
        miss |= ((lo[:, looks] > truth + 1e-12) | (hi[:, looks] < truth - 1e-12)).any(1)
        is_pair = "-" in s[0]
        if is_pair:
            wrong |= (((lo[:, looks] > 0) & (truth <= 0)) | ((hi[:, looks] < 0) & (truth >= 0))
                      ).any(1)
        widths["pair" if is_pair else "run"].append(hi - lo)
        plo, phi = fixed_ppi(s, perms, ALPHA)
        miss_ppi |= np.nan_to_num((plo[:, looks] > truth) | (phi[:, looks] < truth)).astype(
            bool).any(1)
        slo, shi = fixed_ppi(s, perms, each)
        miss_sim |= np.nan_to_num((slo[:, looks] > truth) | (shi[:, looks] < truth)).astype(
            bool).any(1)
        widths["ppi pair" if is_pair else "ppi run"].append(phi - plo)
        if best is not None and is_pair:
            a, b = map(int, s[0].split("-"))
            if best in (a, b):
                sign = 1 if a == best else -1
                need["certify"] &= lo > 0 if sign > 0 else hi < 0
                llo, lhi = sequences(s, perms, each, literal=True)
                need["literal"] &= llo > 0 if sign > 0 else lhi < 0
    out = {"board": name, "trajectories": str(n_traj),
           "ever misses (certify)": mc(float(miss.mean()), n_traj),
           "wrong-sign certification": mc(float(wrong.mean()), n_traj),
           "ever misses (fixed-n PPI, 95% each)": mc(float(miss_ppi.mean()), n_traj),
           "ever misses (fixed-n PPI, Bonferroni)": mc(float(miss_sim.mean()), n_traj)}
    for n in (10, 20, 30):
        for kind in ("run", "pair"):
            cs = np.nanmedian(np.stack(widths[kind])[:, :, n]) if widths[kind] else np.nan
            pp = np.nanmedian(np.stack(widths[f"ppi {kind}"])[:, :, n]) if widths[kind] \
                else np.nan
            out[f"width {kind} n={n} (CS / PPI)"] = f"{cs:.2f} / {pp:.2f}"
    if best is not None:
        for key, done in need.items():
            first = np.where(done[:, 1:].any(1), done[:, 1:].argmax(1) + 1, big_n + 1)
            certified_at[key] = first
            boot = np.median(rng.choice(first, (200, n_traj)), axis=1)
            out[f"best certified at (median, {key})"] = (
                f"{np.median(first):.0f} ± {boot.std():.1f}"
                f" (never: {100 * (first > big_n).mean():.0f}%)")
        plans = [planning.pair_advice(y[:, best] - y[:, j], yhat[:, best] - yhat[:, j], big_n,
                                      float(y[:, best].mean() - y[:, j].mean())).n
                 for j in range(y.shape[1]) if j != best]
        out["plan --per-pair names"] = str(max((p for p in plans if p is not None), default=None))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trajectories", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--truncation", type=float, default=None,
                    help="the bets' truncation (default: labeler's)")
    args = ap.parse_args()
    global TRUNCATION
    TRUNCATION = args.truncation
    t0 = time.time()
    human = io.read_qrels(args.data / "2019qrels-pass.txt")
    runs = io.read_runs(sorted((args.data / "runs").glob("*.run")))
    systems = sorted(runs["system"].unique())
    queries = sorted(human["query_id"].unique())
    lists = top_lists(runs, K, queries, systems)
    y_all = ndcg(human, runs, systems, queries)
    rows = []
    for j, (judge, (shift, sd)) in enumerate(JUDGES.items()):
        llm = simulated(human, shift, sd, seed=11 + j)
        yhat_all = ndcg(llm, runs, systems, queries)
        for name, names in (("3 ICT runs", ICT), ("clear winner", [BEST, *MIXES])):
            y, yhat, ls = board(names, y_all, yhat_all, lists, systems)
            truth = y.mean(0)
            best = int(np.argmax(truth)) if name == "clear winner" else None
            row = study(name, y, yhat, ls, args.trajectories, args.seed + j, best)
            row["judge"] = judge
            row["means"] = ", ".join(f"{m:.3f}" for m in truth)
            rows.append(row)
            print(row, flush=True)
    table = pd.DataFrame(rows).set_index(["board", "judge"]).T
    print(table.to_markdown())
    print(f"\n{args.trajectories} trajectories per setting, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
