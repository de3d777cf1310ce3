"""Every evaluation measure, declared once: its parameters, its names (ir_measures, trec_eval
and the other spellings it is asked by), its help and its kernel. Parsing
(:mod:`labeler.scoring.measures`) and computing (:mod:`labeler.scoring.kernels`) read this
table; a new measure is one more :class:`MeasureDef` here, as in ir_measures.

A kernel takes the :class:`Pieces` of one measure over the kernel's ranked rows (in group,
rank order) and returns one value per (system, query) group, summing in rank order as
trec_eval does.

Usage::

    from labeler.scoring.registry import MEASURES
    MEASURES["P"].trec_cut.format(k=10)   # 'P_10'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from labeler.scoring.arrays import Ranked, discounts, ideal_dcg
from labeler.scoring.lookup import UNJUDGED

__all__ = ["MEASURES", "MeasureDef", "Pieces", "cached"]


@dataclass(frozen=True)
class Pieces:
    """What a kernel reads: the ranked rows ``r``, the measure's ``cutoff`` and relevance
    ``level``, per group the number of relevant judged chunks (``num_rel``, ``empty`` where
    none), and the relevant (for Judged: judged) rows within the cut-off, with their group
    and rank. ``cache`` shares pieces between the measures of one scoring."""

    r: Ranked
    cutoff: int | None
    level: int
    num_rel: np.ndarray
    empty: np.ndarray
    rows: np.ndarray
    rel_g: np.ndarray
    rel_pos: np.ndarray
    cache: dict[Any, Any]

    @property
    def ng(self) -> int:
        """The number of groups."""
        return len(self.r.counts)


def cached(cache: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """``cache[key]``, made once."""
    if key not in cache:
        cache[key] = make()
    return cache[key]


@dataclass(frozen=True)
class MeasureDef:
    """One measure. ``cutoff``: whether ``@k`` is ``required``, ``optional`` or ``none``;
    ``rel``: whether it takes ``rel=`` (else relevance is grade ≥ 1); ``aliases``: the other
    names it is asked by (lower case; trec_eval's among them); ``trec_cut`` / ``trec_uncut``:
    trec_eval's output name with (``{k}``) and without a cut-off, None where trec_eval has
    none; ``judged``: relevant means judged (any grade); ``help``: per query, in words."""

    name: str
    cutoff: Literal["required", "optional", "none"]
    rel: bool
    aliases: tuple[str, ...]
    trec_cut: str | None
    trec_uncut: str | None
    help: str
    kernel: Callable[[Pieces], np.ndarray]
    judged: bool = False


# --------------------------------------------------------------------------- kernels

def _ndcg(p: Pieces) -> np.ndarray:
    """Linear gain, summed in rank order over the relevant rows; the ideal list is every
    relevant chunk of the query, cut at k."""
    r = p.r
    dcg = np.bincount(p.rel_g, weights=r.grades[p.rows].astype(np.float64)
                      / discounts(int(p.rel_pos.max(initial=0)) + 1)[p.rel_pos], minlength=p.ng)
    whole = len(r.qr_grade) + 1
    idcg = ideal_dcg(r.qr_q, r.qr_grade, r.n_codes, [int(p.cutoff or whole)],
                     "linear")[r.group_q, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.minimum(np.where(idcg > 0, dcg / idcg, 0.0), 1.0)


def _precision(p: Pieces) -> np.ndarray:
    return np.bincount(p.rel_g, minlength=p.ng) / float(p.cutoff or 1)


def _recall(p: Pieces) -> np.ndarray:
    hits = np.bincount(p.rel_g, minlength=p.ng)
    return np.where(p.empty, 0.0, hits / np.maximum(p.num_rel, 1))


def _rr(p: Pieces) -> np.ndarray:
    out = np.zeros(p.ng)
    groups, first = np.unique(p.rel_g, return_index=True)
    out[groups] = 1.0 / (p.rel_pos[first] + 1.0)
    return out


def _ap(p: Pieces) -> np.ndarray:
    """Precision at each relevant rank, summed in rank order, over all relevant."""
    per_group = np.bincount(p.rel_g, minlength=p.ng)
    so_far = np.arange(1, len(p.rel_g) + 1, dtype=np.float64) - (np.cumsum(per_group)
                                                                 - per_group)[p.rel_g]
    total = np.bincount(p.rel_g, weights=so_far / (p.rel_pos + 1.0), minlength=p.ng)
    return np.where(p.empty, 0.0, total / np.maximum(p.num_rel, 1))


def _judged(p: Pieces) -> np.ndarray:
    return np.bincount(p.rel_g, minlength=p.ng) / np.minimum(p.r.counts, int(p.cutoff or 1))


def _rprec(p: Pieces) -> np.ndarray:
    """Relevant in the top R, R the number of relevant chunks."""
    top = p.rel_pos < p.num_rel[p.rel_g]
    return np.where(p.empty, 0.0, np.bincount(p.rel_g[top], minlength=p.ng)
                    / np.maximum(p.num_rel, 1))


def _bpref(p: Pieces) -> np.ndarray:
    """trec_eval's bpref: over the relevant ranked chunks, in rank order, 1 − min(judged
    non-relevant ranked above, R) / min(N, R), summed and divided by R (N: the query's
    judged non-relevant chunks; a negative grade is neither relevant nor non-relevant, as in
    trec_eval)."""
    r, level, num_rel, ng = p.r, p.level, p.num_rel, p.ng
    keep = (r.qr_grade >= 0) & (r.qr_grade < level)
    num_non = np.bincount(r.qr_q[keep], minlength=r.n_codes)[r.group_q]
    judged = cached(p.cache, "judged", lambda: np.flatnonzero(r.grades != UNJUDGED))
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


def _success(p: Pieces) -> np.ndarray:
    return (np.bincount(p.rel_g, minlength=p.ng) > 0).astype(np.float64)


# --------------------------------------------------------------------------- the table

MEASURES: dict[str, MeasureDef] = {d.name: d for d in (
    MeasureDef("nDCG", "optional", False, ("ndcg", "ndcg_cut"), "ndcg_cut_{k}", "ndcg",
               "DCG@k / IDCG@k, linear gain, ideal from every judged chunk", _ndcg),
    MeasureDef("P", "required", True, ("p", "precision"), "P_{k}", None,
               "relevant in the top k / k", _precision),
    MeasureDef("R", "required", True, ("r", "recall"), "recall_{k}", None,
               "relevant in the top k / relevant judged (0 when none)", _recall),
    MeasureDef("RR", "optional", True, ("rr", "mrr", "recip_rank"), None, "recip_rank",
               "1 / rank of the first relevant chunk (in the top k)", _rr),
    MeasureDef("AP", "optional", True, ("ap", "map", "map_cut"), "map_cut_{k}", "map",
               "Σ precision at relevant ranks (≤ k) / relevant", _ap),
    MeasureDef("Judged", "required", False, ("judged",), None, None,
               "judged chunks in the top k / min(k, chunks ranked)", _judged, judged=True),
    MeasureDef("Rprec", "none", True, ("rprec", "r-prec", "r_prec"), None, "Rprec",
               "relevant in the top R / R (R: relevant judged)", _rprec),
    MeasureDef("Bpref", "none", True, ("bpref",), None, "bpref",
               "mean over the relevant of 1 − min(non-relevant above, R) / min(N, R)",
               _bpref),
    MeasureDef("Success", "required", True, ("success",), "success_{k}", None,
               "1 when a relevant chunk is in the top k, else 0", _success),
)}
"""The measures, by their ir_measures name, in the order they are listed to users."""
