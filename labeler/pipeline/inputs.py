"""The nightly job's inputs and settings, read and checked before anything runs.

Both the job (:mod:`labeler.pipeline.nightly`) and ``labeler run --check``
(:mod:`labeler.pipeline.check`) use these, so a config is checked one way.

Usage::

    from labeler.pipeline.inputs import load_inputs, check_judge
    check_judge(cfg); pairs, runs = load_inputs(cfg)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pandas as pd

from labeler import io
from labeler.errors import ConfigError

if TYPE_CHECKING:
    from labeler.pipeline.config import Config


def load_inputs(cfg: Config) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The pairs to label and the runs to score (None without runs)."""
    inputs, fmt = cfg.inputs, cfg.inputs.format.get
    runs = io.read_runs(inputs.runs, fmt("runs")) if inputs.runs else None
    if inputs.pairs is not None:
        return io.read_pairs(inputs.pairs, fmt("pairs")), runs
    from labeler.labelling.pooling import pool_pairs

    if inputs.queries is None or inputs.corpus is None or runs is None:  # config forbids it
        raise ConfigError("inputs: give `pairs`, or `queries`, `corpus` and `runs`")
    first_rows = runs.drop_duplicates("system")["system"].tolist()  # one tag per file, in order
    paths = (dict(zip(first_rows, (str(io.parse_run_arg(r)[1]) for r in inputs.runs)))
             if len(first_rows) == len(inputs.runs) else None)
    pairs = pool_pairs(io.read_queries(inputs.queries, fmt("queries")), inputs.corpus, runs,
                       inputs.depth, run_paths=paths, corpus_fmt=fmt("corpus"))
    return pairs, runs


def check_judge(cfg: Config) -> None:
    """Refuse a job whose judge cannot work, before anything runs: the named key is missing."""
    from labeler.judges import LEXICAL_NAMES

    j = cfg.judge
    local = bool(j.base_url or os.environ.get("OPENAI_BASE_URL"))
    needs_key = ("api_key_env" in j.model_fields_set or not local) \
        and not j.batch_file_out  # named, or api.openai.com; a batch file calls nothing
    if j.model not in LEXICAL_NAMES and needs_key and j.api_key_env not in os.environ:
        raise ConfigError(f"judge.api_key_env: the variable {j.api_key_env} is not set "
                          f"(needed to call {j.model!r}); export it, or set judge.base_url "
                          "for a local server, or judge.model = \"lexical\"")


def check_ppi(cfg: Config, pairs: pd.DataFrame, human: pd.DataFrame | None) -> None:
    """With ``statistics.ppi``, some queries must be left to the LLM alone: say so before
    the judge runs, not after."""
    if not cfg.statistics.options().ppi:
        return
    if human is None:
        raise ConfigError("`statistics.ppi` needs a [human] sample: a random sample of whole "
                          "queries judged by people", setting="ppi")
    queries = set(pairs["query_id"])
    if not queries - set(human["query_id"]):
        raise ConfigError(f"`statistics.ppi`: the human labels cover every one of the "
                          f"{len(queries)} queries, so there is nothing to predict; give them "
                          f"a random sample of the queries (`labeler sample --unit query`)",
                          setting="ppi")


def check_certify(cfg: Config, runs: pd.DataFrame | None) -> None:
    """With ``statistics.certify``, the runs, the [human] sample and its design (design.json
    next to the human qrels) must be there: say so before the judge runs."""
    if not cfg.statistics.certify:
        return
    if cfg.human is None or runs is None:
        raise ConfigError("`statistics.certify` needs runs and a [human] sample drawn by "
                          "`labeler sample --unit query` (its design.json next to the human "
                          "qrels)", setting="certify")
    from labeler.reconciliation.design import design_path, read_design

    read_design(design_path(cfg.human.paths[0]))


def read_human_labels(cfg: Config) -> pd.DataFrame | None:
    """The ``[human]`` labels of a job, every file of ``qrels`` read together (a pair with
    two different grades is an error naming it); None without a ``[human]`` section.

    Usage: ``human = read_human_labels(cfg)``
    """
    if cfg.human is None:
        return None
    from labeler.reconciliation.labelled import combine_human

    grade_map = io.parse_grade_map(cfg.human.grade_map)
    frames = {str(p): io.read_qrels(p, cfg.human.format, grade_map=grade_map)
              for p in cfg.human.paths}
    return combine_human(frames)
