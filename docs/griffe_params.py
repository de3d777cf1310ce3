"""griffe extension for the API reference: a parameters table for every function.

The docstrings here are short prose (what it does, a usage line), without a ``:param:`` per
argument; the signature already says each parameter's name, type and default. This adds a
``:param NAME:`` field for every parameter a docstring does not describe, so mkdocstrings
renders the parameters table (name, type, how it is passed, default) from the signature.

Usage (mkdocs.yml, mkdocstrings' python handler)::

    options:
      extensions: [docs/griffe_params.py:SignatureParameters]
"""

from __future__ import annotations

import re
from typing import Any

import griffe

SKIP = {"self", "cls"}


class SignatureParameters(griffe.Extension):
    """Describe every documented function's undocumented parameters from its signature."""

    def on_function_instance(self, *, func: griffe.Function, **kwargs: Any) -> None:
        """griffe event: add the missing ``:param:`` fields to ``func``'s docstring."""
        doc = func.docstring
        if doc is None or (func.name.startswith("_") and func.name != "__init__"):
            return
        said = set(re.findall(r"^\s*:param\s+(?:[^:]*\s)?\*{0,2}(\w+):", doc.value, re.M))
        fields = []
        for param in func.parameters:
            if param.name in SKIP or param.name in said:
                continue
            star = {"variadic positional": "*", "variadic keyword": "**"}.get(
                param.kind.value if param.kind else "", "")
            fields.append(f":param {star}{param.name}: {_what(param)}")
        if fields:
            doc.value = doc.value.rstrip() + "\n\n" + "\n".join(fields)


def _what(param: griffe.Parameter) -> str:
    if param.kind is not None and param.kind.value == "variadic keyword":
        return "Further keyword arguments."
    if param.kind is not None and param.kind.value == "variadic positional":
        return "Further positional arguments."
    kind = param.kind.value if param.kind is not None else ""
    return {"keyword-only": "By keyword.", "positional-only": "By position."}.get(
        kind, "By position or keyword.")
