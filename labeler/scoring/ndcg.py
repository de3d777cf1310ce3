"""The vectorised NDCG@k kernel behind :func:`labeler.scoring.results.evaluate` (trec_eval
``ndcg_cut``).

Arrays in, arrays out. Steps: find the (system, query) groups of the run (cheaply when the
rows come grouped, as in every run file); order each group by score descending then chunk
id descending by byte order (trec_eval) — nothing to do when the rows are already in that
order, else only the rows that can reach the top k are sorted; look the grades of those rows
up in the qrels through (query, id-hash) keys, every match confirmed on the strings; sum
gains in rank order with :func:`numpy.bincount`. IDCG comes from the number of judged chunks
at each grade per query.

Usage::

    out = kernel(RunArrays(...), QrelsArrays(...), ks=[10], gain="linear", ideal="qrels")
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeler._arrow import changes, clean_ids, encode, group_codes, take
from labeler.scoring.arrays import (Groups, KernelOut, NeedsIO, QrelsArrays, Ranked,
                                    RunArrays, Strings, discounts, gain_of, ideal_dcg)
from labeler.scoring.lookup import UNJUDGED, QrelsIndex, lookup_grades
from labeler.scoring.ranking import (check_ranked_once, judged_ranked,
                                     stable_group_order, top_rows)

__all__ = [
    "UNJUDGED",
    "KernelOut",
    "NeedsIO",
    "QrelsArrays",
    "Ranked",
    "RunArrays",
    "discounts",
    "gain_of",
    "ideal_dcg",
    "kernel",
]


# --------------------------------------------------------------------------- kernel

def kernel(run: RunArrays, qrels: QrelsArrays, ks: list[int], gain: str, ideal: str,
           check_run: bool = False, check_qrels: bool = False, depth: int | None = 0
           ) -> KernelOut:
    """NDCG@k ingredients for every (system, query) group of ``run``.

    With ``check_run``/``check_qrels`` the input has not been through ``io``: its ids are
    checked for blanks and its keys for repeats, and :class:`NeedsIO` is raised on doubt.
    ``depth``: ranks to keep in :attr:`KernelOut.ranked` (0: ``max(ks)``; None: all).
    """
    kmax = max(ks) if depth == 0 else (None if depth is None else max([depth, *ks]))
    grp = _groups(run, check_run)
    every_rank = ideal == "qrels" and (kmax is None or kmax >= int(grp.counts.max(initial=0)))
    # whole rankings of one system, grouped: the run is checked as its ids are looked up
    check_later = check_run and every_rank and grp.heads is not None and len(
        grp.system_names) == 1
    if check_run and not check_later:
        check_ranked_once(run, grp)
    qr_q, n_codes = qrels_codes(qrels.query, grp.q_dict, check_qrels)
    q_index = None
    if check_qrels:
        if not clean_ids(qrels.chunk):
            raise NeedsIO("qrels")
        q_index = QrelsIndex.of(qrels.chunk, qr_q, with_order=every_rank)
        if q_index.may_repeat:   # a (query, chunk) judged twice, or a hash collision
            raise NeedsIO("qrels")

    if every_rank:   # whole rankings: only the judged rows are ever placed in rank order
        row_g, pos, grades = judged_ranked(grp, run, qr_q, qrels, q_index, check_later)
    else:
        rows, pos, row_g = top_rows(grp, run, kmax if ideal == "qrels" else None)
        if ideal == "run":   # every row's grade is needed for the ideal; top rows pick theirs
            all_grades = lookup_grades(grp.group_q[grp.rows_group()], run.chunk, qr_q, qrels)
            grades = all_grades[rows]
        else:
            grades = lookup_grades(grp.group_q[row_g], take(run.chunk, rows), qr_q,
                                   qrels, q_index)
        judged_row = grades != UNJUDGED   # the measures need the judged rows only
        row_g, pos, grades = row_g[judged_row], pos[judged_row], grades[judged_row]

    if ideal == "run":
        ideal_of = (grp.rows_group(), all_grades)
    else:
        ideal_of = None
    return assemble(grp, row_g, pos, grades, qrels, qr_q, n_codes, ks, gain,
                    kmax if ideal == "qrels" else None, ideal_of)


def assemble(grp: Groups, row_g: np.ndarray, pos: np.ndarray, grades: np.ndarray,
             qrels: QrelsArrays, qr_q: np.ndarray, n_codes: int, ks: list[int], gain: str,
             depth: int | None, ideal_of: tuple[np.ndarray, np.ndarray] | None = None
             ) -> KernelOut:
    """The kernel's output from the judged ranked rows (``row_g, pos, grades`` in (group,
    rank) order, ranks below ``depth``): DCG and judged share per k summed in rank order, as
    trec_eval sums; IDCG from the qrels, or from ``ideal_of`` = (group, grade) of every
    ranked row (the run's own list re-sorted)."""
    ng = len(grp.counts)
    contrib = gain_of(np.maximum(grades, 0), gain) / discounts(int(pos.max(initial=0)) + 1)[pos]
    dcg = np.empty((ng, len(ks)))
    judged = np.empty((ng, len(ks)))
    for j, k in enumerate(ks):
        m = pos < k
        dcg[:, j] = np.bincount(row_g[m], weights=contrib[m], minlength=ng)
        judged[:, j] = np.bincount(row_g[m], minlength=ng) / np.minimum(grp.counts, k)

    in_qrels = np.bincount(qr_q, minlength=n_codes)[grp.group_q] > 0
    if ideal_of is not None:
        idcg = ideal_dcg(ideal_of[0], ideal_of[1], ng, ks, gain)
    else:
        idcg = ideal_dcg(qr_q, qrels.grade, n_codes, ks, gain)[grp.group_q]
    ranked = Ranked(row_g=row_g, pos=pos, grades=grades, counts=grp.counts,
                    group_q=grp.group_q, qr_q=qr_q, qr_grade=qrels.grade,
                    qr_query=qrels.query, n_codes=n_codes, depth=depth)
    return KernelOut(system_names=grp.system_names, system=grp.system,
                     queries=grp.q_dict.take(pa.array(grp.group_q)), dcg=dcg, idcg=idcg,
                     judged=judged, in_qrels=in_qrels, ranked=ranked)


# --------------------------------------------------------------------------- groups

def _groups(run: RunArrays, check_ids: bool) -> Groups:
    """(system, query) groups, numbered in order of first appearance."""
    n = len(run.score)
    one_system = isinstance(run.system, str) or _all_equal(run.system)
    # rows usually come grouped: then one string comparison per row finds the groups
    probe = min(n, 4096)
    if probe > 64 and int(changes(run.query.slice(0, probe)).sum()) > probe // 4:
        return _groups_of_rows(run, one_system, check_ids)   # shuffled rows, by the look
    change = changes(run.query)
    if not one_system:
        change |= changes(run.system)
    heads = np.flatnonzero(np.concatenate([[n > 0], change]))
    if len(heads) > n // 4 + 1:   # not grouped (shuffled rows): encode every row
        return _groups_of_rows(run, one_system, check_ids)
    q_code, q_dict = encode(take(run.query, heads))
    if one_system:
        name = run.system if isinstance(run.system, str) else (
            run.system[0].as_py() if len(run.system) else "run")
        s_names, s_code = [str(name)], np.zeros(len(heads), np.int64)
    else:
        system = run.system
        if isinstance(system, str):  # pragma: no cover - one_system covers a single name
            raise TypeError("one run name given for several systems")
        s_code, uniques = encode(take(system, heads))
        s_names = [str(x) for x in uniques.to_pylist()]
    pair = s_code * max(len(q_dict), 1) + q_code
    if check_ids and not (clean_ids(q_dict) if len(q_dict) else n == 0):
        raise NeedsIO("run")
    if len(np.unique(pair)) == len(heads):   # every group is one block of rows
        return Groups(counts=np.diff(np.append(heads, n)), group_q=q_code, q_dict=q_dict,
                       system_names=s_names, system=s_code, heads=heads)
    return _groups_of_rows(run, one_system, check_ids)


def _groups_of_rows(run: RunArrays, one_system: bool, check_ids: bool) -> Groups:
    """Groups of rows that do not come grouped: one dictionary encoding of every row."""
    row_q, q_dict = encode(run.query)
    if check_ids and not clean_ids(q_dict):
        raise NeedsIO("run")
    if one_system:
        name = run.system if isinstance(run.system, str) else run.system[0].as_py()
        return Groups(counts=np.bincount(row_q, minlength=len(q_dict)),
                       group_q=np.arange(len(q_dict)), q_dict=q_dict, system_names=[str(name)],
                       system=np.zeros(len(q_dict), np.int64), g=row_q,
                       by_group=stable_group_order(row_q, len(q_dict)))
    if isinstance(run.system, str):  # pragma: no cover - one_system covers a single name
        raise TypeError("one run name given for several systems")
    codes, uniques = encode(run.system)
    g, pair_values = encode(pa.array(codes * len(q_dict) + row_q))
    pairs = pair_values.to_numpy().astype(np.int64)
    return Groups(counts=np.bincount(g, minlength=len(pairs)),
                   group_q=pairs % len(q_dict), q_dict=q_dict,
                   system_names=[str(x) for x in uniques.to_pylist()],
                   system=pairs // len(q_dict), g=g,
                   by_group=stable_group_order(g, len(pairs)))


def _all_equal(arr: Strings) -> bool:
    return len(arr) == 0 or bool(pc.all(pc.equal(arr, arr[0])).as_py())


def qrels_codes(query: Strings, q_dict: Strings, check_ids: bool) -> tuple[np.ndarray, int]:
    """Query code of each qrels row in the run's code space; queries not in the run get codes
    from ``len(q_dict)`` on. Returns the codes and the number of codes."""
    if len(query) == 0:
        return np.zeros(0, np.int64), len(q_dict)
    codes, dictionary = group_codes(query)
    if check_ids and not clean_ids(dictionary):
        raise NeedsIO("qrels")
    known = pc.index_in(dictionary, value_set=q_dict.cast(dictionary.type)).fill_null(
        -1).to_numpy(zero_copy_only=False).astype(np.int64)
    new = known < 0
    known[new] = len(q_dict) + np.arange(int(new.sum()))
    return known.astype(np.int64)[codes], len(q_dict) + int(new.sum())


