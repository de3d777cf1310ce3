"""Human and LLM labels side by side: agreement, calibration, the merged label set, blends of
judges, the judges' leaderboard, human samples, and the human-vs-LLM comparison of runs.

Usage::

    from labeler.reconciliation import reconcile, compare
    rec = reconcile(llm="labels.jsonl", human="human.qrels")
"""

from __future__ import annotations

from labeler._lazy import lazy_names

_NAMES = {
    "reconcile": "stage",
    "Reconciliation": "stage",
    "AgreementReport": "agreement",
    "Calibration": "calibrate",
    "Leaderboard": "leaderboard",
    "compare": "comparison",
    "Comparison": "comparison",
    "sample_queries": "sheets",
    "more_queries": "sheets",
    "labelled_queries": "labelled",
    "combine_human": "labelled",
    "Plan": "plan",
    "propose_sample": "sample",
    "certify": "certification",
    "Certification": "certification",
}
__all__ = ["AgreementReport", "Calibration", "Certification", "Comparison", "Leaderboard",
           "Plan", "Reconciliation", "certify", "combine_human", "compare", "labelled_queries",
           "more_queries", "propose_sample", "reconcile", "sample_queries"]
# agreement(), calibrate(), blend(), leaderboard() and plan() are reached through their modules
# (labeler.reconciliation.agreement.agreement ...): a package attribute named like a submodule
# becomes that submodule once it is imported.
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
