"""Judges: the :class:`Judge` interface, the OpenAI-compatible LLM judge, the lexical baseline.

Usage::

    from labeler.judges import make_judge
    from labeler.settings import JudgeConfig
    judge = make_judge(JudgeConfig(model="lexical"))                   # offline baseline
    judge = make_judge(JudgeConfig(model="gpt-4o-mini", samples=3), api_key="sk-...")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from labeler.errors import ConfigError
from labeler.judges.base import LEXICAL_MODEL, Judge, RetryableError, Verdict
from labeler.judges.lexical import LexicalJudgeAdapter

if TYPE_CHECKING:
    from labeler.judges.prompts import Prompt, Topics
    from labeler.settings import JudgeConfig

LEXICAL_NAMES = ("lexical", LEXICAL_MODEL)


def build_prompt(prompt: str | Prompt, *, examples: Any = None, shots: int | None = None,
                 topics: Topics | None = None) -> Prompt:
    """The prompt a judge uses: the template, with few-shot ``examples`` (a file or a
    DataFrame of human-labelled pairs; ``shots`` of them, default 4) and query ``topics``.

    Usage: ``build_prompt("default", examples="sample.csv", shots=4)``
    """
    from labeler.judges.prompts import load_prompt

    p = load_prompt(prompt)
    if examples is not None:
        from labeler.judges.shots import DEFAULT_SHOTS, Shots  # reads tables: pandas

        p = p.with_context(Shots(examples, n=shots or DEFAULT_SHOTS))
    if topics is not None:
        p = p.with_context(topics)
    return p


def make_judge(config: JudgeConfig, *, api_key: str | None = None,
               topics: Topics | None = None) -> Judge:
    """The judge ``config`` describes: ``model = "lexical"`` is the offline baseline (other
    settings ignored), anything else an
    :class:`~labeler.judges.openai_judge.OpenAIJudge`. ``api_key`` defaults to the variable
    named by ``config.api_key_env``; it is handed to the client and kept nowhere else.
    The prompt carries the few-shot ``examples`` and the queries' ``topics`` (descriptions,
    narratives)."""
    if config.shots is not None and config.examples is None:
        raise ConfigError("`shots` needs `examples`: a file of human-labelled pairs with "
                          "their texts (query_id, query, chunk_id, chunk, grade)",
                          setting="shots")
    if config.model in LEXICAL_NAMES:
        if config.examples is not None:
            raise ConfigError("`examples` needs an LLM judge: the lexical baseline reads no "
                              "prompt", setting="examples")
        return LexicalJudgeAdapter()
    import os

    from labeler.judges.openai_judge import OpenAIJudge

    key = api_key if api_key is not None else os.environ.get(config.api_key_env)
    options = config.judge_options()
    options["prompt"] = build_prompt(config.prompt, examples=config.examples,
                                     shots=config.shots, topics=topics)
    # a key given directly is the caller's; one read from the environment names its variable
    key_env = config.api_key_env if api_key is None or api_key == os.environ.get(
        config.api_key_env) else None
    # writing a batch file for another machine calls no endpoint: no key needed
    return OpenAIJudge(config.model, api_key=key, key_env=key_env,
                       needs_key=not config.batch_file_out, **options)


__all__ = ["LEXICAL_MODEL", "LEXICAL_NAMES", "Judge", "LexicalJudgeAdapter", "RetryableError",
           "Verdict", "make_judge"]
