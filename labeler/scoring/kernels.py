"""Vectorised trec_eval measures over the ranked rows of :func:`labeler.scoring.ndcg.kernel`.

Every function takes the kernel's :class:`~labeler.scoring.ndcg.Ranked` rows (in group, rank
order) and returns one value per (system, query) group, summing in rank order as trec_eval
does so that the floating-point sums are the same.

Usage::

    out = kernel(run_arrays, qrels_arrays, ks=[10], gain="linear", ideal="qrels", depth=None)
    values, empty = measure_values(out.ranked, parse_measure("AP@100"))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from labeler.scoring.arrays import KernelOut, Ranked, discounts, ideal_dcg
from labeler.scoring.lookup import UNJUDGED
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
        raise RuntimeError(f"internal error: the ranking was kept to depth {r.depth}, "
                           f"{m} needs more")
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
        whole = len(r.qr_grade) + 1   # uncut: the ideal list is every relevant chunk
        idcg = ideal_dcg(r.qr_q, r.qr_grade, r.n_codes, [int(m.cutoff or whole)],
                         "linear")[r.group_q, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.minimum(np.where(idcg > 0, dcg / idcg, 0.0), 1.0), empty
    if m.name == "P":
        return np.bincount(rel_g, minlength=ng) / float(m.cutoff or 1), empty
    if m.name == "R":
        hits = np.bincount(rel_g, minlength=ng)
        return np.where(empty, 0.0, hits / np.maximum(num_rel, 1)), empty
    if m.name == "Success":
        return (np.bincount(rel_g, minlength=ng) > 0).astype(np.float64), empty
    if m.name == "Rprec":    # relevant in the top R, R the number of relevant chunks
        top = rel_pos < num_rel[rel_g]
        return np.where(empty, 0.0, np.bincount(rel_g[top], minlength=ng)
                        / np.maximum(num_rel, 1)), empty
    if m.name == "Bpref":
        return _bpref(r, level, num_rel, cache), empty
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


def _bpref(r: Ranked, level: int, num_rel: np.ndarray, cache: dict[Any, Any]) -> np.ndarray:
    """trec_eval's bpref: over the relevant ranked chunks, in rank order, 1 − min(judged
    non-relevant ranked above, R) / min(N, R), summed and divided by R (N: the query's
    judged non-relevant chunks; a negative grade is neither relevant nor non-relevant, as in
    trec_eval)."""
    ng = len(r.counts)
    keep = (r.qr_grade >= 0) & (r.qr_grade < level)
    num_non = np.bincount(r.qr_q[keep], minlength=r.n_codes)[r.group_q]
    judged = _cached(cache, "judged", lambda: np.flatnonzero(r.grades != UNJUDGED))
    g, grades = r.row_g[judged], r.grades[judged]
    non = ((grades >= 0) & (grades < level)).astype(np.int64)
    per_group = np.bincount(g, weights=non, minlength=ng).astype(np.int64)
    before = np.cumsum(non) - non - (np.cumsum(per_group) - per_group)[g]   # in its group
    rel = grades >= level
    g_rel, above = g[rel], before[rel]
    cap = np.minimum(num_non, num_rel)[g_rel].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(above > 0, 1.0 - np.minimum(above, num_rel[g_rel]) / cap, 1.0)
    total = np.bincount(g_rel, weights=term, minlength=ng)
    return np.where(num_rel > 0, total / np.maximum(num_rel, 1), 0.0)


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
        return ideal_dcg(r.qr_q, r.qr_grade, r.n_codes, ks, gain)[self.codes]


def _ranked(out: KernelOut) -> Ranked:
    if out.ranked is None:
        raise RuntimeError("internal error: the kernel kept no ranking")
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
