"""The package import graph of ``labeler``, read from the code's own imports (its AST).

An arrow ``a --> b`` means some module of ``a`` imports a module of ``b`` at run time
(imports under ``if TYPE_CHECKING:`` are left out: they never run). The top-level helper
modules (errors, schema, settings, fmt, redact, ...) are one node, ``core``; ``demo`` and
``pyterrier`` are top-level modules that sit above the stages. Arrows implied by a longer
path are left out of the picture (its transitive reduction), so each arrow shown is a real
import and every real import is a path of arrows.

``docs/architecture.md`` holds the graph between ``<!-- import-graph -->`` markers;
``tests/test_docs.py`` fails when it differs from the code.

Usage::

    python docs/import_graph.py           # rewrite the graph in docs/architecture.md
    python docs/import_graph.py --print   # print it
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "labeler"
PAGE = ROOT / "docs" / "architecture.md"
ALONE = {"demo", "pyterrier"}
"""Top-level modules drawn as their own node (the rest are ``core``)."""
LEFT_OUT = {"labeler", "__main__"}
"""``labeler/__init__.py`` (the lazy public names) and ``python -m labeler``."""
BLOCK = re.compile(r"(<!-- import-graph -->\n)(.*?)(<!-- /import-graph -->)", re.S)


def node_of(module: str) -> str | None:
    """The graph node of a module (``labeler.scoring.ndcg`` → ``scoring``), None outside."""
    parts = module.split(".")
    if parts[0] != "labeler":
        return None
    if len(parts) == 1 or parts[1] == "__init__":
        return "labeler"
    if (PACKAGE / parts[1]).is_dir():
        return parts[1]
    if parts[1] == "__main__":
        return "__main__"
    if not (PACKAGE / f"{parts[1]}.py").is_file():  # a name of labeler/__init__.py
        return "labeler"
    return parts[1] if parts[1] in ALONE else "core"


def _imported(tree: ast.AST) -> list[str]:
    """Every module an AST imports at run time (not under ``if TYPE_CHECKING:``)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def edges() -> set[tuple[str, str]]:
    """Every (importer, imported) pair of nodes."""
    found: set[tuple[str, str]] = set()
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        src = node_of(module) or "labeler"   # every file here is a module of labeler
        for name in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            dst = node_of(name)   # ``from labeler.io import x``: io, whatever x is
            if dst is None or dst == src or src in LEFT_OUT or dst in LEFT_OUT:
                continue
            found.add((src, dst))
    return found


def reduced(graph: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The arrows no longer path implies (the graph has no circles)."""
    after: dict[str, set[str]] = {}
    for a, b in graph:
        after.setdefault(a, set()).add(b)

    def reach(a: str, seen: set[str]) -> set[str]:
        for b in after.get(a, ()):
            if b not in seen and b not in ALONE:   # no shortcut through demo or pyterrier
                seen.add(b)
                reach(b, seen)
        return seen

    return {(a, b) for a, b in graph
            if not any(b in reach(c, {c}) for c in after[a] if c != b and c not in ALONE)}


def floors(graph: set[tuple[str, str]]) -> dict[str, int]:
    """Each node's floor: 1 for what imports nothing, else one above the highest it imports."""
    after: dict[str, set[str]] = {}
    for a, b in graph:
        after.setdefault(a, set()).add(b)
        after.setdefault(b, set())

    def floor(node: str) -> int:
        return 1 + max((floor(b) for b in after[node]), default=0)

    return {node: floor(node) for node in after}


LABELS = {
    "cli": "cli/ — click commands", "pipeline": "pipeline/ — labeler run",
    "reconciliation": "reconciliation/ — agreement, calibration, merge, compare",
    "labelling": "labelling/ — the job, engines, cache",
    "scoring": "scoring/ — trec_eval-exact measures",
    "statistics": "statistics/ — intervals, tests, PPI, verdicts",
    "judges": "judges/ — Judge, OpenAI-compatible, lexical, prompts",
    "report": "report/ — text, Markdown, HTML, plots (plain data in)",
    "io": "io/ — every format ⇄ typed frames",
    "core": "core: errors, schema, settings, fmt, redact, ...",
    "testing": "testing/ — the fake OpenAI-compatible server",
    "demo": "demo.py — labeler demo", "pyterrier": "pyterrier.py — a PyTerrier transformer",
}
"""What each node holds, as the picture says it."""


def mermaid() -> str:
    """The graph as a Mermaid flowchart and its floors as text (Markdown)."""
    graph = edges()
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'    {node}["{LABELS.get(node, node)}"]' for node in sorted(floors(graph))]
    lines += [f"    {a} --> {b}" for a, b in sorted(reduced(graph))]
    lines += ["```", "", "Floors, top to bottom (an import only points to a lower floor):", "",
              "```"]
    level = floors(graph)
    for n in sorted(set(level.values()), reverse=True):
        lines.append(f"{n:>2}  {', '.join(sorted(k for k, v in level.items() if v == n))}")
    return "\n".join([*lines, "```", ""])


def main(argv: list[str]) -> None:
    """Print the graph, or write it into docs/architecture.md."""
    if "--print" in argv:
        print(mermaid(), end="")
        return
    text = PAGE.read_text(encoding="utf-8")
    PAGE.write_text(BLOCK.sub(lambda m: m.group(1) + mermaid() + m.group(3), text),
                    encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
