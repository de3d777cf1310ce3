"""Statistics on per-query values: intervals, paired tests, Holm, PPI, verdicts.

Pure functions on arrays (numpy/scipy); they know nothing of files or runs.

Usage::

    from labeler.statistics import mean_ci, paired_test, ppi_mean
    mean_ci([0.4, 0.5, 0.7])
    ppi_mean(human_values, llm_values_same_queries, llm_values_other_queries).ci
"""

from __future__ import annotations

from labeler._lazy import lazy_names

_NAMES = {
    "mean_ci": "inference",
    "paired_test": "inference",
    "PairedTest": "inference",
    "holm": "pairs",
    "holm_array": "pairs",
    "paired_t_many": "pairs",
    "select_pairs": "pairs",
    "ppi_mean": "ppi",
    "ppi_mean_diff": "ppi",
    "pair_family": "ppi",
    "PPIEstimate": "ppi",
    "PairFamily": "ppi",
    "StatsOptions": "options",
    "Significance": "verdicts",
    "significance": "verdicts",
    "headline": "verdicts",
    "mean_cs": "certify",
    "MeanCS": "certify",
}
__all__ = ["MeanCS", "PPIEstimate", "PairFamily", "PairedTest", "Significance", "StatsOptions",
           "headline", "holm", "holm_array", "mean_ci", "mean_cs", "pair_family", "paired_t_many",
           "paired_test", "ppi_mean", "ppi_mean_diff", "select_pairs", "significance"]
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
