"""How differences are tested, declared once: the API's :class:`StatsOptions`, the
``labeler compare`` flags and the ``[statistics]`` section of a ``labeler run`` config all come
from the fields below (their type, default, bounds and help).

A new statistics option is one new field here, with ``help`` (and bounds) in its metadata.

Usage::

    from labeler.statistics.options import StatsOptions
    StatsOptions(test="randomization", permutations=20_000, ppi=True)
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

from labeler.errors import ConfigError

__all__ = ["StatsOptions", "option_specs"]


@dataclass(frozen=True)
class StatsOptions:
    """How differences are tested: ``test`` (``t`` or ``randomization``), ``permutations``
    and ``seed`` (randomization test; also the halves of ``ppi_tune``), ``alpha``
    (significance level after Holm's correction), ``ppi`` (add prediction-powered
    estimates), ``ppi_target`` (``queries``: the mean over these queries; ``population``: over
    the population they were drawn from), ``ppi_tune`` (cross-fitted power tuning), ``pairs``
    (``all``, ``best``, ``adjacent``; ``auto``: all up to 50 runs, best above)."""

    test: Literal["t", "randomization"] = field(default="t", metadata={
        "help": "Paired test of every pair of runs under each label set: Student's t, or the "
                "sign-flip randomization test."})
    alpha: float = field(default=0.05, metadata={
        "gt": 0, "lt": 1,
        "help": "Significance level of a difference, after Holm's correction over the pairs."})
    permutations: int = field(default=10_000, metadata={
        "ge": 1,
        "help": "Random sign flips of the randomization test (all of them when there are "
                "fewer)."})
    seed: int = field(default=0, metadata={
        "ge": 0, "help": "Random seed of the randomization test (and of the halves of "
                         "--ppi-tune; and of the ranking's query resamples)."})
    bootstrap: int = field(default=1000, metadata={
        "ge": 0,
        "help": "Resamples of whole queries for how often the best run stays first (0: "
                "none)."})
    ppi: bool = field(default=False, metadata={
        "help": "Prediction-powered NDCG: the human labels cover a random sample of whole "
                "queries (`labeler sample --unit query`), the LLM labels every query; each "
                "mean and difference is the LLM one corrected by the sample."})
    ppi_target: Literal["queries", "population"] = field(default="queries", metadata={
        "help": "What a PPI interval is an interval of: the mean over these queries under "
                "full human labelling, or over the population of queries they were drawn "
                "from (wider)."})
    ppi_tune: bool = field(default=False, metadata={
        "help": "Weight the LLM values by a power-tuned lambda, fitted on one half of the "
                "human-judged queries and applied to the other (never on the same ones); "
                "from 10 judged queries on (below, lambda stays 1)."})
    pairs: Literal["auto", "all", "best", "adjacent"] = field(default="auto", metadata={
        "help": "Which pairs of runs to test: all, each run against the best, or neighbours "
                "in the order; auto: all up to 50 runs, best above."})

    def __post_init__(self) -> None:
        for spec in option_specs():
            _check(spec, getattr(self, spec.name))

    @property
    def test_name(self) -> str:
        """The test in words, for reports."""
        if self.test == "t":
            return "paired t-test"
        return f"paired randomization test ({self.permutations:,} sign flips)"

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON."""
        return {**dataclasses.asdict(self), "correction": "holm"}


@dataclass(frozen=True)
class OptionSpec:
    """One statistics option as the CLI and the config see it."""

    name: str
    kind: Any            # bool, int, float or str
    choices: tuple[str, ...] | None
    default: Any
    help: str
    bounds: dict[str, float]


def option_specs() -> list[OptionSpec]:
    """Every option of :class:`StatsOptions`, in order, with its kind, bounds and help."""
    hints = typing.get_type_hints(StatsOptions)
    specs = []
    for f in dataclasses.fields(StatsOptions):
        kind = hints[f.name]
        choices = None
        if get_origin(kind) is Literal:
            choices, kind = tuple(str(a) for a in get_args(kind)), str
        bounds = {k: f.metadata[k] for k in ("ge", "gt", "le", "lt") if k in f.metadata}
        specs.append(OptionSpec(f.name, kind, choices, f.default, f.metadata["help"], bounds))
    return specs


_WORDS = {"ge": "at least", "gt": "greater than", "le": "at most", "lt": "less than"}


def _check(spec: OptionSpec, value: Any) -> None:
    if spec.choices is not None:
        if value not in spec.choices:
            raise ConfigError(f"unknown {spec.name} {value!r}; choose one of "
                              f"{', '.join(spec.choices)}", setting=spec.name)
        return
    ok_type = (isinstance(value, bool) if spec.kind is bool
               else isinstance(value, int) and not isinstance(value, bool) if spec.kind is int
               else isinstance(value, (int, float)) and not isinstance(value, bool)
               and math.isfinite(value))
    if not ok_type:
        raise ConfigError(f"{spec.name} must be {_kind_words(spec.kind)}, got {value!r}",
                          setting=spec.name)
    for bound, limit in spec.bounds.items():
        if not {"ge": value >= limit, "gt": value > limit, "le": value <= limit,
                "lt": value < limit}[bound]:
            limits = " and ".join(f"{_WORDS[b]} {lim:g}" for b, lim in spec.bounds.items())
            raise ConfigError(f"{spec.name} must be {limits}, got {value!r}", setting=spec.name)


def _kind_words(kind: Any) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number"}.get(kind, "text")
