"""mkdocs hook: the API reference is generated from the packages' public names.

A line ``<!-- api: labeler.scoring -->`` in a page (one page per package, ``docs/api/``)
becomes the package's docstring and one mkdocstrings block per function or class in its
``__all__``. Each object is rendered once, on the page of the first package of
:data:`PACKAGES` that names it; other packages' pages link to it.
``<!-- api-index: labeler -->`` becomes a table of the package's public names linking to where
each is documented. So a name added to a package's ``__all__`` appears in the reference
without editing a page.

After each ``::: mkdocs-click`` block (which renders a command's help and options), the
command's examples — the ``Examples:`` of its ``--help`` epilog, which mkdocs-click leaves
out — are added as a shell block.

Usage (mkdocs.yml)::

    hooks:
      - docs/hooks.py
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

PACKAGES = ("labeler.labelling", "labeler.judges", "labeler.reconciliation", "labeler.scoring",
            "labeler.statistics", "labeler.report", "labeler.pipeline", "labeler.io",
            "labeler.testing", "labeler")
"""The packages of the API reference, in the order that decides where an object is rendered."""

MARKER = re.compile(r"^<!-- (api|api-index): ([\w.]+) -->$", re.M)
CLICK_BLOCK = re.compile(r"^::: mkdocs-click\n((?:    :\w+:.*\n)+)", re.M)


def public_objects(package: str) -> list[tuple[str, str]]:
    """``(public name, import path of its definition)`` for every function or class in
    ``package.__all__``."""
    mod = importlib.import_module(package)
    found = []
    for name in getattr(mod, "__all__", []):
        if name.startswith("_"):
            continue
        obj: Any = getattr(mod, name)
        if inspect.ismodule(obj) and name in getattr(mod, "_NAMES", {}):
            # a submodule of the same name shadows the lazy name once it is imported
            obj = getattr(importlib.import_module(f"{package}.{mod._NAMES[name]}"), name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        found.append((name, f"{obj.__module__}.{obj.__qualname__}"))
    return found


def owners() -> dict[str, str]:
    """Import path of each public object → the package whose page renders it."""
    owner: dict[str, str] = {}
    for package in PACKAGES:
        for _, path in public_objects(package):
            owner.setdefault(path, package)
    return owner


def expand(markdown: str) -> str:
    """The page with every marker replaced by its generated Markdown."""
    owner = owners()

    def block(match: re.Match[str]) -> str:
        kind, package = match.groups()
        objects = public_objects(package)
        if kind == "api-index":
            rows = [f"| [`{package}.{name}`][{path}] | `{path.rsplit('.', 1)[0]}` |"
                    for name, path in objects]
            return "\n".join(["| name | defined in |", "| --- | --- |", *rows])
        lines = [f"::: {package}", "    options:", "      members: false",
                 "      show_root_heading: true", "      heading_level: 1", ""]
        for name, path in objects:
            if owner.get(path, package) != package:
                lines.append(f"- `{name}`: see [`{path}`][{path}]")
                continue
            lines += [f"::: {path}", "    options:", "      show_root_heading: true",
                      "      show_root_full_path: true", "      heading_level: 2", ""]
        return "\n".join(lines) + "\n"

    return MARKER.sub(block, markdown)


def with_examples(markdown: str) -> str:
    """Each mkdocs-click block followed by its command's ``--help`` examples."""

    def block(match: re.Match[str]) -> str:
        opts = dict(re.findall(r"^    :(\w+): *(.*)$", match.group(1), re.M))
        command = getattr(importlib.import_module(opts["module"]), opts["command"])
        epilog = command.epilog or ""
        if "Examples:" not in epilog:
            return match.group(0)
        lines = epilog.split("Examples:", 1)[1].strip("\n").splitlines()
        body = "\n".join(line[2:] if line.startswith("  ") else line for line in lines)
        return f"{match.group(0)}\n**Examples**\n\n```bash\n{body}\n```\n\n"

    return CLICK_BLOCK.sub(block, markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs event: expand the API markers of a page and add the CLI examples."""
    if "<!-- api" in markdown:
        markdown = expand(markdown)
    if "::: mkdocs-click" in markdown:
        markdown = with_examples(markdown)
    return markdown
