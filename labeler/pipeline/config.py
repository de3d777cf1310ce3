"""The ``labeler run`` configuration: one TOML file, validated by pydantic.

Relative paths are resolved against the directory of the config file; unknown keys are
refused; every error names the key's path (``judge.concurrency: Input should be greater
than 0``). The API key is never in the file: ``judge.api_key_env`` names the environment
variable that holds it.

Usage::

    from labeler.pipeline.config import load_config
    cfg = load_config("nightly.toml")
    cfg.judge.model, cfg.inputs.runs, cfg.k
"""

from __future__ import annotations

import glob
import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator,
                       model_validator)

from labeler.errors import ConfigError
from labeler.labelling.limits import Price
from labeler.redact import redact_data
from labeler.schema import FORMATS_OF, InputFormat
from labeler.settings import BootstrapConfig, JudgeConfig
from labeler.statistics.options import StatsOptions, option_specs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Config", "DriftConfig", "HumanConfig", "InputsConfig", "JudgeConfig", "PriceConfig",
           "config_hash", "load_config", "parse_config"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputsConfig(_Section):
    """What to label: a pairs file, or queries + corpus + runs pooled to ``depth``.

    ``runs`` (paths, glob patterns or ``NAME=PATH``) are also what gets scored; they may
    accompany ``pairs``. ``format`` forces a file's format where its extension and content do
    not say (``{queries = "tsv"}``).
    """

    pairs: Path | None = None
    queries: Path | None = None
    corpus: Path | None = None
    runs: list[str] = Field(default_factory=list)
    depth: int = Field(default=10, gt=0, description="pool the top `depth` of each run")
    format: dict[Literal["pairs", "queries", "corpus", "runs"], InputFormat] = Field(
        default_factory=dict, description='force an input\'s format, e.g. {queries = "tsv"}')

    @field_validator("runs", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _pairs_or_pool(self) -> InputsConfig:
        for name, fmt in self.format.items():
            if fmt not in FORMATS_OF[name]:
                raise ValueError(f"format: {name} cannot be {fmt} (use "
                                 f"{', '.join(FORMATS_OF[name])})")
        pooling = [name for name in ("queries", "corpus") if getattr(self, name) is not None]
        if self.pairs is not None and pooling:
            raise ValueError("give either `pairs` or `queries` + `corpus` + `runs`, not both")
        if self.pairs is None:
            missing = [name for name in ("queries", "corpus") if getattr(self, name) is None]
            if not self.runs:
                missing.append("runs")
            if missing:
                raise ValueError("give `pairs`, or `queries`, `corpus` and `runs` to pool "
                                 f"from (missing: {', '.join(missing)})")
        return self


class HumanConfig(BootstrapConfig, _Section):
    """An optional human sample: agreement, merged labels, human-vs-LLM comparison.

    ``bootstrap`` and ``bootstrap_unit`` (the agreement intervals) are declared once in
    :class:`~labeler.settings.BootstrapConfig`, as the CLI's flags are."""

    qrels: Path | list[Path] = Field(
        description="the human labels: a file, or a list of files read together (the sheets "
                    "of one design; a pair with two different grades is an error)")
    format: InputFormat | None = Field(
        default=None, description="force the qrels file's format")

    @property
    def paths(self) -> list[Path]:
        """The human label files, in the order given."""
        return list(self.qrels) if isinstance(self.qrels, list) else [self.qrels]

    @field_validator("format")
    @classmethod
    def _a_labels_format(cls, value: InputFormat | None) -> InputFormat | None:
        if value is not None and value not in FORMATS_OF["labels"]:
            raise ValueError(f"the qrels cannot be {value} (use "
                             f"{', '.join(FORMATS_OF['labels'])})")
        return value

    @field_validator("qrels")
    @classmethod
    def _some_qrels(cls, value: Path | list[Path]) -> Path | list[Path]:
        if isinstance(value, list) and not value:
            raise ValueError("qrels needs at least one file")
        return value
    calibrate: bool = False
    calibration_method: Literal["thresholds", "distribution", "ordinal", "isotonic"] = (
        "thresholds")
    grade_map: dict[str, int] | None = Field(
        default=None, description='map raw human grades, e.g. {"-1" = 0, "4" = 3}')


class DriftConfig(_Section):
    """When a run counts as drifted from the previous one in the same output directory, and
    the anchors that tell a judge change from a data change (re-judged every run; the guard
    holds ``latest`` back when the judge changed)."""

    max_changed_share: float = Field(
        default=0.05, ge=0, le=1,
        description="share of pairs judged in both runs whose LLM grade changed")
    max_ndcg_delta: float = Field(
        default=0.02, ge=0, description="largest |change| of a run's mean NDCG@k (LLM labels)")
    anchors: Path | None = Field(
        default=None, description="human-graded pairs re-judged every run, never from the "
                                  "cache: a table with query_id, query, chunk_id, chunk, grade, "
                                  "or qrels whose texts come from [inputs]")
    anchors_format: InputFormat | None = Field(
        default=None, description="force the anchors file's format")
    max_anchor_flips: float = Field(
        default=0.10, ge=0, le=1,
        description="share of anchor grades changed since the accepted run that trips the guard")
    max_agreement_drop: float = Field(
        default=0.05, ge=0,
        description="drop of the anchors' Krippendorff alpha since the accepted run that trips "
                    "the guard")


def _statistics_fields() -> dict[str, Any]:
    """The ``[statistics]`` keys: the fields of
    :class:`~labeler.statistics.options.StatsOptions`, with their bounds and help."""
    fields: dict[str, Any] = {}
    for spec in option_specs():
        kind: Any = Literal[spec.choices] if spec.choices else spec.kind
        bounds: dict[str, Any] = dict(spec.bounds)
        fields[spec.name] = (kind, Field(default=spec.default, description=spec.help, **bounds))
    return fields


class _StatisticsBase(_Section):
    certify: bool = Field(
        default=False, description="also print the certified leaderboard (`labeler certify`) "
                                   "of the human sample, drawn by `labeler sample --unit query` "
                                   "(its design.json next to the human qrels)")

    def options(self) -> StatsOptions:
        """These settings as the comparison's
        :class:`~labeler.statistics.options.StatsOptions`."""
        return StatsOptions(**self.model_dump(exclude={"certify"}))


if TYPE_CHECKING:
    class StatisticsConfig(_StatisticsBase):
        """How differences between runs are tested (fields: those of StatsOptions)."""
else:
    StatisticsConfig = create_model(
        "StatisticsConfig", __base__=_StatisticsBase, __module__=__name__,
        __doc__="How differences between runs are tested: in the comparison, its report and "
                "drift.", **_statistics_fields())


class PriceConfig(Price):
    """USD per 1M tokens for one model (overrides the built-in price table); the same
    check as ``--prices``."""


class Config(_Section):
    """A whole ``labeler run`` job. Paths are absolute once loaded by :func:`load_config`."""

    inputs: InputsConfig
    judge: JudgeConfig
    human: HumanConfig | None = None
    drift: DriftConfig = Field(default_factory=DriftConfig)
    statistics: StatisticsConfig = Field(default_factory=StatisticsConfig)
    out_dir: Path = Path("labeler-runs")
    cache_dir: Path | None = Field(default=None, description="else $LABELER_CACHE_DIR")
    cache: bool = True
    k: list[int] = Field(default_factory=lambda: [10],
                         description="NDCG cut-offs; the first is the one compared and reported")
    gain: Literal["linear", "exponential"] = Field(
        default="linear", description="NDCG gain: rel, or 2^rel - 1")
    include_empty: bool = Field(
        default=False, description="count queries with no relevant chunk as 0 (trec_eval)")
    title: str | None = None
    prices: dict[str, PriceConfig] = Field(
        default_factory=dict, description='e.g. [prices] "my-model" = {input = 0.1, output = 0.4}')

    def price_table(self) -> dict[str, tuple[float, float]] | None:
        """``{model: (input, output)}`` USD per 1M tokens, or None for the built-in table."""
        return {m: (p.input, p.output) for m, p in self.prices.items()} or None

    def batch_price_table(self) -> dict[str, tuple[float, float]] | None:
        """The Batch API prices given in ``[prices]`` (others: half the online price)."""
        return {m: (p.batch_input, p.batch_output) for m, p in self.prices.items()
                if p.batch_input is not None and p.batch_output is not None} or None

    @field_validator("k", mode="before")
    @classmethod
    def _k_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, int) else value

    @field_validator("k")
    @classmethod
    def _k_positive(cls, value: list[int]) -> list[int]:
        if not value:
            raise ValueError("give at least one cut-off, e.g. k = [10]")
        if any(k <= 0 for k in value):
            raise ValueError("every k must be greater than 0")
        return list(dict.fromkeys(value))

    def resolved(self, base_dir: str | Path) -> Config:
        """A copy with every relative path made absolute against ``base_dir``."""
        base = Path(base_dir).resolve()

        def fix(p: Path | None) -> Path | None:
            if p is None or str(p).startswith("irds:"):  # an ir_datasets id, not a file
                return p
            return (base / p.expanduser()).resolve()

        inputs = self.inputs.model_copy(update={
            "pairs": fix(self.inputs.pairs), "queries": fix(self.inputs.queries),
            "corpus": fix(self.inputs.corpus),
            "runs": [run for pattern in self.inputs.runs for run in _expand_run(base, pattern)],
        })
        judge = self.judge
        if ("/" in judge.prompt or "\\" in judge.prompt or Path(judge.prompt).suffix):
            judge = judge.model_copy(update={"prompt": str(fix(Path(judge.prompt)))})
        if judge.examples is not None:
            judge = judge.model_copy(update={"examples": str(fix(Path(judge.examples)))})
        for name in ("batch_file_out", "batch_file_in"):  # files, relative to the config
            if getattr(judge, name):
                judge = judge.model_copy(update={name: str(fix(Path(getattr(judge, name))))})
        human = (None if self.human is None
                 else self.human.model_copy(update={"qrels": [fix(p) for p in
                                                              self.human.paths]}))
        drift = self.drift.model_copy(update={"anchors": fix(self.drift.anchors)})
        return self.model_copy(update={
            "inputs": inputs, "judge": judge, "human": human, "drift": drift,
            "out_dir": fix(self.out_dir),
            "cache_dir": fix(self.cache_dir),
        })


