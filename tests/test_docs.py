"""The documentation stays true: every command and option is in the CLI reference, the README's
two commands are what CI runs, and every runnable Python example of the README and docs/ runs.

A ```python block runs unless the line before it is an HTML comment starting with
``<!-- skip`` (say why: ``<!-- skip: needs an API key -->``). Each page's blocks run in order,
in one namespace, in a temporary directory holding a copy of the bundled sample as ``data/``,
offline (the tests' environment has no key; examples use the lexical judge or
``labeler.testing``'s fake server).
"""

from __future__ import annotations

import importlib
import re
import shutil
from pathlib import Path

import click
import pytest

from labeler.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CLI_PAGE = DOCS / "cli.md"
DIRECTIVE = re.compile(r"^::: mkdocs-click\n((?:    :\w+:.*\n)+)", re.M)
FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def cli_commands(group: click.Group = main, prefix: str = "labeler"
                 ) -> dict[str, click.Command]:
    """Every command of the CLI by its full name (``labeler label``), sub-groups walked."""
    ctx = click.Context(group, info_name=prefix)
    found: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        path = f"{prefix} {name}"
        found[path] = cmd
        if isinstance(cmd, click.Group):
            found.update(cli_commands(cmd, path))
    return found


def reference_blocks() -> dict[str, dict[str, str]]:
    """The mkdocs-click blocks of the CLI reference, by the ``:prog_name:`` they document."""
    blocks = {}
    for match in DIRECTIVE.finditer(CLI_PAGE.read_text(encoding="utf-8")):
        opts = dict(re.findall(r"^    :(\w+): *(.*)$", match.group(1), re.M))
        blocks[opts.get("prog_name", opts["command"])] = opts
    return blocks


def documented_paths(blocks: dict[str, dict[str, str]]) -> set[str]:
    """The commands the blocks render: each block's command and, for a group, every command
    under it (mkdocs-click walks sub-commands)."""
    paths = set(blocks)
    for path, opts in blocks.items():
        command = getattr(importlib.import_module(opts["module"]), opts["command"])
        if isinstance(command, click.Group):
            paths |= set(cli_commands(command, path))
    return paths


def test_every_command_has_a_block_in_the_cli_reference() -> None:
    commands = cli_commands()
    blocks = reference_blocks()
    missing = sorted(set(commands) - documented_paths(blocks))
    assert not missing, (f"commands missing from docs/cli.md (add a '::: mkdocs-click' block "
                         f"for each): {missing}")
    stale = sorted(set(blocks) - set(commands))
    assert not stale, f"docs/cli.md documents commands that do not exist: {stale}"
    for path, opts in blocks.items():
        module = importlib.import_module(opts["module"])
        documented = getattr(module, opts["command"])
        assert documented is commands[path], (
            f"docs/cli.md: the block for {path!r} points at {opts['module']}:{opts['command']}, "
            f"which is not the command `{path}` runs")


def test_the_program_options_are_in_the_cli_reference() -> None:
    text = CLI_PAGE.read_text(encoding="utf-8")
    section = text[text.index("## labeler\n"):text.index("::: mkdocs-click")]
    for param in main.params:
        for opt in [*param.opts, *param.secondary_opts]:
            assert f"`{opt}`" in section, f"docs/cli.md: `labeler {opt}` is not described"


def test_every_option_is_in_the_rendered_cli_reference() -> None:
    docs = pytest.importorskip("mkdocs_click._docs", reason="the docs extra is not installed")
    rendered = {}
    for path, opts in reference_blocks().items():
        command = getattr(importlib.import_module(opts["module"]), opts["command"])
        text = "\n".join(docs.make_command_docs(path, command, depth=1,
                                                style=opts.get("style", "plain")))
        rendered[path] = text
        if isinstance(command, click.Group):   # sub-commands are rendered in the same text
            rendered.update(dict.fromkeys(cli_commands(command, path), text))
    for path, command in cli_commands().items():
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                for opt in param.opts:
                    assert f"`{opt}" in rendered[path], f"{path} {opt} is not in the reference"


