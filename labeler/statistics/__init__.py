"""Statistics on per-query values: intervals, paired tests, Holm, PPI, verdicts.

Pure functions on arrays (numpy/scipy); they know nothing of files or runs.

Usage::

    from labeler.statistics import mean_ci, paired_test
    mean_ci([0.4, 0.5, 0.7])
"""

from __future__ import annotations

from labeler._lazy import lazy_names

_NAMES = {
    "mean_ci": "inference",
    "paired_test": "inference",
    "PairedTest": "inference",
    "holm": "inference",
    "PPIResult": "inference",
    "StatsOptions": "options",
    "Significance": "verdicts",
    "significance": "verdicts",
    "headline": "verdicts",
}
__all__ = ["PPIResult", "PairedTest", "Significance", "StatsOptions", "headline", "holm", "mean_ci",
           "paired_test", "significance"]
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
