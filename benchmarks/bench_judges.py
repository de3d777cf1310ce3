"""The judge leaderboard and blends on all 33 LLMJudge 2024 submissions (TREC DL 2023 passages).

1. `leaderboard` on the 33 submitted label sets against the human test labels (4,423 pairs):
   each submission's Cohen's kappa and Krippendorff's alpha next to the published values
   (Rahmani et al. 2025, "Judging the Judges", arXiv 2502.13908, Table 3; four decimals).
   Two submissions hold grades outside 0-3 (RMITIR-llama70B: 5, h2oloo-zeroshot2: 10); like
   the paper's figures, they are clipped to 3 (``--grade-map 5=3,10=3``).
2. `blend` of the five submissions with the best alpha (mean, median, vote) against the best
   single one.

Prints Markdown tables; exits 1 if a published value is not reproduced. Usage::

    python benchmarks/bench_judges.py [--data /work/shared/data/llmjudge]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# Table 3 of Rahmani et al. 2025: submission -> (Cohen's kappa, Krippendorff's alpha).
PUBLISHED: dict[str, tuple[float, float]] = {
    "NISTRetrieval-instruct0": (0.1877, 0.3819), "NISTRetrieval-instruct1": (0.1874, 0.3812),
    "NISTRetrieval-instruct2": (0.1880, 0.3821), "NISTRetrieval-reason0": (0.1844, 0.3874),
    "NISTRetrieval-reason1": (0.1845, 0.3872), "NISTRetrieval-reason2": (0.1838, 0.3874),
    "Olz-exp": (0.2519, 0.4701), "Olz-gpt4o": (0.2625, 0.5020),
    "Olz-halfbin": (0.2064, 0.4536), "Olz-multiprompt": (0.2445, 0.4551),
    "Olz-somebin": (0.2109, 0.4471), "RMITIR-GPT4o": (0.2388, 0.4108),
    "RMITIR-llama38b": (0.2006, 0.3873), "RMITIR-llama70B": (0.2654, 0.4873),
    "TREMA-4prompts": (0.1829, 0.2888), "TREMA-CoT": (0.1961, 0.3852),
    "TREMA-all": (0.1471, 0.3855), "TREMA-direct": (0.1742, 0.3729),
    "TREMA-naiveBdecompose": (0.1741, 0.3579), "TREMA-nuggets": (0.0604, 0.1691),
    "TREMA-other": (0.1408, 0.2712), "TREMA-questions": (0.1137, 0.3148),
    "TREMA-rubric0": (0.0779, 0.1036), "TREMA-sumdecompose": (0.2088, 0.3926),
    "h2oloo-fewself": (0.2774, 0.4958), "h2oloo-zeroshot1": (0.2817, 0.4812),
    "h2oloo-zeroshot2": (0.2589, 0.3898), "prophet-setting1": (0.1823, 0.4069),
    "prophet-setting2": (0.1757, 0.3144), "prophet-setting4": (0.1471, 0.1623),
    "willia-umbrela1": (0.2863, 0.4918), "willia-umbrela2": (0.2688, 0.4556),
    "willia-umbrela3": (0.2741, 0.4535),
}
GRADE_MAP = {"5": 3, "10": 3}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/llmjudge"),
                        help="folder with test-human.qrels and submissions/*.qrels")
    parser.add_argument("--top", type=int, default=5, help="how many of the best to blend")
    args = parser.parse_args()

    from labeler import fmt
    from labeler.reconciliation.blend import blend
    from labeler.reconciliation.leaderboard import leaderboard

    human = args.data / "test-human.qrels"
    sets = {p.stem: p for p in sorted((args.data / "submissions").glob("*.qrels"))}
    if not sets:
        print(f"no submissions under {args.data / 'submissions'}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    board = leaderboard(human=human, llm=sets, grade_map=GRADE_MAP)
    wall = time.perf_counter() - start

    print(f"## Judges: {len(sets)} LLMJudge submissions on {board.n} pairs "
          f"(leaderboard in {fmt.num(wall, 1)} s)\n")
    print("| # | submission | kappa | published | alpha | published | exact | k_quad | match |")
    print("|---|---|---|---|---|---|---|---|---|")
    mismatches = 0
    for rank, (name, rep) in enumerate(board.judges.items(), 1):
        kappa, alpha = rep.cohen_kappa or float("nan"), rep.krippendorff_alpha_ordinal or 0.0
        pub = PUBLISHED.get(name)
        ok = pub is not None and round(kappa, 4) == pub[0] and round(alpha, 4) == pub[1]
        mismatches += pub is not None and not ok
        pk, pa = (fmt.num(pub[0]), fmt.num(pub[1])) if pub else (fmt.MISSING, fmt.MISSING)
        print(f"| {rank} | {name} | {fmt.num(kappa)} | {pk} | {fmt.num(alpha)} | {pa} | "
              f"{fmt.num(rep.exact_agreement)} | {fmt.num(rep.cohen_kappa_quadratic)} | "
              f"{'yes' if ok else ('NO' if pub else 'n/a')} |")
    print(f"\n{len(board.judges) - mismatches} of {len(board.judges)} submissions reproduce the "
          "published kappa and alpha to four decimals.\n")

    best = board.order[:args.top]
    single = board.judges[best[0]].krippendorff_alpha_ordinal or 0.0
    print(f"## Blend of the {len(best)} best by alpha: {', '.join(best)}\n")
    print("| label set | alpha | kappa | exact | mean signed difference |")
    print("|---|---|---|---|---|")
    top = board.judges[best[0]]
    print(f"| best single ({best[0]}) | {fmt.num(single)} | {fmt.num(top.cohen_kappa)} | "
          f"{fmt.num(top.exact_agreement)} | {fmt.num(top.mean_signed_difference, signed=True)} |")
    for method in ("mean", "median", "vote"):
        mixed = blend({n: sets[n] for n in best}, method=method,  # type: ignore[arg-type]
                      grade_map=GRADE_MAP)
        rep = leaderboard(human=human, llm={method: mixed}).judges[method]
        print(f"| blend, {method} | {fmt.num(rep.krippendorff_alpha_ordinal)} | "
              f"{fmt.num(rep.cohen_kappa)} | {fmt.num(rep.exact_agreement)} | "
              f"{fmt.num(rep.mean_signed_difference, signed=True)} |")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
