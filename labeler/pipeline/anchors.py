"""Anchors: human-graded pairs the nightly job re-judges every run, never from the cache.

Their agreement with the human grades, the grades that changed since the accepted run and the
model identity the endpoint reports are what tell a judge change from a data change
(:mod:`labeler.pipeline.guard` decides). The anchors file is a table with ``query_id, query,
chunk_id, chunk, grade`` (CSV, JSONL, Parquet), or qrels (TREC or a table of ids and grades)
whose texts come from the job's ``[inputs]`` (its pairs file, or its queries and corpus).

Usage::

    anchors = read_anchors(cfg)                       # query_id, query, chunk_id, chunk, grade
    judged = judge_anchors(cfg, anchors)              # through the judge, bypassing the cache
    block = anchor_block(anchors, judged, previous)   # the `anchors` object of drift.json
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from labeler import io
from labeler.errors import InputError
from labeler.schema import PAIR_COLUMNS, STATUS, STATUS_OK

if TYPE_CHECKING:
    from labeler.labelling.result import LabelResult
    from labeler.pipeline.config import Config

__all__ = ["ANCHORS_FILE", "AnchorRun", "anchor_block", "judge_anchors", "read_anchors"]

log = logging.getLogger("labeler.run")

ANCHORS_FILE = "anchors.jsonl"
"""The anchors' label records in each run directory (what the next run compares with)."""
FEW, MANY = 50, 500
"""The recommended size of an anchor set: fewer cannot show a 10% change, more cost more
than they tell."""
_KEYS = ["query_id", "chunk_id"]


# --------------------------------------------------------------------------- reading

def read_anchors(cfg: Config) -> pd.DataFrame:
    """The anchors of ``cfg``: ``query_id, query, chunk_id, chunk, grade`` (grades 0–3), one
    row per pair. A pair given twice with different grades, a grade outside 0–3 or an id
    missing from the texts is an error naming the file.

    Usage: ``read_anchors(load_config("nightly.toml"))``
    """
    path = cfg.drift.anchors
    if path is None:
        raise InputError("no anchors configured ([drift] anchors)")
    kind = io.detect_format(path, cfg.drift.anchors_format)
    columns: set[str] = set()
    if kind != "trec":
        columns = set(io.read_table(path, kind)[0].columns)
    if {"query", "chunk"} <= columns:
        if "grade" not in columns:
            raise InputError("the anchors need a grade column (the human grade 0-3)", path=path)
        table = io.read_pairs(path, kind)
        grades = io.parse_grades(table["grade"], path, lambda i: {"row": i + 1})
        df = table[list(PAIR_COLUMNS)].astype(str).assign(grade=grades.to_numpy())
        dup = df.duplicated(_KEYS, keep=False)
        if df.loc[dup].groupby(_KEYS)["grade"].nunique().gt(1).any():
            first = df.loc[dup].iloc[0]
            raise InputError(f"the pair ({first['query_id']}, {first['chunk_id']}) is given "
                             "twice with different grades", path=path)
        df = df.drop_duplicates(_KEYS)
    else:
        qrels = io.read_qrels(path, kind)
        df = _with_texts(cfg, qrels[[*_KEYS, "grade"]].astype({"query_id": str,
                                                                 "chunk_id": str}), path)
    if df.empty:
        raise InputError("the anchors file has no pairs", path=path)
    n = len(df)
    if n < FEW or n > MANY:
        log.warning("%d anchors: %s (50-500 are recommended)", n,
                    "too few to show a change of a tenth of their grades" if n < FEW
                    else "more than a nightly check needs; they are judged every run")
    df = df.reset_index(drop=True)
    df.attrs["path"] = str(path)
    return df


