"""Judges: the :class:`Judge` interface, the OpenAI-compatible LLM judge, the lexical baseline.

Usage::

    from labeler.judges import make_judge
    judge = make_judge("lexical")                                  # offline baseline
    judge = make_judge("gpt-4o-mini", prompt="default", samples=3)  # OPENAI_API_KEY
"""

from __future__ import annotations

from typing import Any

from .base import LEXICAL_MODEL, Judge, LexicalJudgeAdapter, RetryableError, Verdict

LEXICAL_NAMES = ("lexical", LEXICAL_MODEL)


def make_judge(model: str, **options: Any) -> Judge:
    """The judge for ``model``: ``"lexical"`` is the offline baseline (options ignored),
    anything else an :class:`~labeler.judges.openai_judge.OpenAIJudge` with ``options``."""
    if model in LEXICAL_NAMES:
        return LexicalJudgeAdapter()
    from .openai_judge import OpenAIJudge

    return OpenAIJudge(model, **options)


__all__ = ["LEXICAL_MODEL", "Judge", "LexicalJudgeAdapter", "RetryableError", "Verdict",
           "make_judge"]
