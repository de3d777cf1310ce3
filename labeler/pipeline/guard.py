"""The guard of a nightly job: did the judge change since the accepted run?

It did when fewer than half the anchors could be judged (it cannot be checked), or when the
model asked for, the model or ``system_fingerprint`` the endpoint reports, or
the prompt differ from the accepted run's, or when too many anchor grades flipped
(``[drift] max_anchor_flips``) or the anchors' agreement with the human grades fell too far
(``max_agreement_drop``, in Krippendorff's α). A run whose judge changed is marked
``judge_changed``; ``latest`` stays on the accepted run until ``labeler run --accept``.

Usage::

    from labeler.pipeline.guard import JudgeCheck, judge_changes
    changes = judge_changes(anchors_block, accepted_identity, max_anchor_flips=0.1,
                            max_agreement_drop=0.05)
    check = JudgeCheck(anchors=anchors_block, changes=tuple(changes), leaderboard=None)
    check.judge_changed, check.to_text()
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labeler import fmt

if TYPE_CHECKING:
    import pandas as pd

    from labeler.pipeline.config import Config

__all__ = ["JudgeCheck", "guard_stage", "judge_changes"]


def judge_changes(anchors: Mapping[str, Any], accepted: Mapping[str, Any] | None, *,
                  max_anchor_flips: float, max_agreement_drop: float) -> list[str]:
    """One sentence per change of the judge since the accepted run (empty: the same judge).

    ``anchors``: tonight's ``anchors`` block (:func:`labeler.pipeline.anchors.anchor_block`);
    ``accepted``: the accepted run's identity (None: no accepted run with anchors). What the
    endpoint does not report on either side is not compared.

    Usage: ``judge_changes(block, prev_identity, max_anchor_flips=0.1, max_agreement_drop=0.05)``
    """
    out: list[str] = []
    now = anchors.get("identity") or {}
    n, judged = anchors.get("n") or 0, anchors.get("n_judged") or 0
    if judged < n / 2:
        out.append(f"only {judged} of {n} anchors could be judged: the judge cannot be "
                   "checked")
    if accepted:
        for key, what in (("model", "model"), ("prompt_id", "prompt")):
            if accepted.get(key) and now.get(key) and accepted[key] != now[key]:
                out.append(f"{what} changed: {accepted[key]} → {now[key]}")
        for key, what in (("reported_models", "reported model"),
                          ("system_fingerprints", "system_fingerprint")):
            before, tonight = set(accepted.get(key) or ()), set(now.get(key) or ())
            new = sorted(tonight - before)
            if before and new:
                out.append(f"{what} changed: {', '.join(sorted(before))} → "
                           f"{', '.join(sorted(tonight))}")
    since = anchors.get("since")
    if since:
        share = since["changed_share"]
        if share > max_anchor_flips:
            out.append(f"{since['n_changed']} of {since['n_compared']} anchor grades changed "
                       f"({share:.1%} > {max_anchor_flips:.1%})")
        drop = since.get("alpha_drop")
        if drop is not None and drop > max_agreement_drop:
            a_then = (since.get("agreement_before") or {}).get("krippendorff_alpha_ordinal")
            a_now = (since.get("agreement_now") or {}).get("krippendorff_alpha_ordinal")
            out.append(f"anchors' agreement with the human grades fell: α {fmt.num(a_then)} → "
                       f"{fmt.num(a_now)} (drop {fmt.num(drop)} > {max_agreement_drop:g})")
    return out


@dataclass(frozen=True)
class JudgeCheck:
    """Tonight's anchors, what changed in the judge since the accepted run, and whether the
    leaderboard would change (``leaderboard``: :func:`labeler.pipeline.shift.leaderboard_shift`
    or None)."""

    anchors: Mapping[str, Any] | None
    changes: tuple[str, ...] = ()
    leaderboard: Mapping[str, Any] | None = None
    accepted: str | None = None
    thresholds: Mapping[str, float] = field(default_factory=dict)

    @property
    def judge_changed(self) -> bool:
        """True when the judge changed since the accepted run (``changes`` says how)."""
        return bool(self.changes)

    def to_dict(self) -> dict[str, Any]:
        """The ``judge_changed``, ``guard``, ``anchors`` and ``leaderboard`` keys of
        ``drift.json``."""
        return {"judge_changed": self.judge_changed,
                "guard": {"judge_changed": self.judge_changed, "changes": list(self.changes),
                          "accepted": self.accepted, "thresholds": dict(self.thresholds)},
                "anchors": dict(self.anchors) if self.anchors else None,
                "leaderboard": dict(self.leaderboard) if self.leaderboard else None}

    def to_text(self) -> str:
        """A few lines for the terminal: the anchors, the guard, the leaderboard's orders."""
        lines = anchor_lines(self.anchors) if self.anchors else []
        if self.judge_changed:
            lines.append(f"JUDGE CHANGED since the accepted run {self.accepted}:")
            lines += [f"  - {c}" for c in self.changes]
        elif self.anchors and self.accepted:
            lines.append(f"judge unchanged since the accepted run {self.accepted}")
        elif self.anchors:
            lines.append("no accepted run yet: tonight's anchors are the baseline")
        if self.leaderboard:
            lines += leaderboard_lines(self.leaderboard)
        return "\n".join(lines)