def _expand_run(base: Path, entry: str) -> list[str]:
    """``PATH``/pattern → resolved paths; ``NAME=PATH`` → ``NAME=<resolved path>`` (one
    file: a name for several would be ambiguous)."""
    from labeler.errors import InputError
    from labeler.io import parse_named

    try:
        name, rest = parse_named(entry, base=base)
    except InputError:
        raise ConfigError(f"inputs.runs: cannot read '{entry}': write NAME=PATH") from None
    if name is None:
        return [str(p) for p in _expand(base, entry)]
    paths = _expand(base, str(rest))
    if len(paths) != 1:
        raise ConfigError(f"inputs.runs: '{entry}' names {len(paths)} files; a name is for one "
                          "run")
    return [f"{name}={paths[0]}"]


def _expand(base: Path, pattern: str) -> list[Path]:
    """A run path, or a glob pattern (sorted matches); a pattern matching nothing is an error."""
    if pattern.startswith("irds:"):  # an ir_datasets id (its scored documents), not a file
        return [Path(pattern)]
    full = base / Path(pattern).expanduser()
    if not glob.has_magic(pattern):
        return [full.resolve()]
    matches = sorted(Path(p).resolve() for p in glob.glob(str(full)))
    if not matches:
        raise ConfigError(f"inputs.runs: the pattern '{pattern}' matches no file")
    return matches


