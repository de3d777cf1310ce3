"""Vectorised trec_eval measures over the ranked rows of :func:`labeler.scoring.ndcg.kernel`.

Every function takes the kernel's :class:`~labeler.scoring.ndcg.Ranked` rows (in group, rank
order) and returns one value per (system, query) group, summing in rank order as trec_eval
does so that the floating-point sums are the same.

Usage::

    out = kernel(run_arrays, qrels_arrays, ks=[10], gain="linear", ideal="qrels", depth=None)
    values, empty = measure_values(out.ranked, parse_measure("AP@100"))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from labeler._arrow import chunks
from labeler.scoring.ndcg import UNJUDGED, KernelOut, Ranked, _ideal_dcg, discounts
from labeler.errors import ConfigError
from labeler.scoring.measures import Measure


def level_of(m: Measure) -> int:
    """The lowest relevant grade of ``m`` (1 for nDCG and Judged: a query with no grade ≥ 1
    has no relevant chunk)."""
    return 1 if m.name in ("nDCG", "Judged") else m.rel


def relevant_counts(r: Ranked, level: int) -> np.ndarray:
    """Per group: how many chunks of its query the qrels judge with a grade ≥ ``level``."""
    keep = r.qr_grade >= level
    return np.bincount(r.qr_q[keep], minlength=r.n_codes)[r.group_q]


def _cached(cache: dict[Any, Any], key: Any, make: Any) -> Any:
    if key not in cache:
        cache[key] = make()
    return cache[key]


def measure_values(r: Ranked, m: Measure, cache: dict[Any, Any] | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(value per group, whether the group's query has no relevant chunk at ``m``'s level).

    The value is trec_eval's for the query (0 where nothing is relevant; Judged@k its share).
    ``cache`` shares the pieces several measures need (relevant counts, the relevant rows).
    """
    if r.depth is not None and (m.cutoff is None or m.cutoff > r.depth):
        raise ConfigError(f"internal: ranking kept to depth {r.depth}, {m} needs more")
    cache = {} if cache is None else cache
    ng = len(r.counts)
    level = level_of(m)
    num_rel = _cached(cache, ("num_rel", level), lambda: relevant_counts(r, level))
    empty = num_rel == 0
    if m.name == "Judged":   # rows the qrels judge (any grade), in rank order
        rows = _cached(cache, "judged", lambda: np.flatnonzero(r.grades != UNJUDGED))
    else:                    # rows relevant at the level (UNJUDGED is below every level)
        rows = _cached(cache, ("rel", level), lambda: np.flatnonzero(r.grades >= level))
    rel_g, rel_pos = r.row_g[rows], r.pos[rows]
    if m.cutoff is not None:
        cut = rel_pos < m.cutoff
        rows, rel_g, rel_pos = rows[cut], rel_g[cut], rel_pos[cut]
    if m.name == "Judged":
        return np.bincount(rel_g, minlength=ng) / np.minimum(r.counts, int(m.cutoff or 1)), empty
    if m.name == "nDCG":     # linear gain, summed in rank order over the relevant rows
        dcg = np.bincount(rel_g, weights=r.grades[rows].astype(np.float64)
                          / discounts(int(rel_pos.max(initial=0)) + 1)[rel_pos], minlength=ng)
        idcg = _ideal_dcg(r.qr_q, r.qr_grade, r.n_codes, [int(m.cutoff or 1)],
                          "linear")[r.group_q, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.minimum(np.where(idcg > 0, dcg / idcg, 0.0), 1.0), empty
    if m.name == "P":
        return np.bincount(rel_g, minlength=ng) / float(m.cutoff or 1), empty
    if m.name == "R":
        hits = np.bincount(rel_g, minlength=ng)
        return np.where(empty, 0.0, hits / np.maximum(num_rel, 1)), empty
    if m.name == "RR":
        out = np.zeros(ng)
        groups, first = np.unique(rel_g, return_index=True)
        out[groups] = 1.0 / (rel_pos[first] + 1.0)
        return out, empty
    # AP: precision at each relevant rank, summed in rank order, over all relevant
    per_group = np.bincount(rel_g, minlength=ng)
    so_far = np.arange(1, len(rel_g) + 1, dtype=np.float64) - (np.cumsum(per_group)
                                                               - per_group)[rel_g]
    total = np.bincount(rel_g, weights=so_far / (rel_pos + 1.0), minlength=ng)
    return np.where(empty, 0.0, total / np.maximum(num_rel, 1)), empty


# --------------------------------------------------------------------------- tables

@dataclass(frozen=True)
class Missing:
    """Queries of the qrels that a run lacks (trec_eval ``-c``): one row per (system, query)."""

    system: np.ndarray       # index into the kernel's system names
    codes: np.ndarray        # query code (the kernel's code space)
    queries: pa.Array | pa.ChunkedArray

    def num_rel(self, r: Ranked, level: int) -> np.ndarray:
        keep = r.qr_grade >= level
        return np.bincount(r.qr_q[keep], minlength=r.n_codes)[self.codes]

    def idcg(self, out: KernelOut, ks: list[int], gain: str, ideal: str) -> np.ndarray:
        """IDCG@k of each missing query (0 with ``ideal="run"``: the run has no list)."""
        r = _ranked(out)
        if ideal == "run":
            return np.zeros((len(self.codes), len(ks)))
        return _ideal_dcg(r.qr_q, r.qr_grade, r.n_codes, ks, gain)[self.codes]


def _ranked(out: KernelOut) -> Ranked:
    if out.ranked is None:
        raise ConfigError("internal: the kernel kept no ranking")
    return out.ranked


def missing_queries(out: KernelOut) -> Missing:
    """Every (system, query of the qrels) pair the run has no ranking for."""
    r = _ranked(out)
    codes, first = np.unique(r.qr_q, return_index=True)
    n_sys = len(out.system_names)
    have = np.zeros((n_sys, r.n_codes), dtype=bool)
    have[out.system, r.group_q] = True
    lacking = ~have[:, codes]
    sys_idx, at = np.nonzero(lacking)
    return Missing(system=sys_idx.astype(np.int64), codes=codes[at],
                   queries=r.qr_query.take(pa.array(first[at])))


Block = tuple[str, np.ndarray, np.ndarray, "np.ndarray | None"]
"""One measure's figures: (key, value per group judged by the qrels, whether its query has
nothing relevant, the same for the queries the run lacks)."""


def value_blocks(out: KernelOut, ks: list[int], measures: list[Measure],
                 extra: Missing | None, gain: str = "linear", ideal: str = "qrels"
                 ) -> list[Block]:
    """``ndcg@k`` figures for each k, then one block per measure (see :data:`Block`)."""
    r = _ranked(out)
    inq = np.flatnonzero(out.in_qrels)
    blocks: list[Block] = []
    cache: dict[Any, Any] = {}
    extra_idcg = extra.idcg(out, ks, gain, ideal) if extra is not None else None
    for j, k in enumerate(ks):
        idcg = out.idcg[inq, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.minimum(np.where(idcg > 0, out.dcg[inq, j] / idcg, 0.0), 1.0)
        blocks.append((f"ndcg@{k}", value, idcg == 0,
                       None if extra_idcg is None else extra_idcg[:, j] == 0))
    same_as_k = gain == "linear" and ideal == "qrels"   # nDCG@k is then ndcg@k
    for m in measures:
        if m.name == "nDCG" and same_as_k and m.cutoff in ks:
            _, value, empty, extra_empty = blocks[ks.index(int(m.cutoff or 0))]
            blocks.append((m.key, value, empty, extra_empty))
            continue
        value, empty = measure_values(r, m, cache)
        blocks.append((m.key, value[inq], empty[inq],
                       None if extra is None else extra.num_rel(r, level_of(m)) == 0))
    return blocks


def value_table(out: KernelOut, blocks: list[Block], extra: Missing | None) -> pd.DataFrame:
    """Every figure per (system, query judged by the qrels), long: ``system, query_id,
    measure, value, empty, in_run``, one run of rows per block."""
    inq = np.flatnonzero(out.in_qrels)
    names = pa.array(out.system_names, type=pa.large_string())
    parts: dict[str, list[Any]] = {c: [] for c in VALUE_COLUMNS}
    system_block = names.take(pa.array(out.system[inq]))
    query_block = out.queries.take(pa.array(inq))
    for key, value, empty, extra_empty in blocks:
        parts["system"].append(system_block)
        parts["query_id"].append(query_block)
        parts["measure"].append(pa.array(np.full(len(inq), key, dtype=object),
                                         type=pa.large_string()))
        parts["value"].append(value.astype(np.float64))
        parts["empty"].append(empty.astype(bool))
        parts["in_run"].append(np.ones(len(inq), dtype=bool))
        if extra is not None and extra_empty is not None and len(extra.codes):
            n = len(extra.codes)
            parts["system"].append(names.take(pa.array(extra.system)))
            parts["query_id"].append(extra.queries)
            parts["measure"].append(pa.array(np.full(n, key, dtype=object),
                                             type=pa.large_string()))
            parts["value"].append(np.zeros(n))
            parts["empty"].append(extra_empty.astype(bool))
            parts["in_run"].append(np.zeros(n, dtype=bool))
    if not parts["value"]:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in
                             zip(VALUE_COLUMNS, ("str", "str", "str", "float64", "bool",
                                                 "bool"))})
    table = pa.table({c: (pa.chunked_array([x for part in ps for x in chunks(part)])
                          if c in ("system", "query_id", "measure") else np.concatenate(ps))
                      for c, ps in parts.items()})
    return table.to_pandas()


