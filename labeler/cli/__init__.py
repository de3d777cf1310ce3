"""The `labeler` command: a thin click shell over the library.

Each sub-command lives in its own module below and registers itself on :data:`main`.
Errors from the library (:class:`~labeler.errors.LabelerError`) become one paragraph on
stderr and the documented exit status; a traceback only with ``--debug``.

Usage::

    labeler --help
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any

import click

from labeler.errors import Interrupted, LabelerError

# Sub-command modules; each defines click commands and adds them to ``main``.
COMMAND_MODULES: tuple[str, ...] = (
    "label_cmd",
    "pool_cmd",
    "reconcile_cmd",
    "sample_cmd",
    "compare_cmd",
    "run_cmd",
    "demo_cmd",
    "score_cmd",
    "judges_cmd",
    "blend_cmd",
    "probe_cmd",
    "cache_cmd",
    "plan_cmd",
    "certify_cmd",
)


class _Group(click.Group):
    """A group that turns library errors into exit codes, and imports a command's
    module only when that command is asked for (`labeler score` does not load the LLM
    client, scikit-learn, ...; `--help` loads them all)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            if f"{cmd_name}_cmd" in COMMAND_MODULES:
                importlib.import_module(f"{__name__}.{cmd_name}_cmd")
            if cmd_name not in self.commands:
                _load_commands()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        _load_commands()
        return super().list_commands(ctx)

    def invoke(self, ctx: click.Context) -> Any:
        debug = bool(ctx.params.get("debug"))
        try:
            with _sigterm_interrupts():
                return super().invoke(ctx)
        except LabelerError as exc:
            from labeler.redact import redact

            if debug:
                traceback.print_exc()
            click.echo(f"labeler: error: {redact(as_flags(ctx, exc))}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:  # `labeler ... | head`: the reader left; not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (see _sigterm_interrupts)
            from labeler.redact import redact

            text = str(exc) if isinstance(exc, Interrupted) else "interrupted"
            click.echo(f"labeler: {redact(text)}", err=True)
            ctx.exit(getattr(exc, "exit_code", 130))
        except Exception as exc:  # anything unexpected: exit 1
            from labeler.io.writers import full_disk
            from labeler.redact import redact

            full = full_disk(exc)  # a full disk anywhere (an output, a run folder): exit 2
            if full is not None and not debug:
                click.echo(f"labeler: error: {full}", err=True)
                ctx.exit(full.exit_code)
            if debug:
                traceback.print_exc()
            else:
                click.echo(f"labeler: unexpected error: {redact(f'{type(exc).__name__}: {exc}')}"
                           " (run with --debug for the traceback)", err=True)
            ctx.exit(1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="""\
\b
Examples:
  labeler demo                 # the whole pipeline on the bundled sample, offline
  labeler label --help         # a command's options, with examples
""")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(package_name="labeler", prog_name="labeler")
def main(debug: bool) -> None:
    """LLM-as-judge relevance labelling and trec_eval-exact NDCG.

    label → reconcile → score → compare; `labeler demo` runs them all offline.
    """


def run() -> None:
    """The `labeler` program (the console script and ``python -m labeler``): :data:`main`,
    with the garbage collector tuned for one command in one process.

    Start-up allocates about a million long-lived objects (openai, pandas, the inputs);
    collecting the young generation every 700 allocations walks them again and again
    (~0.1 s of CPU, for nothing) — every 50,000 is enough. The last collection at exit
    would walk all of them too; frozen objects are skipped (outputs are closed by then).
    """
    gc.set_threshold(50_000, *gc.get_threshold()[1:])
    atexit.register(gc.freeze)
    main()


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises :class:`~labeler.errors.Interrupted` (exit 143) like Ctrl-C raises
    KeyboardInterrupt, so outputs are finished or cleaned up as for Ctrl-C instead of the
    process dying mid-write. The labelling job catches both signals itself, to write every
    pair's record."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def as_flags(ctx: click.Context, exc: LabelerError) -> str:
    """The error's text with every setting it names (`` `max_tokens` ``) written as the
    invoked command's flag (``--max-tokens``); a setting the command has no flag for keeps
    its name (the hint to give a format is left out where no flag forces one)."""
    text = str(exc)
    sub = ctx.invoked_subcommand
    command = (ctx.command.get_command(ctx, sub)
               if sub and isinstance(ctx.command, click.Group) else None)
    flags = {p.name: p.opts[0] for p in (command.params if command else [])
             if isinstance(p, click.Option) and p.name}
    if "fmt" not in flags:  # no flag to force a format: the extension is the user's way
        from labeler.io._base import FORMAT_HINT

        text = text.replace(FORMAT_HINT, "")
    return re.sub(r"`([a-z_]+)`", lambda m: flags.get(m.group(1), m.group(1)), text)


def _load_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}")
