"""Command-line flags derived from the library's settings, so each is declared once.

:func:`judge_options` turns every field of :class:`~labeler.settings.JudgeConfig` into a
click option (``max_tokens`` → ``--max-tokens``, its bounds → an ``IntRange``, its
description → the help); the command receives them as keyword arguments and passes them to
:func:`labeler.settings.judge_config`. :func:`flag_of` maps a setting named in a library
error back to the flag the user typed.

Usage::

    @main.command("label")
    @judge_options()
    def label_command(**settings): ...
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import click

from labeler.schema import FORMATS_OF, INPUT_FORMATS


__all__ = [
    "FILE",
    "InputFormats",
    "bootstrap_options",
    "deprecated_alias",
    "echo_result",
    "flag_of",
    "format_option",
    "judge_options",
    "judge_settings",
    "read_label_sets",
    "read_side",
    "stats_options",
    "stats_settings",
]


def flag_of(setting: str) -> str:
    """The flag of a judge setting: ``max_tokens`` → ``--max-tokens``."""
    return "--" + setting.replace("_", "-")


def _bare(annotation: Any) -> tuple[Any, bool]:
    """The type inside ``X | None`` and whether None was allowed."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), True
    return annotation, False


def _click_type(kind: Any, metadata: Iterable[Any]) -> Any:
    from annotated_types import Ge, Gt, Le   # only the judge options need it

    if get_origin(kind) is Literal:
        return click.Choice([str(a) for a in get_args(kind)])
    bounds: dict[str, Any] = {}
    for m in metadata:
        if isinstance(m, Gt):
            bounds.update(min=m.gt, min_open=True)
        elif isinstance(m, Ge):
            bounds.update(min=m.ge)
        elif isinstance(m, Le):
            bounds.update(max=m.le)
    if kind is int:
        return click.IntRange(**{k: v for k, v in bounds.items() if k != "min_open"},
                              min_open=bool(bounds.get("min_open")))
    if kind is float:
        return click.FloatRange(**bounds)
    return str


# What a judge setting's value is, as its flag shows it (``--examples FILE``, not ``TEXT``).
METAVARS = {
    "model": "NAME", "base_url": "URL", "api_key_env": "VAR", "api_version": "VERSION",
    "prompt": "NAME|FILE", "examples": "FILE", "batch_file_out": "FILE",
    "batch_file_in": "FILE", "ray_address": "ADDRESS",
}