def summarise(out: KernelOut, blocks: list[Block], extra: Missing | None,
              measures: list[Measure], include_empty: bool, complete: bool) -> pd.DataFrame:
    """Mean, median and counts of each (system, measure) of ``measures``, from the blocks."""
    inq = np.flatnonzero(out.in_qrels)
    n_extra = 0 if extra is None else len(extra.codes)
    system = out.system[inq] if extra is None else np.concatenate([out.system[inq],
                                                                    extra.system])
    order = np.argsort(system, kind="stable")
    bounds = np.searchsorted(system[order], np.arange(len(out.system_names) + 1))
    in_run = np.concatenate([np.ones(len(inq), dtype=bool), np.zeros(n_extra, dtype=bool)])
    counted = in_run | complete
    no_extra = np.zeros(n_extra, dtype=bool)
    by_key = {key: (np.concatenate([value, np.zeros(n_extra)]),
                    np.concatenate([empty, no_extra if extra_empty is None else extra_empty]))
              for key, value, empty, extra_empty in blocks}   # queries the run lacks last
    rows = []
    for si, name in enumerate(out.system_names):
        mine = order[bounds[si]:bounds[si + 1]]
        for m in measures:
            value, empty = by_key[m.key]
            v, e, c = value[mine], empty[mine], counted[mine]
            kept = v[c & (~e | include_empty)]
            rows.append((name, m.key, float(kept.mean()) if len(kept) else math.nan,
                         float(np.median(kept)) if len(kept) else math.nan, len(kept),
                         int((c & e).sum())))
    return pd.DataFrame(rows, columns=MEASURE_SUMMARY_COLUMNS)


