"""Which pairs a human should label next: a stratified, reproducible sample of LLM labels,
or a simple random sample of whole queries.

Equal allocation across the first ``by`` column (the LLM grade by default: rare grades get as
many human labels as common ones, which is what agreement and calibration need), then spread
round-robin over the remaining columns (queries by default). Pairs a human already labelled
and failed LLM labels are skipped.

Usage::

    from labeler.reconciliation.sample import propose_sample, annotation_sheet
    todo = propose_sample("labels.jsonl", n=200, seed=0, exclude="human.qrels")
    io.write_table(annotation_sheet(todo), "to_annotate.csv")
    todo = sample_queries("labels.jsonl", n=15, seed=0)   # every pair of 15 random queries
    # ... and 10 more of the same random order: labeler.reconciliation.design.more_queries

A stratified sample is what agreement and calibration need; prediction-powered estimates of
NDCG need the other kind: queries drawn uniformly at random, every pooled pair of each judged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from labeler.schema import STATUS, STATUS_OK
from labeler.errors import ConfigError, InputError
from labeler.reconciliation.agreement import (KEYS, LabelsLike, PairsLike, QrelsLike, add_texts,
                                              read_human, read_llm)


def _allocate(sizes: pd.Series, n: int, rng: np.random.Generator) -> dict[object, int]:
    """Equal shares of ``n`` over strata; a stratum smaller than its share gives the rest
    to the others; the remainder goes to randomly chosen strata."""
    quota: dict[object, int] = {}
    active = list(sizes.index)
    remaining = n
    while active:
        share = remaining // len(active)
        small = [s for s in active if sizes[s] <= share]
        if not small:
            break
        for s in small:
            quota[s] = int(sizes[s])
            remaining -= int(sizes[s])
            active.remove(s)
    if active:
        base, extra = divmod(remaining, len(active))
        lucky = set(rng.permutation(len(active))[:extra].tolist())
        for i, s in enumerate(active):
            quota[s] = base + (1 if i in lucky else 0)
    return quota


def _round_robin(g: pd.DataFrame, spread: list[str], rng: np.random.Generator) -> pd.DataFrame:
    """Rows ordered so that taking the first k visits every spread value once per round."""
    g = g.sort_values("_r", kind="stable")
    key = g.groupby(spread, sort=False, dropna=False).ngroup().to_numpy()
    turn = rng.permutation(int(key.max()) + 1)[key]  # a random order of the spread values
    g = g.assign(_round=g.groupby(key).cumcount().to_numpy(), _turn=turn)
    return g.sort_values(["_round", "_turn"], kind="stable")


def propose_sample(labels: LabelsLike, *, n: int = 200, seed: int = 0,
                   exclude: QrelsLike | None = None, by: Sequence[str] = ("grade", "query_id"),
                   pairs: PairsLike | None = None) -> pd.DataFrame:
    """Up to ``n`` LLM-labelled pairs for a human to label next, stratified by ``by``.

    Returns ``query_id, chunk_id, llm_grade`` (+ ``query, chunk`` when the records or
    ``pairs`` have them), grouped by query; the same inputs and seed give the same sample.

    Usage: ``propose_sample("labels.jsonl", n=200, exclude="human.qrels", pairs="pairs.csv")``
    """
    if n < 1:
        raise ConfigError(f"the sample size must be at least 1, got {n}")
    by = list(by)
    if not by:
        raise ConfigError("stratify by at least one column, e.g. grade")
    df = read_llm(labels)
    missing = [c for c in by if c not in df.columns]
    if missing:
        raise ConfigError(f"cannot stratify by {', '.join(missing)}: the label records have "
                          f"{', '.join(map(str, df.columns))}")
    cand = df.loc[df[STATUS] == STATUS_OK]
    if exclude is not None:
        done = read_human(exclude)[KEYS]
        flag = cand[KEYS].merge(done.assign(_done=True), on=KEYS, how="left")["_done"]
        cand = cand.loc[~flag.fillna(False).astype(bool).to_numpy()]
    if cand.empty:
        raise InputError("no LLM-labelled pair is left to propose (every 'ok' pair already "
                         "has a human label)", path=df.attrs.get("path"))
    rng = np.random.default_rng(seed)
    cand = cand.assign(_r=rng.random(len(cand)))
    groups = dict(tuple(cand.groupby(by[0], sort=True)))
    quota = _allocate(pd.Series({k: len(g) for k, g in groups.items()}), min(n, len(cand)), rng)
    picked = []
    for value, g in groups.items():
        ordered = _round_robin(g, by[1:], rng) if by[1:] else g.sort_values("_r", kind="stable")
        picked.append(ordered.head(quota[value]))
    out = pd.concat(picked).sort_values(["query_id", "_r"], kind="stable")
    out = out.rename(columns={"grade": "llm_grade"})
    texts = [c for c in ("query", "chunk") if c in out.columns]
    out = add_texts(out[[*KEYS, "llm_grade", *texts]], pairs)
    extra = [c for c in ("query", "chunk") if c in out.columns]
    return out[[*KEYS, "llm_grade", *extra]].reset_index(drop=True)


def annotation_sheet(sample: pd.DataFrame, show_llm_grade: bool = False) -> pd.DataFrame:
    """The sample as a sheet to fill in: an empty ``grade`` column; the LLM's grade is hidden
    unless asked for (it anchors annotators)."""
    cols = [c for c in ("query_id", "query", "chunk_id", "chunk") if c in sample.columns]
    out = sample[cols].copy()
    out["grade"] = ""
    if show_llm_grade:
        out["llm_grade"] = sample["llm_grade"]
    return out


def sample_queries(labels: LabelsLike, *, n: int, seed: int = 0,
                   exclude: QrelsLike | None = None,
                   pairs: PairsLike | None = None) -> pd.DataFrame:
    """A simple random sample of ``n`` whole queries and every pooled pair of them.

    The pool is every pair of the label records (failed LLM labels included: a human can
    still judge them). Queries of ``exclude`` (human qrels) are already judged and not drawn
    again, so the queries judged so far stay a simple random sample. Each remaining query has
    the same chance; the same inputs and seed give the same queries: the first ``n`` of one
    seeded permutation (:func:`labeler.reconciliation.design.draw_queries` also returns the
    design that draws the next ones). Returns ``query_id,
    chunk_id, llm_grade`` (+ ``query, chunk`` when the records or ``pairs`` have them).

    Usage: ``sample_queries("labels.jsonl", n=15, seed=0, exclude="human.qrels")``
    """
    from labeler.reconciliation.design import draw_queries

    return draw_queries(labels, n=n, seed=seed, exclude=exclude, pairs=pairs).pairs


def anchor_sample(human: QrelsLike, texts: pd.DataFrame, *, n: int = 100,
                  seed: int = 0) -> pd.DataFrame:
    """Up to ``n`` human-graded pairs with their texts, for a nightly job's anchors: equal
    shares of each human grade (a rare grade gives the rest of its share to the others),
    spread round-robin over queries. ``texts``: ``query_id, query, chunk_id, chunk`` (pairs
    without texts are not drawn). Returns ``query_id, query, chunk_id, chunk, grade``; the
    same inputs and seed give the same anchors.

    Usage: ``anchor_sample("human.qrels", io.read_pairs("pairs.jsonl"), n=100)``
    """
    if n < 1:
        raise ConfigError(f"the number of anchors must be at least 1, got {n}")
    h = read_human(human)
    cols = ["query_id", "query", "chunk_id", "chunk"]
    t = texts[cols].astype(str).drop_duplicates(KEYS)
    cand = h.astype({"query_id": str, "chunk_id": str}).merge(t, on=KEYS)
    if cand.empty:
        raise InputError("no human-graded pair has its query and chunk texts: give the texts "
                         "of the judged pairs (--pairs, or --queries and --corpus)",
                         path=h.attrs.get("path"))
    rng = np.random.default_rng(seed)
    cand = cand.assign(_r=rng.random(len(cand)))
    groups = dict(tuple(cand.groupby("grade", sort=True)))
    quota = _allocate(pd.Series({k: len(g) for k, g in groups.items()}), min(n, len(cand)), rng)
    picked = [_round_robin(g, ["query_id"], rng).head(quota[v]) for v, g in groups.items()]
    out = pd.concat(picked).sort_values(["query_id", "_r"], kind="stable")
    return out[[*cols, "grade"]].reset_index(drop=True)
