"""Help that teaches: every command's --help ends with examples whose flags exist, every
option says what it takes (FILE, DIR, NAME, URL, MAP ... — never click's bare TEXT) and what it
does, and `compare` without runs points a label-only user to the commands that fit."""

from __future__ import annotations

import re
import shlex

import click
import pytest
from click.testing import CliRunner

from labeler.cli import main

def walk(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    """Every command by its path under ``labeler`` (``"label"``, ``"cache migrate"``)."""
    ctx = click.Context(group)
    found: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        found[prefix + name] = cmd
        if isinstance(cmd, click.Group):
            found.update(walk(cmd, f"{prefix}{name} "))
    return found


COMMANDS = walk(main)


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command an example line runs, and the words after its name."""
    command: click.Command = main
    rest = words[1:]
    while isinstance(command, click.Group) and rest and rest[0] in subcommands_of(command):
        command, rest = subcommands_of(command)[rest[0]], rest[1:]
    return command, rest


def subcommands_of(group: click.Group) -> dict[str, click.Command]:
    ctx = click.Context(group)
    return {n: c for n in group.list_commands(ctx) if (c := group.get_command(ctx, n))}


def help_of(name: str) -> str:
    result = CliRunner().invoke(main, [*name.split(), "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def examples(name: str) -> list[list[str]]:
    """The example command lines of a command's --help, continuation lines joined, comments
    dropped, each split into words."""
    text = help_of(name)
    assert "Examples:" in text, f"labeler {name} --help has no examples"
    block = text[text.index("Examples:") + len("Examples:"):]
    block = re.sub(r"\\\n\s*", " ", block)
    lines = [ln.split("#", 1)[0].strip() for ln in block.splitlines()]
    return [shlex.split(ln) for ln in lines if ln.startswith("labeler ")]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_help_has_examples_that_use_real_flags(name: str) -> None:
    lines = examples(name)
    assert lines, f"labeler {name} --help: no example command line"
    assert any(" ".join(words[1:]).startswith(name) for words in lines), (
        f"no example runs labeler {name}")
    for words in lines:
        command, rest = resolve(words)
        flags = {opt for p in command.params for opt in [*p.opts, *p.secondary_opts]}
        flags |= {"--help", "-h"}
        used = {w.split("=", 1)[0] for w in rest if w.startswith("--")}
        assert used <= flags, f"labeler {name} --help example uses unknown {used - flags}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_option_shows_a_bare_text_metavar(name: str) -> None:
    bare = [p.opts[0] for p in COMMANDS[name].params
            if isinstance(p, click.Option) and not p.is_flag
            and p.make_metavar(click.Context(COMMANDS[name])) == "TEXT"]
    assert not bare, f"labeler {name}: say what these take (FILE, NAME, URL, ...): {bare}"
    assert not re.search(r"^\s+--\S+ TEXT\b", help_of(name), re.M)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_has_help(name: str) -> None:
    missing = [p.opts[0] for p in COMMANDS[name].params
               if isinstance(p, click.Option) and not p.help]
    assert not missing, f"labeler {name}: options without help text: {missing}"


def test_the_program_help_has_examples() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0 and "Examples:" in result.output
    assert "labeler demo" in result.output


def test_file_options_say_file() -> None:
    text = help_of("label")
    for flag in ("--examples", "--batch-file-out", "--batch-file-in", "--pairs", "--out"):
        assert re.search(rf"^\s+{flag} FILE\b", text, re.M), flag
    assert re.search(r"^\s+--prompt NAME\|FILE\b", text, re.M)
    assert re.search(r"^\s+--seed INTEGER RANGE\s+Random seed", help_of("sample"), re.M)


def test_compare_without_runs_points_to_judges_and_reconcile(tmp_path) -> None:  # type: ignore[no-untyped-def]
    labels = tmp_path / "labels.qrels"
    labels.write_text("q1 0 d1 2\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["compare", "--human", str(labels), "--llm", str(labels)])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert "at least one --run" in out
    assert "labeler reconcile --llm LABELS --human QRELS" in out and "--report" in out
    assert "labeler judges --human QRELS --llm LABELS --report" in out
