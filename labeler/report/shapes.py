"""The one shape the renderers of :mod:`labeler.report` accept besides plain data: a result
that hands its plain data over as ``to_dict()`` (the JSON contract). The renderers read that
data, never the result's attributes, and never import the stages, so the stages may call
them.

Usage::

    from labeler.report.shapes import HasDict
    def render(result: HasDict) -> str: return str(result.to_dict()["headline"])
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["HasDict"]


class HasDict(Protocol):
    """A result that hands its plain data (the JSON contract) over as ``to_dict()``."""

    def to_dict(self) -> dict[str, Any]: ...