def anchor_lines(a: Mapping[str, Any]) -> list[str]:
    """The anchors in three or four lines: agreement, flips, identity, cost."""
    ag = a.get("agreement") or {}
    ci = ag.get("ci") or {}

    def with_ci(name: str) -> str:
        band = ci.get(name)
        return fmt.num(ag.get(name)) + (f" {fmt.interval(band)}" if band else "")

    lines = [f"anchors: {a['n_judged']} of {a['n']} judged ({a['n_failed']} failed); "
             f"agreement with the human grades: κ quadratic {with_ci('cohen_kappa_quadratic')},"
             f" α {with_ci('krippendorff_alpha_ordinal')}"]
    since = a.get("since")
    if since:
        then = (since.get("agreement_before") or {}).get("krippendorff_alpha_ordinal")
        lines.append(f"  changed since {since['run']}: {since['n_changed']} of "
                     f"{since['n_compared']} anchor grades ({since['changed_share']:.1%}); "
                     f"α then {fmt.num(then)}")
    ident = a.get("identity") or {}
    lines.append(f"  judge: {ident.get('model')}, prompt {ident.get('prompt_id')}; endpoint "
                 f"reports model {', '.join(ident.get('reported_models') or []) or '(none)'}, "
                 f"system_fingerprint "
                 f"{', '.join(ident.get('system_fingerprints') or []) or '(none)'}")
    c = a.get("cost") or {}
    cost = "unknown" if c.get("cost_usd") is None else fmt.usd(c["cost_usd"])
    lines.append(f"  anchors' cost: {c.get('calls')} calls, {c.get('input_tokens')} tokens in "
                 f"/ {c.get('output_tokens')} out, {cost}")
    return lines


def leaderboard_lines(lb: Mapping[str, Any], top: int = 10) -> list[str]:
    """Would the leaderboard change: both orders side by side, τ_AP, the changed verdicts."""
    runs = list(lb["runs"])
    width = max([len("accepted order"), *(len(r["system"]) for r in runs[:top])])
    k = lb["k"]
    lines = [f"would the leaderboard change? NDCG@{k} under the accepted labels "
             f"({lb.get('previous')}) and tonight's:",
             f"  {'#':>3}  {'accepted order':<{width}}  {'NDCG':>6}   {'#':>3}  "
             f"{'tonight order':<{width}}  {'NDCG':>6}"]
    by = {r["system"]: r for r in runs}
    for i, (sb, sn) in enumerate(zip(lb["order_before"], lb["order_now"])):
        if i >= top:
            lines.append(f"  … {len(runs) - top} more runs (drift.json)")
            break
        lines.append(f"  {i + 1:>3}  {sb:<{width}}  {fmt.num(by[sb]['before']):>6}   "
                     f"{i + 1:>3}  {sn:<{width}}  {fmt.num(by[sn]['now']):>6}")
    band = lb.get("tau_ap_ci")
    lines.append(f"  τ_AP {fmt.num(lb.get('tau_ap'))}"
                 + (f" {fmt.interval(band)} (95%, {lb['bootstrap']} query resamples)"
                    if band else "")
                 + ("; the order changed" if lb.get("order_changed") else "; same order"))
    changed = lb.get("changed_pairs") or []
    lines.append(f"  pairs whose verdict changes: {len(changed)} of {lb.get('n_pairs')}")
    for p in changed[:top]:
        before = fmt.num(p["before"]["delta"], signed=True)
        lines.append(f"    {p['a']} vs {p['b']}: {p['change']} (Δ {before} → "
                     f"{fmt.num(p['now']['delta'], signed=True)})")
    return lines


def guard_stage(cfg: Config, anchors: pd.DataFrame, labels: pd.DataFrame,
                runs: pd.DataFrame | None, run_dir: Path, previous: Path | None,
                prev_labels: pd.DataFrame | None) -> JudgeCheck:
    """Judge the anchors (written to ``run_dir/anchors.jsonl``), compare them and the judge's
    identity with the accepted run ``previous`` (None: the first run), and score tonight's
    runs under the accepted labels and tonight's.

    Usage: ``guard_stage(cfg, read_anchors(cfg), records, runs, run_dir, latest, prev_labels)``
    """
    from labeler import io
    from labeler.pipeline.anchors import ANCHORS_FILE, anchor_block, judge_anchors
    from labeler.pipeline.shift import leaderboard_shift

    run = judge_anchors(cfg, anchors)
    io.write_labels(run.records, run_dir / ANCHORS_FILE)
    prev_id = previous.name if previous is not None else None
    prev_records, accepted = None, None
    if previous is not None:
        if (previous / ANCHORS_FILE).is_file():
            prev_records = io.read_labels(previous / ANCHORS_FILE)
        accepted = _accepted_identity(previous)
    stats = cfg.statistics.options()
    d = cfg.drift
    block = anchor_block(anchors, run, cfg.judge.model, previous=prev_id,
                         prev_records=prev_records,
                         bootstrap=cfg.human.bootstrap if cfg.human is not None else 1000,
                         seed=stats.seed)
    changes = judge_changes(block, accepted, max_anchor_flips=d.max_anchor_flips,
                            max_agreement_drop=d.max_agreement_drop)
    board = None
    if prev_labels is not None and runs is not None:
        board = leaderboard_shift(prev_labels, labels, runs, k=cfg.k[0], gain=cfg.gain,
                                  include_empty=cfg.include_empty, options=stats,
                                  previous=prev_id)
    return JudgeCheck(block, tuple(changes), board, prev_id,
                      {"max_anchor_flips": d.max_anchor_flips,
                       "max_agreement_drop": d.max_agreement_drop})


def _accepted_identity(previous: Path) -> dict[str, Any] | None:
    """The accepted run's judge identity: from its anchors, else its manifest's model and
    prompt (a run from before anchors were configured)."""
    import json

    def read(name: str) -> dict[str, Any]:
        try:
            data = json.loads((previous / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    ident = (read("drift.json").get("anchors") or {}).get("identity")
    if ident:
        return dict(ident)
    judge = read("manifest.json").get("judge") or {}
    prompt = judge.get("prompt_id")
    if not judge or not isinstance(prompt, str):
        return None
    return {"model": judge.get("model"), "prompt_id": prompt}
