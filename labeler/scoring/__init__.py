"""The scoring stage: trec_eval-exact measures (NDCG@k and friends) of runs against qrels.

Usage::

    from labeler.scoring import score
    score("human.qrels", ["bm25.run"], k=10).summary
"""

from __future__ import annotations

from labeler._lazy import lazy_names
from labeler._lean import declare_lean

declare_lean(__name__ + ".")   # the scorer runs without pandas (labeler._lean)

_NAMES = {
    "score": "results",
    "evaluate": "results",
    "evaluate_files": "results",
    "ScoreResult": "results",
    "Measure": "measures",
    "parse_measure": "measures",
    "parse_measures": "measures",
}
__all__ = list(_NAMES)   # the public names are the lazy table's, in its order
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