def _format_errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key (check its spelling and section)"
        parts.append(f"{where}: {msg}")
    return "; ".join(parts)


def parse_config(data: dict[str, Any], *, source: str | Path = "<config>",
                 base_dir: str | Path | None = None) -> Config:
    """Validate a config mapping; paths are resolved against ``base_dir`` when given."""
    nul = _with_nul(data)
    if nul is not None:  # no file name, model or variable can hold one: refused, never cut
        raise ConfigError(f"{nul}: holds a NUL character (\\x00), which no path or name can "
                          "hold", path=source)
    try:  # strict, as TOML's own types: `true` is no count, "10" no number (never coerced)
        cfg = Config.model_validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc), path=source) from None
    if base_dir is None:
        return cfg
    try:
        return cfg.resolved(base_dir)
    except ConfigError as exc:
        raise ConfigError(exc.message, path=source) from None


def _with_nul(value: Any, where: str = "") -> str | None:
    """The key (``inputs.queries``, ``k[1]``) of the first string holding a NUL, or None."""
    if isinstance(value, str):
        return (where or "(top level)") if "\x00" in value else None
    items: Any = (value.items() if isinstance(value, dict)
                  else enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        if isinstance(key, str) and "\x00" in key:
            return f"{where}.{key!r}" if where else repr(key)
        name = f"{where}[{key}]" if isinstance(key, int) else (f"{where}.{key}" if where
                                                                 else str(key))
        found = _with_nul(item, name)
        if found is not None:
            return found
    return None


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config; relative paths are resolved against its directory."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError("no such config file", path=p)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8-sig"))  # a BOM is not TOML
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML ({exc})", path=p) from None
    except UnicodeDecodeError:
        raise ConfigError("not a UTF-8 text file", path=p) from None
    return parse_config(data, source=p, base_dir=p.parent)


def config_hash(cfg: Config) -> str:
    """``sha256:`` + 16 hex digits of the canonical JSON of the config, output directory
    left out (it does not change a label or a score)."""
    canon = json.dumps(redact_data(cfg.model_dump(mode="json", exclude={"out_dir"})),
                       sort_keys=True,
                       separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canon.encode()).hexdigest()[:16]