def _option(name: str, required: bool, model: Any = None
            ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option of one field of ``model`` (default: the judge's settings)."""
    if model is None:
        from labeler.settings import JudgeConfig as model

    field = model.model_fields[name]
    kind, _ = _bare(field.annotation)
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    meta = extra.get("cli")
    cli: dict[str, Any] = dict(meta) if isinstance(meta, dict) else {}
    decls = [flag_of(name), name]
    if kind is bool:
        return click.option(*decls, is_flag=True, default=None, help=field.description,
                            envvar=cli.get("envvar"))
    default = None if field.is_required() else field.default
    return click.option(*decls, type=_click_type(kind, field.metadata), required=required,
                        default=default, show_default=default is not None,
                        help=field.description, envvar=cli.get("envvar"),
                        metavar=cli.get("metavar", METAVARS.get(name)))


def deprecation_note(old: str, new: str) -> None:
    """Say on stderr that flag ``old`` is an older spelling of ``new`` (it still works)."""
    click.echo(f"labeler: note: {old} is deprecated; use {new} (the old spelling still "
               "works for now)", err=True)


def deprecated_alias(old: str, dest: str, new: str, *,
                     convert: Callable[[Any], Any] | None = None, **option: Any
                     ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A hidden option ``old`` that sets the command's parameter ``dest`` (the one of flag
    ``new``) and says on stderr that ``new`` is the spelling to use. ``option`` are click's
    option settings (its type, ``is_flag``, ``multiple``); ``convert`` maps its value to
    ``dest``'s. Place it below ``@main.command`` like any option.

    Usage::

        @deprecated_alias("--pairs", "per_pair", "--per-pair", is_flag=True)
    """
    hidden_name = "_old_" + old.lstrip("-").replace("-", "_")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(hidden_name)
            if value not in (None, (), False):
                deprecation_note(old, new)
                kwargs[dest] = convert(value) if convert else value
            return fn(*args, **kwargs)

        option.setdefault("help", f"Older spelling of {new} (hidden; says so when used).")
        return click.option(old, hidden_name, hidden=True, **option)(wrapper)

    return decorate


def bootstrap_options(*, include: Iterable[str] | None = None
                      ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding ``--bootstrap`` and ``--bootstrap-unit`` (or the ``include``d ones)
    of the agreement intervals, declared once in :class:`~labeler.settings.BootstrapConfig`."""
    from labeler.settings import BootstrapConfig

    names = list(include or BootstrapConfig.model_fields)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            fn = _option(name, required=False, model=BootstrapConfig)(fn)
        return fn

    return decorate


def judge_options(*, include: Iterable[str] | None = None, exclude: Iterable[str] = (),
                  require_model: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding one option per judge setting (all, or ``include`` minus ``exclude``)."""
    from labeler.settings import JudgeConfig

    names = [n for n in (include or JudgeConfig.model_fields) if n not in set(exclude)]

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            fn = _option(name, required=require_model and name == "model")(fn)
        return fn

    return decorate


STATS_FLAGS = {"pairs": "--pair-set"}
"""Statistics options whose flag is not their setting's name (``--pairs`` names a pairs
file everywhere; the older ``--pairs auto|all|best|adjacent`` still works, with a note)."""


def stats_options() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding one option per statistics option of
    :class:`~labeler.statistics.options.StatsOptions` (``--test``, ``--alpha``, ...)."""
    from labeler.statistics.options import option_specs

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for spec in reversed(option_specs()):
            decls = [STATS_FLAGS.get(spec.name, flag_of(spec.name)), f"stats_{spec.name}"]
            if spec.kind is bool:
                fn = click.option(*decls, is_flag=True, help=spec.help)(fn)
                continue
            if spec.choices is not None:
                kind: Any = click.Choice(list(spec.choices))
            elif spec.kind is int:
                lo, hi = spec.bounds.get("ge"), spec.bounds.get("le")
                kind = click.IntRange(min=None if lo is None else int(lo),
                                      max=None if hi is None else int(hi))
            else:
                kind = click.FloatRange(min=spec.bounds.get("gt", spec.bounds.get("ge")),
                                        max=spec.bounds.get("lt", spec.bounds.get("le")),
                                        min_open="gt" in spec.bounds,
                                        max_open="lt" in spec.bounds)
            fn = click.option(*decls, type=kind, default=spec.default, show_default=True,
                              help=spec.help)(fn)
        for name, flag in STATS_FLAGS.items():
            choices = next(s.choices for s in option_specs() if s.name == name)
            fn = deprecated_alias(flag_of(name), f"stats_{name}", flag,
                                  type=click.Choice(list(choices or ())))(fn)
        return fn

    return decorate


def stats_settings(params: dict[str, Any]) -> Any:
    """Pop the statistics options out of a command's keyword arguments, as
    :class:`~labeler.statistics.options.StatsOptions`."""
    from labeler.statistics.options import StatsOptions

    return StatsOptions(**{name.removeprefix("stats_"): params.pop(name)
                           for name in list(params) if name.startswith("stats_")})


def judge_settings(params: dict[str, Any]) -> dict[str, Any]:
    """Pop the judge settings out of a command's keyword arguments (given ones only)."""
    from labeler.settings import JudgeConfig

    return {name: params.pop(name) for name in list(params)
            if name in JudgeConfig.model_fields and params[name] is not None}


def read_side(reader: Callable[..., Any], path: Any, grade_map: str | None, flag: str,
              fmt: str | None = None) -> Any:
    """Read one label set with its ``--grade-map-*`` flag (and a forced format); a grade
    error's hint names that flag (the library's hint names the generic `grade_map` setting)."""
    from labeler import io
    from labeler.errors import InputError

    try:
        return reader(path, grade_map=io.parse_grade_map(grade_map), fmt=fmt)
    except InputError as exc:
        if "`grade_map`" not in exc.message:
            raise
        raise InputError(exc.message.replace("`grade_map`", flag), path=exc.path,
                         line=exc.line, row=exc.row) from None


def read_humans(reader: Callable[..., Any], paths: Sequence[Any], grade_map: str | None,
                fmt: str | None = None) -> Any:
    """The human labels of every ``--human`` file (the sheets of one design), each read with
    ``--grade-map-human``, as one label set: a pair graded differently in two files is an
    error naming the pair and both files (:func:`labeler.reconciliation.labelled.combine_human`).
    One file is read as it is."""
    from labeler.reconciliation.labelled import combine_human

    frames = {str(p): read_side(reader, p, grade_map, "--grade-map-human", fmt) for p in paths}
    if len(frames) == 1:
        return next(iter(frames.values()))
    return combine_human(frames)


HUMAN_MANY = ("; repeat --human for several files (the sheets of one sample), read together: "
              "a pair graded differently in two of them is an error.")
"""The end of every repeatable ``--human`` option's help."""


def read_label_sets(specs: tuple[str, ...], grade_map: str | None, fmt: str | None = None
                    ) -> dict[str, Any]:
    """``[NAME=]PATH`` specs → {name: label records}, each read with ``--grade-map-llm`` (and
    the format ``fmt`` forces): the judges of ``labeler judges`` and ``labeler blend``."""
    from labeler.reconciliation.agreement import read_llm
    from labeler.reconciliation.leaderboard import named_sets

    return {name: read_side(read_llm, path, grade_map, "--grade-map-llm", fmt)
            for name, path in named_sets(list(specs)).items()}


FILE = click.Path(dir_okay=False, path_type=Path)
"""A file option's type (its existence is checked by :mod:`labeler.io`, which names it)."""


def echo_result(result: Any, as_json: bool) -> None:
    """Print a result object: one JSON object (``to_dict()``, no NaN) or its text."""
    import json

    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False))
    else:
        click.echo(result.to_text(), nl=False)


# --------------------------------------------------------------------------- input formats

