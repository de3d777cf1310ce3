"""Everything a ``labeler run`` needs, checked before the lock is taken or the endpoint
called: the judge's key and settings, every input file, every output location, the lock and
``latest`` (:func:`check_run`); and every input read as the job would read it, the prompt
loaded (:func:`check_config`). ``labeler run --check`` runs only these: nothing is written and
no request is sent.

Usage::

    from labeler.pipeline.check import check_run
    for line in check_run(load_config("nightly.toml")):
        print(line)
    print(check_config(load_config("nightly.toml")).render())
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labeler.errors import ConfigError, InputError
from labeler.io.guard import check_outputs

if TYPE_CHECKING:
    from labeler.pipeline.config import Config

__all__ = ["CheckReport", "check_config", "check_run"]


def check_run(cfg: Config) -> list[str]:
    """Everything a run needs, checked before the lock is taken or the endpoint called: the
    judge's key and settings, every input file, every output location. Raises
    ``ConfigError``/``InputError`` (exit 2); returns what was checked, one line each.

    Usage: ``for line in check_run(load_config("nightly.toml")): print(line)``
    """
    from labeler.io import parse_run_arg
    from labeler.judges import make_judge
    from labeler.pipeline.inputs import check_judge

    check_judge(cfg)
    inputs: dict[str, Path] = {}
    for name in ("pairs", "queries", "corpus"):
        path = getattr(cfg.inputs, name)
        if path is not None:
            inputs[f"inputs.{name}"] = Path(path)
    for i, run in enumerate(cfg.inputs.runs):
        inputs[f"inputs.runs[{i}]"] = Path(parse_run_arg(run)[1])
    if cfg.human is not None:
        for i, p in enumerate(cfg.human.paths):
            inputs["human.qrels" + (f"[{i}]" if len(cfg.human.paths) > 1 else "")] = Path(p)
    if cfg.drift.anchors is not None:
        inputs["drift.anchors"] = Path(cfg.drift.anchors)
    for name, path in inputs.items():
        if not path.exists():
            raise InputError(f"{name}: no such file", path=path)
        if not path.is_file():
            raise InputError(f"{name}: not a file", path=path)
        if path.stat().st_size == 0:
            raise InputError(f"{name}: the file is empty", path=path)
    out_dir = Path(cfg.out_dir)
    cache_dir = cfg.cache_dir  # an existing cache may be read-only: it is then only read
    check_outputs(inputs, dirs={"out_dir": out_dir,
                                "cache_dir": None if cache_dir and cache_dir.is_dir()
                                else cache_dir})
    latest, lock = out_dir / "latest", out_dir / ".lock"
    if latest.is_dir() and not latest.is_symlink():
        raise ConfigError(f"{latest} is a real directory, not the link to the newest run that "
                          "labeler keeps there; move it away (or choose another out_dir)")
    if lock.is_symlink():
        raise ConfigError(f"{lock} is a symbolic link; labeler does not follow it (it could "
                          "overwrite another file): remove it")
    judge = make_judge(cfg.judge, api_key=os.environ.get(cfg.judge.api_key_env))
    endpoint = getattr(judge, "where", None) or "offline, no endpoint"
    return [f"inputs: {len(inputs)} file(s) found: " + ", ".join(inputs),
            f"outputs: {out_dir} can be written" + (f"; cache {cfg.cache_dir}"
                                                     if cfg.cache_dir else ""),
            f"judge: {cfg.judge.model} at {endpoint} (prompt {judge.prompt_id}); "
            "not called"]


@dataclass(frozen=True)
class CheckReport:
    """What the job would work on: counts of pairs, queries, runs and human labels."""

    pairs: int
    queries: int
    runs: int
    human_labels: int
    model: str
    endpoint: str
    out_dir: Path
    anchors: int = 0

    def render(self) -> str:
        """One paragraph for the terminal."""
        human = f", {self.human_labels} human labels" if self.human_labels else ""
        if self.anchors:
            human += f", {self.anchors} anchors (judged every run)"
        return (f"config ok: {self.pairs} pairs over {self.queries} queries, {self.runs} runs"
                f"{human}; judge {self.model} at {self.endpoint} (not called); outputs under "
                f"{self.out_dir}")


def check_config(cfg: Config) -> CheckReport:
    """Read every input of ``cfg`` as the job would, after :func:`check_run` (the judge's
    settings, files and outputs); raises the error the job would stop with.

    Usage: ``check_config(load_config("job.toml")).render()``
    """
    from labeler.judges import LEXICAL_NAMES
    from labeler.pipeline.inputs import (check_certify, check_ppi, load_inputs,
                                         read_human_labels)
    from labeler.judges.prompts import load_prompt
    from labeler.redact import redact

    pairs, runs = load_inputs(cfg)
    human = read_human_labels(cfg)
    check_ppi(cfg, pairs, human)
    check_certify(cfg, runs)
    n_anchors = 0
    if cfg.drift.anchors is not None:
        from labeler.pipeline.anchors import read_anchors

        n_anchors = len(read_anchors(cfg))
    if cfg.judge.model not in LEXICAL_NAMES:
        load_prompt(cfg.judge.prompt)
    endpoint = ("the offline baseline" if cfg.judge.model in LEXICAL_NAMES else
                redact(cfg.judge.base_url or os.environ.get("OPENAI_BASE_URL")
                       or "https://api.openai.com/v1"))
    return CheckReport(pairs=len(pairs), queries=int(pairs["query_id"].nunique()),
                       runs=0 if runs is None else int(runs["system"].nunique()),
                       human_labels=0 if human is None else len(human),
                       model=cfg.judge.model, endpoint=str(endpoint), out_dir=Path(cfg.out_dir),
                       anchors=n_anchors)
