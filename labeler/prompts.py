"""Prompt templates: load from ``prompts/`` (or a user's file), render to chat messages.

Template format (plain text, UTF-8):

- lines starting with ``#`` at the top of the file are comments and are stripped (the template
  proper starts at the first line that does not start with ``#``);
- a line ``---user---`` separates the system message (above) from the user message (below);
  without it the whole template is one user message;
- ``{query}`` and ``{chunk}`` are filled in one pass: braces elsewhere (a JSON example) stay as
  they are, and text inside the query or chunk is never expanded again. A tag such as
  ``</chunk>`` inside the inserted text is neutralised so it cannot close the template's block.

Usage::

    from labeler.prompts import load_prompt
    p = load_prompt("default")            # or a path to your own template file
    p.id                                  # "default-3f2a9c1b0d4e": name + hash of the text
    messages = p.render(query="what is bm25", chunk="BM25 is a ranking function ...")
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from .errors import ConfigError

USER_MARKER = "---user---"
PLACEHOLDERS = ("query", "chunk")
_PLACEHOLDER = re.compile(r"\{(query|chunk)\}")
_TAG = re.compile(r"<(\s*/?\s*(?:query|chunk)\b[^>]*)>", re.IGNORECASE)


def _neutralise(text: str) -> str:
    """Make ``<chunk>``/``</query>``-like tags inside inserted text inert (‹/chunk›)."""
    return _TAG.sub(lambda m: f"\u2039{m.group(1)}\u203a", text)


@dataclass(frozen=True)
class Prompt:
    """A loaded template: ``name``, ``text`` (comments stripped), ``id`` = name + text hash."""

    name: str
    text: str
    source: str = ""

    @property
    def id(self) -> str:
        """``f"{name}-{sha256(text)[:12]}"``: recorded on every label."""
        return f"{self.name}-{hashlib.sha256(self.text.encode('utf-8')).hexdigest()[:12]}"

    def render(self, query: str, chunk: str) -> list[dict[str, str]]:
        """OpenAI chat messages: ``[{"role": "system", ...}, {"role": "user", ...}]``."""
        values = {"query": _neutralise(str(query)), "chunk": _neutralise(str(chunk))}

        def fill(part: str) -> str:
            return _PLACEHOLDER.sub(lambda m: values[m.group(1)], part)

        system, user = _split(self.text)
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


def load_prompt(name_or_path: str | Path) -> Prompt:
    """A built-in template by name (``"default"``) or a template file by path.

    Usage::

        load_prompt("default"); load_prompt("my_prompts/strict.txt")
    """
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