def test_the_readme_commands_are_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("## The two commands"):]
    install, tests = re.search(r"```bash\n(.*?)\n(.*?)\n```", block, re.S).groups()  # type: ignore[union-attr]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert install == ("python3 -m venv .venv && . .venv/bin/activate && "
                       "pip install -e '.[test]' && labeler demo")
    assert tests == "python -m pytest -q"
    joined = re.sub(r"\\\n\s*", "", ci)  # continuation lines joined
    assert install.removesuffix(" && labeler demo") + " && labeler demo" in joined
    assert re.search(r"^python -m pytest -q\b", ci, re.M)


def runnable_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, minus those marked ``<!-- skip ... -->``."""
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if not before.startswith("<!-- skip"):
            blocks.append(match.group(1))
    return blocks


# Pages whose examples have a test of their own (it needs optional libraries, or state that
# must not be set up twice in one process): that test runs them, not the loop below.
OWN_TEST = {DOCS / "guide" / "ecosystem.md": ROOT / "tests" / "test_ecosystem_docs.py"}
PAGES = sorted(p for p in [ROOT / "README.md", *DOCS.rglob("*.md")] if p not in OWN_TEST)


def test_pages_with_their_own_example_test_have_it() -> None:
    for page, test in OWN_TEST.items():
        assert not page.exists() or (test.exists() and page.name in test.read_text()), page


def test_pages_with_examples_are_found() -> None:
    with_examples = [p.name for p in PAGES if runnable_blocks(p)]
    assert "README.md" in with_examples and "getting-started.md" in with_examples


@pytest.mark.parametrize("page", [p for p in PAGES if runnable_blocks(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_python_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                             ) -> None:
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data", data,
                    ignore=shutil.ignore_patterns("__init__.py", "__pycache__", "README.md"))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for i, source in enumerate(runnable_blocks(page)):
        code = compile(source, f"{page.relative_to(ROOT)} (python block {i + 1})", "exec")
        exec(code, namespace)  # the documentation's own examples


API_PAGES = sorted((DOCS / "api").glob("*.md"))


def test_every_public_name_of_the_api_reference_resolves() -> None:
    """The API reference is generated from each package's ``__all__``: every name must import
    (a lazy name pointing at the wrong module breaks the reference and the user's import)."""
    packages = [p for page in API_PAGES for p in re.findall(
        r"^<!-- api(?:-index)?: ([\w.]+) -->$", page.read_text(encoding="utf-8"), re.M)]
    assert "labeler" in packages and "labeler.scoring" in packages
    broken = []
    for package in packages:
        mod = importlib.import_module(package)
        for name in getattr(mod, "__all__", []):
            try:
                getattr(mod, name)
            except (AttributeError, ImportError) as exc:
                broken.append(f"{package}.{name}: {exc}")
    assert not broken, broken


def test_the_api_reference_has_one_page_per_package_each_in_the_nav() -> None:
    """Every package of the reference has its own page (no one huge page), listed in the nav
    and in the index page, and every package under labeler/ with public names has one."""
    import sys

    sys.path.insert(0, str(DOCS))
    try:
        hooks = importlib.import_module("hooks")
    finally:
        sys.path.remove(str(DOCS))
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    index = (DOCS / "api" / "index.md").read_text(encoding="utf-8")
    for package in hooks.PACKAGES:
        page = DOCS / "api" / f"{package.rsplit('.', 1)[-1]}.md"
        assert page.read_text(encoding="utf-8").strip() == f"<!-- api: {package} -->", page
        assert f"api/{page.name}" in nav and f"]({page.name})" in index, page
    packages = {f"labeler.{p.parent.name}" for p in (ROOT / "labeler").glob("*/__init__.py")
                if getattr(importlib.import_module(f"labeler.{p.parent.name}"), "__all__", None)}
    assert packages - {"labeler.cli"} <= set(hooks.PACKAGES)


def _docs_module(name: str):  # type: ignore[no-untyped-def]
    import sys

    sys.path.insert(0, str(DOCS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(DOCS))


def test_the_architecture_graph_is_the_code_s_own_imports() -> None:
    """docs/architecture.md's graph is the one the imports draw today (redraw it with
    ``python docs/import_graph.py``), and each arrow is an import a reader can find."""
    graph = _docs_module("import_graph")
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    shown = graph.BLOCK.search(page)
    assert shown is not None, "docs/architecture.md lost its <!-- import-graph --> block"
    assert shown.group(2) == graph.mermaid(), "stale graph: run python docs/import_graph.py"
    arrows = re.findall(r"^    (\w+) --> (\w+)$", shown.group(2), re.M)
    assert ("cli", "pipeline") in arrows and ("reconciliation", "scoring") in arrows
    for a, b in arrows:   # each arrow: a source line of package a importing package b
        sources = [p.read_text(encoding="utf-8") for p in (ROOT / "labeler" / a).rglob("*.py")]
        sources += [(ROOT / "labeler" / f"{a}.py").read_text(encoding="utf-8")] if (
            ROOT / "labeler" / f"{a}.py").is_file() else []
        names = b if b != "core" else r"(errors|schema|settings|fmt|redact|_\w+|tdist)"
        target = rf"^\s*(from|import) labeler\.{names}\b|^\s*from labeler import .*\b{names}\b"
        assert any(re.search(target, s, re.M) for s in sources), (a, b)
    level = graph.floors(graph.edges())
    assert all(level[a] > level[b] for a, b in graph.edges()), "an import runs back up"


def test_the_api_reference_shows_each_parameter_of_a_function() -> None:
    """docs/griffe_params.py gives mkdocstrings a parameter per argument of the signature
    (the docstrings are prose), with its type and default, and keeps a documented one."""
    griffe = pytest.importorskip("griffe", reason="the docs extra is not installed")
    ext = _docs_module("griffe_params")
    mod = griffe.load("labeler.scoring.results", docstring_parser="sphinx",
                      extensions=griffe.load_extensions(ext.SignatureParameters()))
    func = mod["score"]
    sections = func.docstring.parse("sphinx")
    params = {p.name: p for s in sections if s.kind.value == "parameters" for p in s.value}
    assert list(params) == [p.name for p in func.parameters]
    assert params["k"].value == "None" and params["engine"].value == "'memory'"
    assert params["engine"].description == "By keyword."


def test_every_older_spelling_is_in_the_cli_reference_table() -> None:
    """A hidden option is an older spelling kept for scripts: the CLI reference lists each
    (``COMMAND --old``) with what to type now, and lists none that no longer exists."""
    page = CLI_PAGE.read_text(encoding="utf-8")
    table = page[page.index("| older spelling | now |"):page.index("Commands: `label`")]
    listed = set(re.findall(r"^\| `(\w+ --[\w-]+)", table, re.M))
    hidden = {f"{path.removeprefix('labeler ')} {opt}" for path, cmd in cli_commands().items()
              for p in cmd.params if isinstance(p, click.Option) and p.hidden for opt in p.opts}
    # `label --format csv` (the output's, once) is a value of today's --format, not hidden
    assert hidden == listed - {"label --format"} and "label --format" in listed


def test_one_url_scheme_every_guide_under_guide() -> None:
    """The nav's Guides are exactly the pages under docs/guide/ (task guides); the reference
    pages stay at the top level (and the API reference under docs/api/)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    guides = nav[nav.index("  - Guides:"):nav.index("  - Reference:")]
    in_guides = set(re.findall(r":\s*(\S+\.md)$", guides, re.M))
    assert in_guides == {f"guide/{p.name}" for p in (DOCS / "guide").glob("*.md")}
    reference = nav[nav.index("  - Reference:"):nav.index("\nmarkdown_extensions")]
    assert all(not p.startswith("guide/") for p in re.findall(r"(\S+\.md)$", reference, re.M))