FORMATS = INPUT_FORMATS
KINDS: dict[str, tuple[str, ...]] = {
    "pairs": FORMATS_OF["pairs"], "queries": FORMATS_OF["queries"],
    "corpus": FORMATS_OF["corpus"], "run": FORMATS_OF["runs"],
    **dict.fromkeys(("qrels", "human", "llm", "labels"), FORMATS_OF["labels"]),
}
"""The formats each input (named by its flag) can be in."""


def format_option(*inputs: str, flag: str = "--format"
                  ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The repeatable ``--format [INPUT=]FORMAT`` option (parameter ``fmt``) of a command
    whose inputs are ``inputs`` (their flags without dashes)."""
    return click.option(
        flag, "fmt", multiple=True, metavar="[INPUT=]FORMAT",
        help="Format of input files whose extension and content do not say "
             f"({', '.join(FORMATS)}): INPUT=FORMAT for one input ({', '.join(inputs)}), or "
             "FORMAT for every input it fits; repeatable.")


class InputFormats:
    """The formats a command's ``--format [INPUT=]FORMAT`` values force, per input.

    ``paths`` maps each input of the command (its flag without dashes: ``human``,
    ``queries``, ``run`` ...) to its path or paths; a bare FORMAT applies to every input it
    fits (:data:`KINDS`), ``INPUT=FORMAT`` to one. Used as a context manager, it names
    ``FLAG INPUT=FORMAT`` in a library error about an unknown format of one of the paths, and
    says which forcing a forced file's error comes from.

    Usage::

        formats = InputFormats(fmt, {"human": human_path, "run": list(run_paths)})
        with formats:
            human = io.read_qrels(human_path, formats["human"])
    """

    def __init__(self, values: Sequence[str], paths: Mapping[str, Any], *,
                 flag: str = "--format") -> None:
        from labeler.errors import ConfigError

        self.flag = flag
        self._paths = {name: _path_list(value) for name, value in paths.items()}
        kinds = {name: KINDS[name] for name in paths}
        forced: dict[str, str] = {}
        said: dict[str, str] = {}   # input -> the value that forced it, for messages
        bare: set[str] = set()
        for value in values:
            name, _, fmt = value.rpartition("=")
            fmt = {"qrels": "trec", "run": "trec"}.get(fmt.strip().lower(), fmt.strip().lower())
            if fmt not in FORMATS:
                raise ConfigError(f"{flag} {value}: unknown format {fmt!r} (use "
                                  f"{', '.join(FORMATS)})")
            if not name:
                bare.add(fmt)
                continue
            name = name.strip().lstrip("-")
            if name not in kinds:
                raise ConfigError(f"{flag} {value}: no input here is called {name!r} (inputs: "
                                  f"{', '.join(kinds)})")
            if fmt not in kinds[name]:
                raise ConfigError(f"{flag} {value}: --{name} cannot be {fmt} (use "
                                  f"{', '.join(kinds[name])})")
            if forced.get(name, fmt) != fmt:
                raise ConfigError(f"{flag}: --{name} is given two formats ({said[name]}, "
                                  f"{value})")
            forced[name], said[name] = fmt, value
        if len(bare) > 1:
            raise ConfigError(f"{flag}: give one FORMAT for every input, or INPUT=FORMAT for "
                              f"each input (got {', '.join(sorted(bare))})")
        for fmt in bare:
            fits = [name for name, ok in kinds.items() if fmt in ok]
            if not fits:
                raise ConfigError(f"{flag} {fmt}: no input of this command can be {fmt}")
            for name in fits:
                if name not in forced:
                    forced[name], said[name] = fmt, fmt
        self._forced, self._said = forced, said

    def __getitem__(self, name: str) -> str | None:
        return self._forced.get(name)

    def __enter__(self) -> InputFormats:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        from labeler.errors import InputError

        if not isinstance(exc, InputError) or exc.path is None:
            return
        at = str(Path(exc.path))
        name = next((n for n, ps in self._paths.items() if at in ps), None)
        if name is None:   # a file the flag does not reach (few-shot examples): no hint
            from labeler.io._base import FORMAT_HINT

            if FORMAT_HINT in exc.message:
                raise InputError(exc.message.replace(FORMAT_HINT, ""), path=exc.path,
                                 line=exc.line, row=exc.row) from None
            return
        message = exc.message.replace("`fmt`", f"{self.flag} {name}=FORMAT")
        if name in self._forced:   # say why it was read so, in case the forcing was wrong
            message += f" (read as {self._forced[name]}: {self.flag} {self._said[name]})"
        if message == exc.message:
            return
        raise InputError(message, path=exc.path, line=exc.line, row=exc.row) from None


def _path_list(value: Any) -> list[str]:
    """Paths (``NAME=PATH`` run specs resolved) as the strings an error message carries."""
    from labeler.io.arrow_read import split_run_spec

    if value is None:
        return []
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in (v for v in values if v is not None):
        path = split_run_spec(v)[1]
        if path is None:   # a bad NAME=PATH: io's reader names it
            from labeler.io import parse_run_arg

            path = parse_run_arg(v)[1]
        out.append(str(Path(path)))
    return out
