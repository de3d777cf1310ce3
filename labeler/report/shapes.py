"""The shapes the renderers read: what a comparison, a label result, a score result, a
judges' leaderboard or a reconcile result must offer to be drawn.

The renderers of :mod:`labeler.report` take any object of these shapes (the stages' result
classes are such objects) and never import the stages, so the stages may call them.

Usage::

    from labeler.report.shapes import ComparisonView
    def summary(c: ComparisonView) -> str: return c.headline
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["AgreementView", "ComparisonView", "HasDict", "LabelResultView",
           "ReconciliationView", "ScoreResultView", "SignificanceView"]


class HasDict(Protocol):
    """A result that hands its plain data (the JSON contract) over as ``to_dict()``."""

    def to_dict(self) -> dict[str, Any]: ...


class SignificanceView(Protocol):
    """Intervals, pair verdicts and PPI estimates of a comparison."""

    @property
    def options(self) -> Any: ...

    @property
    def counts(self) -> dict[str, int]: ...

    @property
    def n_shared(self) -> Any: ...

    @property
    def notes(self) -> Any: ...

    @property
    def pairs(self) -> Any: ...

    @property
    def pair_mode(self) -> Any: ...

    @property
    def runs(self) -> Any: ...

    def counts_line(self) -> str: ...

    def run_ci(self, system: str, label_set: str) -> tuple[float, float] | None: ...

    def run_ppi(self, system: str) -> dict[str, Any] | None: ...

    def pairs_to_dicts(self) -> list[dict[str, Any]]: ...


class ComparisonView(Protocol):
    """NDCG of runs under human and LLM labels, the order statistics and the verdicts."""

    @property
    def k(self) -> Any: ...

    @property
    def label(self) -> Any: ...

    @property
    def gain(self) -> Any: ...

    @property
    def measure(self) -> Any: ...

    @property
    def include_empty(self) -> Any: ...

    @property
    def complete(self) -> Any: ...

    @property
    def runs(self) -> Any: ...

    @property
    def per_query(self) -> Any: ...

    @property
    def systems(self) -> Any: ...

    @property
    def swaps(self) -> Any: ...

    @property
    def swap_count(self) -> int: ...

    @property
    def n_pairs(self) -> Any: ...

    @property
    def kendall_tau(self) -> Any: ...

    @property
    def spearman_rho(self) -> Any: ...

    @property
    def order_human(self) -> Any: ...

    @property
    def order_llm(self) -> Any: ...

    @property
    def ideal(self) -> Any: ...

    @property
    def most_changed(self) -> Any: ...

    @property
    def headline(self) -> Any: ...

    @property
    def advice(self) -> Any: ...

    @property
    def planning_line(self) -> str | None: ...

    @property
    def significance(self) -> SignificanceView: ...

    def ideal_summary(self) -> dict[str, Any]: ...

    def to_dict(self) -> dict[str, Any]: ...


class AgreementView(Protocol):
    """An agreement report."""

    def to_dict(self) -> dict[str, Any]: ...


class LabelResultView(Protocol):
    """A labelling job's records and summary."""

    @property
    def records(self) -> Any: ...

    @property
    def summary(self) -> Any: ...


class ReconciliationView(Protocol):
    """A reconcile result."""

    @property
    def merged_counts(self) -> Any: ...

    @property
    def agreement(self) -> AgreementView | None: ...


class ScoreResultView(Protocol):
    """Scores of runs against qrels."""

    @property
    def values(self) -> Any: ...

    @property
    def systems(self) -> Any: ...

    @property
    def measures(self) -> Any: ...

    @property
    def ks(self) -> Any: ...

    @property
    def ideal(self) -> Any: ...

    @property
    def gain(self) -> Any: ...

    @property
    def complete(self) -> Any: ...

    @property
    def summary(self) -> Any: ...

    def to_dict(self) -> dict[str, Any]: ...

