"""One way to print a number: every table, summary, report and log line goes through here.

Statistics and scores have 4 decimals everywhere; a missing or undefined value (None, NaN,
NA, inf) is written :data:`MISSING`. JSON keeps full precision and writes ``null``
(:func:`finite`).

Usage::

    from labeler import fmt
    fmt.num(0.01894)            # '0.0189'
    fmt.num(0.1826, signed=True)  # '+0.1826'
    fmt.interval([0.1, 0.3])    # '[0.1000, 0.3000]'
    fmt.num(None)               # 'n/a'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["DIGITS", "MISSING", "count", "finite", "interval", "num", "pvalue", "share", "usd"]

DIGITS = 4
"""Decimals of every statistic and score we print."""
MISSING = "n/a"
"""How an undefined or missing value is written."""


def finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (None, NA, NaN, inf, not a number)."""
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def num(value: Any, digits: int = DIGITS, *, signed: bool = False) -> str:
    """A statistic or score: fixed ``digits``, a sign with ``signed``; :data:`MISSING` if none.

    Usage: ``num(0.5)`` → ``'0.5000'``
    """
    f = finite(value)
    if f is None:
        return MISSING
    if f == 0:
        f = 0.0  # never "-0.0000"
    return f"{f:+.{digits}f}" if signed else f"{f:.{digits}f}"


def interval(bounds: Sequence[Any] | None, digits: int = DIGITS) -> str:
    """A confidence interval ``[lo, hi]``; :data:`MISSING` when there is none.

    Usage: ``interval([0.1, 0.3])`` → ``'[0.1000, 0.3000]'``
    """
    if not bounds or len(bounds) != 2 or finite(bounds[0]) is None or finite(bounds[1]) is None:
        return MISSING
    return f"[{num(bounds[0], digits)}, {num(bounds[1], digits)}]"


def pvalue(p: Any) -> str:
    """A p-value: 4 decimals, ``<0.0001`` below that.

    Usage: ``pvalue(0.00001)`` → ``'<0.0001'``
    """
    f = finite(p)
    if f is None:
        return MISSING
    return "<0.0001" if f < 0.0001 else f"{f:.4f}"


def share(value: Any) -> str:
    """A share as a whole percentage: ``share(0.253)`` → ``'25%'``."""
    f = finite(value)
    return MISSING if f is None else f"{f:.0%}"


def count(value: Any) -> str:
    """A whole number, :data:`MISSING` when there is none: ``count(3.0)`` → ``'3'``."""
    f = finite(value)
    return MISSING if f is None else str(int(f))


def usd(value: Any) -> str:
    """A cost estimate in dollars: ``usd(0.01234)`` → ``'$0.0123'``."""
    f = finite(value)
    return "unknown" if f is None else f"${f:.4f}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (legal in a JSON escape, never in UTF-8) replaced by
    U+FFFD, so it can be written; the same object when there is none.

    Usage: ``clean_text("a\\ud800b")  # 'a\\ufffdb'``
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def clean_data(value: Any) -> Any:
    """:func:`clean_text` on every string (and key) of JSON-like ``value``."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_data(k): clean_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_data(v) for v in value]
    return value
