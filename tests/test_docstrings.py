"""The usage examples in the package's docstrings call the public functions as they really are.

Each ``Usage::`` block (and each one-line ``Usage: ``code`` ``) is parsed; every call of a
function of the package that the block names is bound to that function's signature with
placeholder values, so an example that passes human and LLM labels by position, or an argument
the function does not take, fails here.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

import labeler

_INLINE = re.compile(r"Usage: ``(.+?)``", re.S)


def _modules() -> Iterator[Any]:
    for info in pkgutil.walk_packages(labeler.__path__, "labeler."):
        if info.name.endswith("__main__"):
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # a module of an extra that is not installed (labeler.pyterrier)
            continue


def _docstrings(module: Any) -> Iterator[tuple[str, str]]:
    if module.__doc__:
        yield module.__name__, module.__doc__
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            if obj.__doc__:
                yield f"{module.__name__}.{name}", obj.__doc__
            if inspect.isclass(obj):
                for mname, meth in vars(obj).items():
                    if inspect.isfunction(meth) and meth.__doc__:
                        yield f"{module.__name__}.{name}.{mname}", meth.__doc__


def _blocks(doc: str) -> Iterator[str]:
    lines = doc.expandtabs().split("\n")
    for i, line in enumerate(lines):
        if line.rstrip().endswith("::"):
            base = len(line) - len(line.lstrip())
            body: list[str] = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= base:
                    break
                body.append(nxt)
            yield textwrap.dedent("\n".join(body))
    for m in _INLINE.finditer(doc):
        yield m.group(1).replace("\n", " ")


def _public_callables() -> dict[str, Any]:
    """Public functions of the package, by their name (a name two modules define is left
    out: a block cannot say which it means)."""
    seen: dict[str, list[Any]] = {}
    for module in _modules():
        for name, obj in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(obj):
                continue
            if obj.__module__ == module.__name__:
                seen.setdefault(name, []).append(obj)
    return {name: fns[0] for name, fns in seen.items() if len(fns) == 1}


def _calls() -> Iterator[tuple[str, set[str], ast.Call]]:
    for module in _modules():
        for where, doc in _docstrings(module):
            for block in _blocks(doc):
                try:
                    tree = ast.parse(block)
                except SyntaxError:
                    continue  # shell lines, prose, TOML: not Python
                assigned = {n.id for n in ast.walk(tree)
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                for node in ast.walk(tree):
                    if isinstance(node, ast.Call):
                        yield where, assigned, node


_MODULE_NAMES = {"labeler"} | {m.__name__.rsplit(".", 1)[-1] for m in _modules()}


def _name(func: ast.expr, assigned: set[str]) -> str | None:
    """The function a call names: ``f(...)``, or ``module.f(...)`` (not a method call)."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id in _MODULE_NAMES and func.value.id not in assigned:
        return func.attr
    return None


def test_usage_examples_bind_to_the_real_signatures() -> None:
    functions = _public_callables()
    checked, wrong = 0, []
    for where, assigned, call in _calls():
        fn = functions.get(_name(call.func, assigned) or "")
        if fn is None or any(isinstance(a, ast.Starred) for a in call.args) \
                or any(k.arg is None for k in call.keywords):
            continue
        sig = inspect.signature(fn)
        try:
            sig.bind(*[object()] * len(call.args), **{k.arg: object() for k in call.keywords
                                                       if k.arg})
        except TypeError as exc:
            wrong.append(f"{where}: {ast.unparse(call)} -> {exc}")
        checked += 1
    assert checked > 40, "the examples were not found"
    assert not wrong, "docstring examples that would raise TypeError:\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", ["compare", "reconcile", "agreement", "leaderboard"])
def test_functions_that_take_both_label_sets_take_them_by_keyword(name: str) -> None:
    fn = _public_callables()[name]
    params = inspect.signature(fn).parameters
    for label_set in ("human", "llm"):
        assert params[label_set].kind is inspect.Parameter.KEYWORD_ONLY, (name, label_set)


@pytest.mark.parametrize("package", ["labelling", "scoring", "statistics", "reconciliation",
                                     "report", "pipeline", "judges", "io"])
def test_a_subpackages_public_names_stay_what_they_are(package: str) -> None:
    """Every name a subpackage hands on is the same object before and after all its modules
    are imported (a name shared with a submodule would turn into that module)."""
    import pkgutil

    pkg = importlib.import_module(f"labeler.{package}")
    before = {name: getattr(pkg, name) for name in pkg.__all__}
    for info in pkgutil.iter_modules(pkg.__path__):
        try:
            importlib.import_module(f"labeler.{package}.{info.name}")
        except ImportError:  # an extra that is not installed
            continue
    assert {name: getattr(pkg, name) for name in pkg.__all__} == before
