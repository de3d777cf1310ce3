"""trec_eval's text output of a scoring's figures (``labeler score --trec``).

Per run: with ``per_query``, trec_eval ``-q``'s lines first (queries in byte order of their
ids, as trec_eval sorts them; each measure of the query in turn), then ``runid``, ``num_q``
and each measure's mean — ``name<TAB>qid<TAB>value``, the name padded to 22 characters and
values with 4 decimals, exactly as trec_eval prints them. Means are trec_eval's: over every
query of the run that the qrels judge (with ``complete``, every query of the qrels; a query
the run lacks counts 0), queries without a relevant chunk included.

Usage::

    res = scoring.evaluate(qrels, runs, k=10, measures=["P@10", "AP"])
    print(res.to_trec(per_query=True), end="")
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from labeler._lean import declare_lean

declare_lean(__name__)   # `labeler score --trec` prints without pandas


class FiguresView(Protocol):
    """A scoring's figures as flat arrays (what :class:`labeler.scoring.figures.Figures`
    holds): every figure per (system, query, measure key)."""

    @property
    def systems(self) -> list[str]: ...

    @property
    def keys(self) -> list[str]: ...

    @property
    def v_system(self) -> np.ndarray: ...

    @property
    def v_query(self) -> Any: ...

    @property
    def v_measure(self) -> np.ndarray: ...

    @property
    def v_value(self) -> np.ndarray: ...

    @property
    def v_in_run(self) -> np.ndarray: ...


def _line(name: str, qid: str, value: str) -> str:
    return f"{name:<22}\t{qid}\t{value}"


def trec_eval_text(figures: FiguresView, names: list[tuple[str, str]], complete: bool = False,
                   per_query: bool = False) -> str:
    """The text trec_eval prints for each run of ``figures``; ``names`` lists (value key,
    printed name) of each figure in output order."""
    f = figures
    use = f.v_in_run | complete
    lines: list[str] = []
    for si, system in enumerate(f.systems):
        mine = use & (f.v_system == si)
        per_key = {}
        for key, _ in names:
            if key not in f.keys:
                continue
            rows = np.flatnonzero(mine & (f.v_measure == f.keys.index(key)))
            if len(rows):
                import pyarrow as pa

                qids = f.v_query.take(pa.array(rows)).to_pylist()
                per_key[key] = dict(zip(qids, f.v_value[rows].tolist()))
        queries = sorted({q for d in per_key.values() for q in d},
                         key=lambda q: q.encode("utf-8"))
        if per_query:
            for qid in queries:
                for key, name in names:
                    value = per_key.get(key, {}).get(qid)
                    if value is not None:
                        lines.append(_line(name, qid, f"{value:6.4f}"))
        lines.append(_line("runid", "all", system))
        lines.append(_line("num_q", "all", str(len(queries))))
        for key, name in names:
            values = per_key.get(key)
            if values:
                mean = math.fsum(values.values()) / len(values)
                lines.append(_line(name, "all", f"{mean:6.4f}"))
    return "\n".join(lines) + "\n"
