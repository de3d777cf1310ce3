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

from labeler.scoring.arrays import KernelOut, Ranked, ideal_dcg
from labeler.scoring.lookup import UNJUDGED
from labeler.scoring.measures import Measure
from labeler.scoring.registry import MEASURES, Pieces, cached


def level_of(m: Measure) -> int:
    """The lowest relevant grade of ``m`` (1 for a measure without ``rel=``, nDCG and Judged:
    a query with no grade ≥ 1 has no relevant chunk)."""
    return m.rel if MEASURES[m.name].rel else 1


def relevant_counts(r: Ranked, level: int) -> np.ndarray:
    """Per group: how many chunks of its query the qrels judge with a grade ≥ ``level``."""
    keep = r.qr_grade >= level
    return np.bincount(r.qr_q[keep], minlength=r.n_codes)[r.group_q]


def measure_values(r: Ranked, m: Measure, cache: dict[Any, Any] | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(value per group, whether the group's query has no relevant chunk at ``m``'s level).

    The value is trec_eval's for the query (0 where nothing is relevant; Judged@k its share),
    from the kernel :data:`~labeler.scoring.registry.MEASURES` declares for ``m``. ``cache``
    shares the pieces several measures need (relevant counts, the relevant rows).
    """
    if r.depth is not None and (m.cutoff is None or m.cutoff > r.depth):
        raise RuntimeError(f"internal error: the ranking was kept to depth {r.depth}, "
                           f"{m} needs more")
    definition = MEASURES[m.name]
    cache = {} if cache is None else cache
    level = level_of(m)
    num_rel = cached(cache, ("num_rel", level), lambda: relevant_counts(r, level))
    if definition.judged:   # rows the qrels judge (any grade), in rank order
        rows = cached(cache, "judged", lambda: np.flatnonzero(r.grades != UNJUDGED))
    else:                   # rows relevant at the level (UNJUDGED is below every level)
        rows = cached(cache, ("rel", level), lambda: np.flatnonzero(r.grades >= level))
    rel_g, rel_pos = r.row_g[rows], r.pos[rows]
    if m.cutoff is not None:
        cut = rel_pos < m.cutoff
        rows, rel_g, rel_pos = rows[cut], rel_g[cut], rel_pos[cut]
    empty = num_rel == 0
    pieces = Pieces(r=r, cutoff=m.cutoff, level=level, num_rel=num_rel, empty=empty,
                    rows=rows, rel_g=rel_g, rel_pos=rel_pos, cache=cache)
    return definition.kernel(pieces), empty


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
