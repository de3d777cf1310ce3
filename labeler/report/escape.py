"""Text from the data made safe where it is shown: a Markdown table cell or a terminal.

Usage::

    from labeler.report.escape import md_escape, plain
    md_escape("a | b")     # 'a \\| b'
    plain("\x1b[31mred")    # '[31mred'
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["md_escape", "plain"]


_MD_CHARS = re.compile(r"([\\`*_\[\]|#~<>&])")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Bidirectional controls (a right-to-left override makes ``exe.txt`` read ``txt.exe``):
shown as their escape, ``\\u202e``, never obeyed."""


def _bidi(text: str) -> str:
    return _BIDI.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def md_escape(value: Any) -> str:
    """Text safe in a Markdown table cell: Markdown syntax, HTML brackets, ampersands and
    pipes backslash-escaped (readable as plain text too: no HTML entities), line breaks
    flattened."""
    s = " ".join(_CONTROL.sub(" ", _bidi(str(value))).split())
    return _MD_CHARS.sub(r"\\\1", s)


def plain(value: Any) -> str:
    """Text safe on a terminal: control characters (escape sequences) removed,
    bidirectional controls shown escaped (``\\u202e``)."""
    return _CONTROL.sub("", _bidi(str(value)))
