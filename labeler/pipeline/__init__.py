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
__all__ = ["Config", "RunOutcome", "accept_run", "check_config", "compute_drift",
           "judge_anchors", "leaderboard_shift", "load_config", "parse_config", "read_anchors",
           "run_pipeline"]
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
