"""The package's module boundaries: no module uses another module's private (``_``) names,
``labeler.io`` has one reader per object, and every lazy public name is typed for type checkers.

A private name that a second module needs is made public in its module (a docstring, a usage
line) or moved where it belongs; private *modules* (``labeler._lazy``, ``labeler.io._base``)
are internal packages and may be imported.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pandas as pd
import pytest

import labeler
from labeler import io

PACKAGE = Path(labeler.__file__).parent

ALLOWED: set[tuple[str, str]] = set()
"""(importing module, imported name) pairs that may cross a boundary: none today."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` (``labeler.io._base``) is a module or package of ours."""
    rel = Path(*dotted.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").exists() or (PACKAGE / rel).is_dir()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _crossings(path: Path, text: str | None = None) -> list[str]:
    """Each use in ``path`` (or ``text`` as if it were that file) of a private name of
    another labeler module: ``from m import _x`` and ``m._x`` on a module imported as a name."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    where = path.relative_to(PACKAGE.parent)
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    modules: dict[str, str] = {}   # local name -> labeler module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *filter(None, [node.module])])
            if not source.startswith("labeler"):
                continue
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if _is_module(target):
                    modules[alias.asname or alias.name] = target
                elif _private(alias.name) and source != here:
                    found.append(f"{where}:{node.lineno}: from {source} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("labeler") and alias.asname:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in modules):
            target = modules[node.value.id]
            if target != here and not _is_module(f"{target}.{node.attr}"):
                found.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr} ({target})")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _crossings(path)
             if (_module_name(path), hit.rsplit(" ", 1)[-1]) not in ALLOWED]
    assert found == [], "private names used across modules:\n" + "\n".join(found)


def test_the_check_sees_a_private_import() -> None:
    """The scan above finds both spellings, relative imports too, and leaves a module's own
    names and private modules alone (so an empty list means something)."""
    text = ("from labeler.io._base import _NEUTRALISED, GradeMap\n"
            "from labeler.io import lines, _base\n"
            "from .trec import _private_thing\n"
            "from labeler.io.readers import _dedupe_judgements\n"
            "x = lines._is_utf8, _base.GradeMap\n")
    hits = _crossings(PACKAGE / "io" / "readers.py", text)
    assert [h.split(": ", 1)[1] for h in hits] == [
        "from labeler.io._base import _NEUTRALISED",
        "from labeler.io.trec import _private_thing",
        "lines._is_utf8 (labeler.io.lines)"]


def _public_readers(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("read_")}


def test_io_has_one_reader_per_object() -> None:
    """No two io modules define the same public ``read_*``; each is the one the package's
    lazy table hands on."""
    owners: dict[str, list[str]] = {}
    for path in sorted((PACKAGE / "io").glob("*.py")):
        for name in _public_readers(path):
            owners.setdefault(name, []).append(path.stem)
    twice = {name: mods for name, mods in owners.items() if len(mods) > 1}
    assert twice == {}
    for name in ("read_pairs", "read_queries", "read_corpus", "read_labels", "read_qrels",
                 "read_run", "read_runs"):
        assert owners[name] == [io._NAMES[name]], name


def test_each_reader_takes_a_path_and_an_object(tmp_path: Path) -> None:
    """The one reader of each object takes a file and a caller's object alike."""
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"query_id": 1, "query": "bm25", "chunk_id": "d1", "chunk": "a"}\n'
                    '{"query_id": 1, "query": "bm25", "chunk_id": "d2", "chunk": "b"}\n'
                    '{"query_id": 2, "query": "dense", "chunk_id": "d1", "chunk": "a"}\n',
                    encoding="utf-8")
    pairs = io.read_pairs(path)
    assert pairs["query_id"].tolist() == ["1", "1", "2"]
    assert io.read_pairs(pairs.to_dict("records")).equals(pairs)
    queries = io.read_queries(dict(zip(pairs["query_id"], pairs["query"])))
    assert set(queries["query_id"]) == set(pairs["query_id"])
    corpus = io.read_corpus(dict(zip(pairs["chunk_id"], pairs["chunk"])))
    assert set(corpus["chunk_id"]) == set(pairs["chunk_id"])
    labels = io.read_labels([{"query_id": 1, "chunk_id": "d1", "grade": 2}])
    assert labels[["query_id", "status"]].values.tolist() == [["1", "ok"]]
    run = pd.DataFrame({"query_id": ["1", "1"], "chunk_id": ["a", "b"], "score": [2.0, 1.0]})
    runs = io.read_runs({"bm25": run, "dense": run})
    assert sorted(runs["system"].unique()) == ["bm25", "dense"]


@pytest.mark.parametrize("package", ["labeler", "labeler.io"])
def test_type_checkers_see_every_lazy_name(package: str) -> None:
    """``__all__`` is derived from the lazy table; each name must also be re-exported
    (``x as x``) by an import a type checker reads, or ``labeler.score`` has no type."""
    mod = importlib.import_module(package)
    tree = ast.parse(Path(mod.__file__ or "").read_text(encoding="utf-8"))
    exported = {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names if alias.asname == alias.name}
    assert set(mod.__all__) - {"__version__"} == exported
    for name in mod.__all__:
        assert getattr(mod, name) is not None
