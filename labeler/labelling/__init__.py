"""The labelling stage: pool pairs, ask the judge for each (cached, retried, rate-limited),
locally or through a provider's batch API, and keep every answer or failure.

Usage::

    from labeler.labelling import label
    res = label(pairs, model="lexical")
"""

from __future__ import annotations

from labeler._lazy import lazy_names

_NAMES = {
    "label": "stage",
    "LabelResult": "result",
    "LabelSummary": "result",
    "pool": "pooling",
    "pool_pairs": "pooling",
    "LabelCache": "cache",
    "RetryPolicy": "limits",
    "RateLimiter": "limits",
}
__all__ = list(_NAMES)   # the public names are the lazy table's, in its order
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
