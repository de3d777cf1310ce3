"""Prompt templates: load from ``prompts/`` (or a user's file), render to chat messages.

Template format (plain text, UTF-8):

- lines starting with ``#`` at the top of the file are comments and are stripped (the template
  proper starts at the first line that does not start with ``#``);
- a line ``---user---`` separates the system message (above) from the user message (below);
  without it the whole template is one user message;
- ``{query}`` and ``{chunk}`` (required), ``{description}``, ``{narrative}`` and ``{examples}``
  (optional) are filled in one pass: braces elsewhere (a JSON example) stay as they are, and
  inserted text is never expanded again. A tag such as ``</chunk>`` inside the inserted text is
  neutralised so it cannot close the template's block. A query without a description or
  narrative fills those with ``(not given)``. Few-shot examples (``labeler.judges.shots``) go where
  ``{examples}`` stands, else at the top of the user message.

A :class:`Prompt` may carry *contexts*: per-query values (few-shot examples, a query's
description and narrative) looked up from the query at render time. A context with a
signature (the shot set) is part of the prompt id, so a cache never mixes two shot sets.

Usage::

    from labeler.judges.prompts import load_prompt
    p = load_prompt("default")            # or a path to your own template file
    p.id                                  # "default-3f2a9c1b0d4e": name + hash of the text
    messages = p.render(query="what is bm25", chunk="BM25 is a ranking function ...")
    p.with_context(Topics({"what is bm25": {"description": "..."}})).render(...)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib.resources import files
from pathlib import Path
from typing import Any, Protocol

from labeler.errors import ConfigError

USER_MARKER = "---user---"
PLACEHOLDERS = ("query", "chunk")
"""Placeholders every template needs."""
NOT_GIVEN = "(not given)"
TOPIC_COLUMNS = ("description", "narrative")
"""Optional query columns (TREC topic fields) that reach prompts using them."""
_PLACEHOLDER = re.compile(r"\{(query|chunk|description|narrative|examples)\}")
_TAG = re.compile(r"<(\s*/?\s*(?:(?:example_)?(?:query|chunk)|examples?|description|narrative"
                  r"|human_grade)\b[^>]*)>", re.IGNORECASE)


def _neutralise(text: str) -> str:
    """Make ``<chunk>``/``</query>``-like tags inside inserted text inert (‹/chunk›)."""
    return _TAG.sub(lambda m: f"\u2039{m.group(1)}\u203a", text)


def neutralise(text: str) -> str:
    """Text made safe to insert in a prompt block (tags made inert); public for contexts."""
    return _neutralise(text)


class Context(Protocol):
    """Per-query values for a template: ``values(query)`` → placeholder → text.

    ``tag`` (e.g. ``"4shots"``) and ``signature`` (a digest of what it can insert) become part
    of the prompt id when the signature is not empty.
    """

    tag: str
    signature: str

    def values(self, query: str) -> Mapping[str, str]:
        """Placeholder values for the judged query (``examples`` is markup, the rest text)."""
        ...


class Topics:
    """Descriptions and narratives of queries, by query text (TREC topics' fields).

    Usage: ``prompt.with_context(Topics({"what is bm25": {"description": "...",
    "narrative": "..."}}))``
    """

    tag = ""
    signature = ""  # per-query data, like the query itself: not part of the prompt id

    def __init__(self, topics: Mapping[str, Mapping[str, Any]]) -> None:
        self._topics = {str(q): {k: str(v) for k, v in t.items()
                                 if k in TOPIC_COLUMNS and _given(v)}
                        for q, t in topics.items()}

    def values(self, query: str) -> Mapping[str, str]:
        return self._topics.get(query, {})

    @classmethod
    def from_frame(cls, pairs: Any) -> Topics | None:
        """The ``description``/``narrative`` columns of a pairs or queries DataFrame, by query
        text; None when it has neither.

        Usage: ``Topics.from_frame(pairs_df)``
        """
        cols = [c for c in TOPIC_COLUMNS if c in pairs.columns]
        if not cols:
            return None
        rows = pairs[["query", *cols]].drop_duplicates("query")
        return cls({str(r["query"]): {c: r[c] for c in cols}
                    for r in rows.to_dict(orient="records")})


def _given(value: Any) -> bool:
    """A real text (not None, NaN or empty)."""
    return isinstance(value, str) and value.strip() != ""


@dataclass(frozen=True)
class Prompt:
    """A loaded template: ``name``, ``text`` (comments stripped), ``id`` = name + text hash."""

    name: str
    text: str
    source: str = ""
    contexts: tuple[Context, ...] = ()

    @property
    def id(self) -> str:
        """``f"{name}-{sha256(text)[:12]}"`` (contexts with a signature add ``+tag`` and
        their signature to the hash): recorded on every label."""
        signed = [c for c in self.contexts if c.signature]
        material = self.text + "".join(f"\n\x00{c.tag}\x00{c.signature}" for c in signed)
        tags = "".join(f"+{c.tag}" for c in signed)
        return f"{self.name}{tags}-{hashlib.sha256(material.encode('utf-8')).hexdigest()[:12]}"

    def uses(self, placeholder: str) -> bool:
        """Whether the template has ``{placeholder}``."""
        return "{" + placeholder + "}" in self.text

    def with_context(self, context: Context) -> Prompt:
        """This prompt with one more per-query context (shots, topics)."""
        return replace(self, contexts=(*self.contexts, context))

    def render(self, query: str, chunk: str, *, description: str | None = None,
               narrative: str | None = None, examples: str | None = None
               ) -> list[dict[str, str]]:
        """OpenAI chat messages: ``[{"role": "system", ...}, {"role": "user", ...}]``.

        Keyword values win over the contexts'; ``examples`` is markup (``labeler.judges.shots``).
        """
        extra: dict[str, str] = {}
        for context in self.contexts:
            extra.update(context.values(str(query)))
        given = {"description": description, "narrative": narrative, "examples": examples}
        extra.update({k: v for k, v in given.items() if v is not None})
        values = {"query": _neutralise(str(query)), "chunk": _neutralise(str(chunk)),
                  "description": _neutralise(extra.get("description", "")) or NOT_GIVEN,
                  "narrative": _neutralise(extra.get("narrative", "")) or NOT_GIVEN,
                  "examples": extra.get("examples", "")}

        def fill(part: str) -> str:
            return _PLACEHOLDER.sub(lambda m: values[m.group(1)], part)

        system, user = _split(self.text)
        if values["examples"] and not self.uses("examples"):
            user = "{examples}\n\n" + user
        messages = [{"role": "system", "content": fill(system)}] if system else []
        messages.append({"role": "user", "content": fill(user)})
        return messages


def _split(text: str) -> tuple[str, str]:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == USER_MARKER:
            return "\n".join(lines[:i]).strip(), "\n".join(lines[i + 1:]).strip()
    return "", text.strip()


def _strip_comments(raw: str) -> str:
    lines = raw.replace("\r\n", "\n").split("\n")
    start = 0
    while start < len(lines) and lines[start].startswith("#"):
        start += 1
    return "\n".join(lines[start:]).strip() + "\n"


def available_prompts() -> list[str]:
    """Names of the built-in templates (files ``prompts/<name>.txt``)."""
    return sorted(p.name.removesuffix(".txt") for p in files("labeler._prompts").iterdir()
                  if p.name.endswith(".txt"))


def parse_prompt(raw: str, name: str, source: str = "") -> Prompt:
    """Build a :class:`Prompt` from template text; ConfigError if a placeholder is missing."""
    text = _strip_comments(raw)
    missing = [p for p in PLACEHOLDERS if "{" + p + "}" not in text]
    if missing:
        where = source or name
        raise ConfigError(f"prompt template {where!r} has no "
                          + " and no ".join("{" + m + "}" for m in missing)
                          + " placeholder (a template needs both {query} and {chunk})")
    if sum(line.strip() == USER_MARKER for line in text.split("\n")) > 1:
        raise ConfigError(f"prompt template {source or name!r} has more than one "
                          f"{USER_MARKER} line")
    return Prompt(name=name, text=text, source=source)


def load_prompt(name_or_path: str | Path | Prompt) -> Prompt:
    """A built-in template by name (``"default"``) or a template file by path (a
    :class:`Prompt` is returned as it is).

    Usage::

        load_prompt("default"); load_prompt("my_prompts/strict.txt")
    """
    if isinstance(name_or_path, Prompt):
        return name_or_path
    spec = str(name_or_path)
    path = Path(spec).expanduser()
    is_name = not isinstance(name_or_path, Path) and re.fullmatch(r"[\w-]+", spec) is not None
    if is_name:
        resource = files("labeler._prompts").joinpath(f"{spec}.txt")
        if resource.is_file():
            return parse_prompt(resource.read_text(encoding="utf-8"), spec,
                                f"prompts/{spec}.txt")
        if not path.is_file():
            raise ConfigError(f"unknown prompt {spec!r}: built-in prompts are "
                              f"{', '.join(available_prompts())}; or pass a template file path")
    if not path.is_file():
        raise ConfigError(f"prompt file not found: {spec}")
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read prompt file {spec}: {exc}") from exc
    return parse_prompt(raw, path.stem, str(path))
