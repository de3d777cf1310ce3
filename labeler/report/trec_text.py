"""trec_eval's text output for a :class:`~labeler.scoring.results.ScoreResult` (``labeler score
--trec``).

Per run: with ``per_query``, trec_eval ``-q``'s lines first (queries in byte order of their
ids, as trec_eval sorts them; each measure of the query in turn), then ``runid``, ``num_q``
and each measure's mean — ``name<TAB>qid<TAB>value``, the name padded to 22 characters and
values with 4 decimals, exactly as trec_eval prints them. Means are trec_eval's: over every
query of the run that the qrels judge (with ``complete``, every query of the qrels; a query
the run lacks counts 0), queries without a relevant chunk included.

Usage::

    res = scoring.evaluate(qrels, runs, k=10, measures=["P@10", "AP"])
    print(trec_eval_text(res, per_query=True), end="")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from labeler.report.shapes import ScoreResultView


def _line(name: str, qid: str, value: str) -> str:
    return f"{name:<22}\t{qid}\t{value}"


def measure_names(result: ScoreResultView, with_k: bool = True) -> list[tuple[str, str]]:
    """(value-table key, printed name) of each figure, in output order, each name once."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    trec_ndcg = result.gain == "linear" and result.ideal == "qrels"
    pairs = [(f"ndcg@{k}", f"ndcg_cut_{k}" if trec_ndcg else f"ndcg@{k}")
             for k in (result.ks if with_k else [])]
    pairs += [(m.key, m.trec_name) for m in result.measures]
    for key, name in pairs:
        if name not in seen:
            seen.add(name)
            out.append((key, name))
    return out


def trec_eval_text(result: ScoreResultView, per_query: bool = False, with_k: bool = True) -> str:
    """The text trec_eval prints for each run of ``result`` (see the module's docstring);
    ``with_k=False`` leaves out the NDCG of the ``k`` cut-offs (only the measures)."""
    names = measure_names(result, with_k)
    v = result.values
    v = v[v["in_run"] | result.complete]
    lines: list[str] = []
    by_system = dict(tuple(v.groupby("system", sort=False)))
    for system in result.systems:
        mine = by_system.get(system)
        tables = {} if mine is None else dict(tuple(mine.groupby("measure", sort=False)))
        queries = ([] if mine is None else
                   sorted(set(mine["query_id"].tolist()), key=lambda q: q.encode("utf-8")))
        if per_query and queries:
            per_key = {key: dict(zip(t["query_id"].tolist(), t["value"].tolist()))
                       for key, t in tables.items()}
            for qid in queries:
                for key, name in names:
                    value = per_key.get(key, {}).get(qid)
                    if value is not None:
                        lines.append(_line(name, qid, f"{value:6.4f}"))
        lines.append(_line("runid", "all", system))
        lines.append(_line("num_q", "all", str(len(queries))))
        for key, name in names:
            table = tables.get(key)
            if table is not None and len(table):
                lines.append(_line(name, "all", f"{float(np.mean(table['value'])):6.4f}"))
    return "\n".join(lines) + "\n"