def _with_texts(cfg: Config, qrels: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Ids-only anchors with their texts from the job's pairs file, or queries and corpus."""
    inputs, fmt = cfg.inputs, cfg.inputs.format.get
    if inputs.pairs is not None:
        pairs = io.read_pairs(inputs.pairs, fmt("pairs"))
        queries = dict(zip(pairs["query_id"].astype(str), pairs["query"].astype(str)))
        chunks = dict(zip(pairs["chunk_id"].astype(str), pairs["chunk"].astype(str)))
        for col, texts, what in (("query_id", queries, "query"), ("chunk_id", chunks, "chunk")):
            missing = sorted(set(qrels[col]) - texts.keys())
            if missing:
                more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
                raise InputError(f"the anchors' {col} {missing[0]!r}{more} has no {what} text "
                                 f"in the pairs file {inputs.pairs}; give the anchors as a "
                                 "table with query and chunk columns", path=path)
        out = qrels.assign(query=qrels["query_id"].map(queries),
                           chunk=qrels["chunk_id"].map(chunks))
        return out[[*PAIR_COLUMNS, "grade"]]
    from labeler.labelling.pooling import with_texts

    try:
        out = with_texts(qrels, inputs.queries, inputs.corpus, queries_fmt=fmt("queries"),
                         corpus_fmt=fmt("corpus"))
    except InputError as exc:
        raise InputError(f"the anchors' texts: {exc.message}", path=path) from None
    return out[[*PAIR_COLUMNS, "grade"]]


# --------------------------------------------------------------------------- judging

@dataclass(frozen=True)
class AnchorRun:
    """The anchors as judged tonight: label records, the stage's result, the judge's prompt
    id and the identity the endpoint reported (``reported``: (model, fingerprint) → answers).
    """

    records: pd.DataFrame
    result: LabelResult
    prompt_id: str
    reported: Mapping[tuple[str | None, str | None], int]

    def identity(self, model: str) -> dict[str, Any]:
        """``model`` (asked for), ``prompt_id``, and what the endpoint reported:
        ``reported_models`` and ``system_fingerprints`` (empty when it says nothing) and
        ``reported`` (each combination with its count of answers)."""
        combos = sorted(self.reported.items(), key=lambda kv: (-kv[1], str(kv[0])))
        return {
            "model": model, "prompt_id": self.prompt_id,
            "reported_models": sorted({m for (m, _), _n in combos if m}),
            "system_fingerprints": sorted({f for (_m, f), _n in combos if f}),
            "reported": [{"model": m, "system_fingerprint": f, "answers": n}
                         for (m, f), n in combos],
        }

    def cost(self) -> dict[str, Any]:
        """``calls``, ``input_tokens``, ``output_tokens``, ``cost_usd`` of tonight's anchors."""
        s = self.result.summary
        return {"pairs": s.n_pairs, "calls": s.calls, "input_tokens": s.input_tokens,
                "output_tokens": s.output_tokens, "cost_usd": s.cost_usd}


def judge_anchors(cfg: Config, anchors: pd.DataFrame) -> AnchorRun:
    """Judge ``anchors`` with the configured judge — same prompt, sampling and retries as the
    job — always asking the endpoint (no cache is read or written). Judged online even when
    the job labels through a batch, and locally when it uses Ray: they are few.

    Usage: ``judge_anchors(cfg, read_anchors(cfg)).records``
    """
    from labeler.judges import make_judge
    from labeler.judges.prompts import Topics
    from labeler.labelling.limits import RetryPolicy
    from labeler.labelling.stage import label_pairs

    j = cfg.judge
    online = j.model_copy(update={"batch": False, "batch_wait": None, "batch_file_in": None,
                                  "batch_file_out": None, "engine": "local",
                                  "ray_address": None, "ray_actors": None})
    pairs = anchors[list(PAIR_COLUMNS)]
    judge = make_judge(online, api_key=os.environ.get(j.api_key_env),
                       topics=Topics.from_frame(pairs))
    result = label_pairs(pairs, judge, cache=None, concurrency=j.concurrency, rpm=j.rpm,
                         tpm=j.tpm, retry=RetryPolicy(j.max_retries, j.backoff_base,
                                                      j.backoff_max),
                         prices=cfg.price_table(), progress=False)
    reported = dict(getattr(judge, "reported", None) or {})
    return AnchorRun(result.records, result, judge.prompt_id, reported)


# --------------------------------------------------------------------------- the check

def _graded(records: pd.DataFrame) -> pd.DataFrame:
    ok = records.loc[records[STATUS].astype(str) == STATUS_OK] if STATUS in records else records
    ok = ok.loc[ok["grade"].notna(), [*_KEYS, "grade"]]
    return ok.astype({"query_id": str, "chunk_id": str, "grade": "int64"})


def _agreement(records: pd.DataFrame, human: pd.DataFrame, bootstrap: int, seed: int
               ) -> dict[str, Any] | None:
    """Quadratic κ, ordinal α and exact agreement with their query-bootstrap intervals."""
    from labeler.reconciliation.agreement import agreement

    llm = _graded(records)
    if llm.merge(human[_KEYS], on=_KEYS).empty:
        return None
    rep = agreement(llm=llm, human=human, bootstrap=bootstrap, seed=seed, unit="query")
    ci = rep.ci or {}
    names = ("cohen_kappa_quadratic", "krippendorff_alpha_ordinal", "exact_agreement")
    return {"n": rep.n, **{k: getattr(rep, k) for k in names},
            "mean_signed_difference": rep.mean_signed_difference,
            "ci": {k: ci.get(k) for k in names} if ci else None,
            "bootstrap": bootstrap, "bootstrap_unit": "query", "seed": seed}


def anchor_block(anchors: pd.DataFrame, run: AnchorRun, model: str, *,
                 previous: str | None = None, prev_records: pd.DataFrame | None = None,
                 bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The ``anchors`` object of ``drift.json``: counts, agreement with the human grades
    (with intervals), tonight's identity and cost, and — with the accepted run's anchor
    records — the grades changed since then and the agreement then, on the same pairs.

    Usage: ``anchor_block(anchors, judge_anchors(cfg, anchors), cfg.judge.model)``
    """
    human = anchors[[*_KEYS, "grade"]].astype({"query_id": str, "chunk_id": str})
    now = _graded(run.records)
    block: dict[str, Any] = {
        "file": anchors.attrs.get("path"), "n": len(anchors), "n_judged": len(now),
        "n_failed": len(anchors) - len(now),
        "agreement": _agreement(run.records, human, bootstrap, seed),
        "identity": run.identity(model), "cost": run.cost(),
        "since": None,
    }
    if prev_records is None:
        return block
    before = _graded(prev_records)
    both = before.merge(now, on=_KEYS, suffixes=("_before", "_now")).merge(human[_KEYS],
                                                                           on=_KEYS)
    changed = both.loc[both["grade_before"] != both["grade_now"]].sort_values(_KEYS)
    same = both[_KEYS]
    then = _agreement(before.merge(same, on=_KEYS), human, 0, seed)
    tonight = _agreement(now.merge(same, on=_KEYS), human, 0, seed)
    alpha = "krippendorff_alpha_ordinal"
    drop = (then[alpha] - tonight[alpha] if then and tonight and then[alpha] is not None
            and tonight[alpha] is not None else None)
    block["since"] = {
        "run": previous, "n_compared": len(both), "n_changed": len(changed),
        "changed_share": len(changed) / len(both) if len(both) else 0.0,
        "agreement_before": then, "agreement_now": tonight, "alpha_drop": drop,
        "changed": [{"query_id": r.query_id, "chunk_id": r.chunk_id,
                     "before": int(r.grade_before), "now": int(r.grade_now)}
                    for r in changed.itertuples()],
    }
    return block