SUMMARY_COLUMNS = ["system", "k", "mean", "median", "n_queries", "n_empty", "judged_share",
                   "n_not_in_qrels"]
VALUE_COLUMNS = ("system", "query_id", "measure", "value", "empty", "in_run")
MEASURE_SUMMARY_COLUMNS = ["system", "measure", "mean", "median", "n_queries", "n_empty"]


# --------------------------------------------------------------------------- NDCG@k frames

def ndcg_per_query(out: KernelOut, ks: list[int], include_empty: bool,
               extra: Missing | None = None, gain: str = "linear", ideal: str = "qrels"
               ) -> pd.DataFrame:
    """NDCG@k of every group and k (the ``per_query`` frame), with the queries a run lacks
    appended when ``extra`` (``complete``)."""
    ng, nk = out.dcg.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        ndcg = np.minimum(np.where(out.idcg > 0, out.dcg / out.idcg, np.nan), 1.0)
    if include_empty:
        ndcg = np.where((out.idcg == 0) & out.in_qrels[:, None], 0.0, ndcg)
    each = np.repeat(np.arange(ng), nk)
    names = pa.array(out.system_names, type=pa.large_string())
    columns = {
        "system": [names.take(pa.array(out.system[each]))],
        "query_id": [out.queries.take(pa.array(each))],
        "k": [np.tile(np.asarray(ks, dtype=np.int64), ng)],
        "ndcg": [ndcg.ravel()], "dcg": [out.dcg.ravel()], "idcg": [out.idcg.ravel()],
        "judged_at_k": [out.judged.ravel()],
    }
    if extra is not None and len(extra.codes):
        idcg = extra.idcg(out, ks, gain, ideal)
        n = len(extra.codes)
        each = np.repeat(np.arange(n), nk)
        columns["system"].append(names.take(pa.array(extra.system[each])))
        columns["query_id"].append(extra.queries.take(pa.array(each)))
        columns["k"].append(np.tile(np.asarray(ks, dtype=np.int64), n))
        empty_value = 0.0 if include_empty else np.nan
        columns["ndcg"].append(np.where(idcg > 0, 0.0, empty_value).ravel())
        columns["dcg"].append(np.zeros(n * nk))
        columns["idcg"].append(idcg.ravel())
        columns["judged_at_k"].append(np.full(n * nk, np.nan))
    table = pa.table({name: (pa.chunked_array([c for part in parts for c in chunks(part)])
                             if isinstance(parts[0], (pa.Array, pa.ChunkedArray))
                             else np.concatenate(parts)) for name, parts in columns.items()})
    return table.to_pandas()


def ndcg_summary(out: KernelOut, ks: list[int], per_query: pd.DataFrame,
             extra: Missing | None = None) -> pd.DataFrame:
    """Mean, median and counts of NDCG@k per run and k (the ``summary`` frame)."""
    ng = out.dcg.shape[0]
    system = out.system if extra is None else np.concatenate([out.system, extra.system])
    ndcg = per_query["ndcg"].to_numpy().reshape(-1, len(ks))
    idcg = per_query["idcg"].to_numpy().reshape(-1, len(ks))
    rows = []
    for si, name in enumerate(out.system_names):
        mine = system == si
        in_run = mine[:ng]
        for j, k in enumerate(ks):
            values = ndcg[mine, j]
            kept = values[~np.isnan(values)]
            rows.append((name, k, float(kept.mean()) if len(kept) else math.nan,
                         float(np.median(kept)) if len(kept) else math.nan, len(kept),
                         int((idcg[mine, j] == 0).sum()),
                         float(out.judged[in_run, j].mean()) if in_run.any() else math.nan,
                         int((~out.in_qrels[in_run]).sum())))
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    summary["system"] = summary["system"].astype("str")
    return summary
