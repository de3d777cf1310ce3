"""The nightly job (``labeler run``): its config, run directories, drift, anchors and the
judge guard, provenance, checks.

Usage::

    from labeler.pipeline import load_config, run_pipeline
    run_pipeline(load_config("labeler.toml"))
"""

from __future__ import annotations

from labeler._lazy import lazy_names

_NAMES = {
    "Config": "config",
    "load_config": "config",
    "parse_config": "config",
    "run_pipeline": "nightly",
    "RunOutcome": "nightly",
    "check_config": "check",
    "compute_drift": "drift",
    "accept_run": "rundir",
    "read_anchors": "anchors",
    "judge_anchors": "anchors",
    "leaderboard_shift": "shift",
}
__all__ = list(_NAMES)   # the public names are the lazy table's, in its order
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
