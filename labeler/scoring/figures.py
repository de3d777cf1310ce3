"""Every figure of a scoring, as flat arrays (no pandas): NDCG@k per query and k, every
measure per query, and the per-run summaries that ``labeler score`` prints.

:class:`Figures` is what :class:`~labeler.scoring.results.ScoreResult` is made from; its
DataFrames are built from these arrays only when asked for.

Usage::

    figs = build_figures(kernel_out, ks=[10], measures=[parse_measure("AP")],
                         include_empty=False, complete=False, gain="linear", ideal="qrels")
    figs.summary_rows[0]   # ("bm25", 10, mean, median, n_queries, n_empty, judged, ...)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from labeler._arrow import chunks
from labeler.scoring.arrays import KernelOut
from labeler.scoring.kernels import Block, Missing, missing_queries, value_blocks
from labeler.scoring.measures import Measure

SUMMARY_COLUMNS = ["system", "k", "mean", "median", "n_queries", "n_empty", "judged_share",
                   "n_not_in_qrels"]
MEASURE_SUMMARY_COLUMNS = ["system", "measure", "mean", "median", "n_queries", "n_empty"]
PER_QUERY_COLUMNS = ["system", "query_id", "k", "ndcg", "dcg", "idcg", "judged_at_k"]


@dataclass(frozen=True)
class Figures:
    """A scoring's figures. ``pq_*``: NDCG@k per (system, query) and k (NaN where the query
    is left out); ``v_*``: every figure per (system, query judged by the qrels) and measure
    key (``keys[v_measure]``); ``summary_rows``/``measure_rows``: tuples in the order of
    :data:`SUMMARY_COLUMNS` / :data:`MEASURE_SUMMARY_COLUMNS`."""

    systems: list[str]
    pq_system: np.ndarray
    pq_query: pa.ChunkedArray
    pq_k: np.ndarray
    pq_ndcg: np.ndarray
    pq_dcg: np.ndarray
    pq_idcg: np.ndarray
    pq_judged: np.ndarray
    summary_rows: list[tuple[Any, ...]]
    keys: list[str]
    v_system: np.ndarray
    v_query: pa.ChunkedArray
    v_measure: np.ndarray
    v_value: np.ndarray
    v_empty: np.ndarray
    v_in_run: np.ndarray
    measure_rows: list[tuple[Any, ...]]

    def counted(self, include_empty: bool, complete: bool) -> np.ndarray:
        """Rows of the ``v_*`` arrays that enter means and per-query lists."""
        return (self.v_in_run | complete) & (~self.v_empty | include_empty)

    def per_query_table(self) -> pa.Table:
        names = pa.array(self.systems, type=pa.large_string())
        return pa.table({"system": names.take(pa.array(self.pq_system)),
                         "query_id": self.pq_query, "k": self.pq_k, "ndcg": self.pq_ndcg,
                         "dcg": self.pq_dcg, "idcg": self.pq_idcg,
                         "judged_at_k": self.pq_judged})

    def values_table(self) -> pa.Table:
        names = pa.array(self.systems, type=pa.large_string())
        keys = pa.array(self.keys, type=pa.large_string())
        return pa.table({"system": names.take(pa.array(self.v_system)),
                         "query_id": self.v_query,
                         "measure": keys.take(pa.array(self.v_measure)),
                         "value": self.v_value, "empty": self.v_empty,
                         "in_run": self.v_in_run})


def _strings(parts: list[pa.Array | pa.ChunkedArray]) -> pa.ChunkedArray:
    return pa.chunked_array([c for part in parts for c in chunks(part)], type=pa.large_string())


def build_figures(out: KernelOut, ks: list[int], measures: list[Measure], include_empty: bool,
                  complete: bool, gain: str = "linear", ideal: str = "qrels",
                  ndcg_values: bool = True) -> Figures:
    """The :class:`Figures` of a kernel's output (``complete``: queries of the qrels a run
    lacks count 0, trec_eval ``-c``; ``ndcg_values``: the NDCG@k of ``ks`` among the values,
    not only in the NDCG@k arrays)."""
    extra = missing_queries(out) if complete else None
    blocks = value_blocks(out, ks, measures, extra, gain, ideal)
    if not ndcg_values:
        blocks = blocks[len(ks):]
    pq = _ndcg_per_query(out, ks, include_empty, extra, gain, ideal)
    v = _values(out, blocks, extra)
    return Figures(systems=list(out.system_names), **pq,
                   summary_rows=_ndcg_summary(out, ks, pq, extra),
                   keys=[b[0] for b in blocks], **v,
                   measure_rows=_summarise(out, blocks, extra, measures, include_empty,
                                           complete))


def _values(out: KernelOut, blocks: list[Block], extra: Missing | None) -> dict[str, Any]:
    inq = np.flatnonzero(out.in_qrels)
    n_in, n_extra = len(inq), 0 if extra is None else len(extra.codes)
    query_block = out.queries.take(pa.array(inq))
    system, query, measure, value, empty, in_run = [], [], [], [], [], []
    for j, (_, val, emp, extra_empty) in enumerate(blocks):
        system.append(out.system[inq])
        query.append(query_block)
        measure.append(np.full(n_in, j, dtype=np.int64))
        value.append(val.astype(np.float64))
        empty.append(emp.astype(bool))
        in_run.append(np.ones(n_in, dtype=bool))
        if extra is not None and extra_empty is not None and n_extra:
            system.append(extra.system)
            query.append(extra.queries)
            measure.append(np.full(n_extra, j, dtype=np.int64))
            value.append(np.zeros(n_extra))
            empty.append(extra_empty.astype(bool))
            in_run.append(np.zeros(n_extra, dtype=bool))

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return {"v_system": cat(system, np.int64), "v_query": _strings(query),
            "v_measure": cat(measure, np.int64), "v_value": cat(value, np.float64),
            "v_empty": cat(empty, bool), "v_in_run": cat(in_run, bool)}


def _stats(values: np.ndarray) -> tuple[float, float]:
    """Mean (exactly rounded, so the same whatever the order of the queries: both engines
    give the same figures) and median."""
    if not len(values):
        return math.nan, math.nan
    return math.fsum(values.tolist()) / len(values), float(np.median(values))


def _summarise(out: KernelOut, blocks: list[Block], extra: Missing | None,
               measures: list[Measure], include_empty: bool, complete: bool
               ) -> list[tuple[Any, ...]]:
    """Mean, median and counts of each (system, measure) of ``measures``."""
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
    rows: list[tuple[Any, ...]] = []
    for si, name in enumerate(out.system_names):
        mine = order[bounds[si]:bounds[si + 1]]
        for m in measures:
            value, empty = by_key[m.key]
            v, e, c = value[mine], empty[mine], counted[mine]
            kept = v[c & (~e | include_empty)]
            rows.append((name, m.key, *_stats(kept), len(kept), int((c & e).sum())))
    return rows


def _ndcg_per_query(out: KernelOut, ks: list[int], include_empty: bool,
                    extra: Missing | None, gain: str, ideal: str) -> dict[str, Any]:
    """NDCG@k of every group and k, with the queries a run lacks appended (``extra``)."""
    ng, nk = out.dcg.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        ndcg = np.minimum(np.where(out.idcg > 0, out.dcg / out.idcg, np.nan), 1.0)
    if include_empty:
        ndcg = np.where((out.idcg == 0) & out.in_qrels[:, None], 0.0, ndcg)
    each = np.repeat(np.arange(ng), nk)
    kk = np.asarray(ks, dtype=np.int64)
    cols: dict[str, list[Any]] = {
        "pq_system": [out.system[each]], "pq_query": [out.queries.take(pa.array(each))],
        "pq_k": [np.tile(kk, ng)], "pq_ndcg": [ndcg.ravel()], "pq_dcg": [out.dcg.ravel()],
        "pq_idcg": [out.idcg.ravel()], "pq_judged": [out.judged.ravel()],
    }
    if extra is not None and len(extra.codes):
        idcg = extra.idcg(out, ks, gain, ideal)
        n = len(extra.codes)
        each = np.repeat(np.arange(n), nk)
        cols["pq_system"].append(extra.system[each])
        cols["pq_query"].append(extra.queries.take(pa.array(each)))
        cols["pq_k"].append(np.tile(kk, n))
        cols["pq_ndcg"].append(np.where(idcg > 0, 0.0, 0.0 if include_empty else np.nan
                                        ).ravel())
        cols["pq_dcg"].append(np.zeros(n * nk))
        cols["pq_idcg"].append(idcg.ravel())
        cols["pq_judged"].append(np.full(n * nk, np.nan))
    return {name: (_strings(parts) if name == "pq_query" else np.concatenate(parts))
            for name, parts in cols.items()}


def _ndcg_summary(out: KernelOut, ks: list[int], pq: dict[str, Any], extra: Missing | None
                  ) -> list[tuple[Any, ...]]:
    """Mean, median and counts of NDCG@k per run and k."""
    if not ks:
        return []
    ng = out.dcg.shape[0]
    system = out.system if extra is None else np.concatenate([out.system, extra.system])
    ndcg = pq["pq_ndcg"].reshape(-1, len(ks))
    idcg = pq["pq_idcg"].reshape(-1, len(ks))
    rows: list[tuple[Any, ...]] = []
    for si, name in enumerate(out.system_names):
        mine = system == si
        in_run = mine[:ng]
        for j, k in enumerate(ks):
            values = ndcg[mine, j]
            rows.append((name, k, *_stats(values[~np.isnan(values)]),
                         int((~np.isnan(values)).sum()), int((idcg[mine, j] == 0).sum()),
                         _stats(out.judged[in_run, j])[0],
                         int((~out.in_qrels[in_run]).sum())))
    return rows
