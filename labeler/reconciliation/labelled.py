"""Which queries have human labels: several sheets read as one, and whole queries only.

Prediction-powered estimates, ``labeler plan`` and ``labeler certify`` treat the
human-labelled queries as a simple random sample of whole queries: on each of them the human
NDCG must be the NDCG full human labelling would give. A query counts as human-labelled only
when the human labels cover every pair the LLM labels of that query cover;
:func:`labelled_queries` is the one place that decides it, and refuses (``InputError``, exit
status 2) a sample of pairs (``labeler sample``'s default ``--unit pair``), which labels some
pairs of many queries. :func:`combine_human` reads the sheets of one design (``--human``
given several times) as one label set; a pair graded differently in two of them is an error.

Usage::

    from labeler.reconciliation.labelled import combine_human, labelled_queries
    human = combine_human(["sheets/todo.csv", "sheets/todo-2.csv"])
    queries = labelled_queries(human, llm)      # frozenset of whole labelled query ids
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from labeler.errors import InputError
from labeler.schema import KEYS as _KEYS

KEYS = list(_KEYS)


@dataclass(frozen=True)
class QueryCoverage:
    """How the human labels cover the LLM-labelled queries: ``whole`` (every LLM-labelled
    pair of the query has a human label) and ``partial`` (query → ``(pairs with a human
    label, pairs with an LLM label)``, some but not all)."""

    whole: frozenset[str]
    partial: Mapping[str, tuple[int, int]]

    def message(self, what: str = "prediction-powered estimates") -> str:
        """Why ``what`` refuses these labels (empty when nothing is partial)."""
        if not self.partial:
            return ""
        n = len(self.partial)
        q, (got, of) = next(iter(sorted(self.partial.items())))
        more = f" and {n - 1} more" if n > 1 else ""
        return (f"{n} quer{'y is' if n == 1 else 'ies are'} only partly labelled by humans "
                f"(query {q!r}: {got} of its {of} LLM-labelled pairs{more}). For {what} a "
                f"query counts as labelled only when every pair the LLM labels of it cover "
                f"has a human label, and the labelled queries must be a random sample of "
                f"whole queries: a sample of pairs (`labeler sample`'s default --unit pair) "
                f"is not one; `labeler sample --unit query` draws whole queries.")


def query_coverage(human: Any, llm: Any) -> QueryCoverage:
    """Which queries of ``llm`` the ``human`` labels cover wholly, and which in part (frames
    or anything :func:`labeler.io.as_qrels` takes; only the ``query_id, chunk_id`` pairs
    count).

    Usage: ``query_coverage(human, llm).partial``
    """
    from labeler import io

    h = _pairs(io.as_qrels(human, any_grade=True) if not _is_frame(human) else human)
    m = _pairs(io.as_qrels(llm, any_grade=True) if not _is_frame(llm) else llm)
    per = m.merge(h.assign(_h=True), on=KEYS, how="left")
    per["_h"] = per["_h"].fillna(False).astype(bool)
    counts = per.groupby("query_id", sort=True)["_h"].agg(["sum", "size"])
    whole = frozenset(str(q) for q in counts.index[counts["sum"] == counts["size"]])
    part = counts.loc[(counts["sum"] > 0) & (counts["sum"] < counts["size"])]
    partial = {str(q): (int(r["sum"]), int(r["size"])) for q, r in part.iterrows()}
    return QueryCoverage(whole, partial)


def labelled_queries(human: Any, llm: Any, *,
                     what: str = "prediction-powered estimates") -> frozenset[str]:
    """The queries that count as human-labelled: those of ``llm`` whose every LLM-labelled
    pair has a ``human`` label. Raises :class:`~labeler.errors.InputError` (exit status 2)
    when some query is labelled only in part — a sample of pairs rather than of whole
    queries — naming how many; ``what`` names the caller in that message (``"labeler
    plan"``, ``"certify"``). Used by ``compare --ppi``, ``plan`` and ``certify``.

    Usage: ``labelled_queries(human, llm)`` → ``frozenset({"q1", "q7", ...})``
    """
    cov = query_coverage(human, llm)
    if cov.partial:
        raise InputError(cov.message(what))
    return cov.whole


def combine_human(sets: Sequence[Any] | Mapping[str, Any]) -> pd.DataFrame:
    """Several human label sets (the sheets of one design: paths, or frames read already)
    as one ``query_id, chunk_id, grade`` frame. A pair labelled in two of them with the same
    grade counts once; with two different grades it is an
    :class:`~labeler.errors.InputError` naming the pair, both grades and both sources.

    Usage: ``combine_human(["sheets/todo.csv", "sheets/todo-2.csv"])``
    """
    from labeler import io

    items = list(sets.items()) if isinstance(sets, Mapping) else [
        (_name(s, i), s) for i, s in enumerate(sets)]
    if not items:
        raise InputError("no human labels given")
    frames = []
    for i, (_, s) in enumerate(items):
        df = s if _is_frame(s) else io.as_qrels(s, any_grade=True)
        frames.append(df.assign(_src=i))
    if len(frames) == 1:
        return items[0][1] if _is_frame(items[0][1]) else frames[0].drop(columns="_src")
    cols = [c for c in frames[0].columns if all(c in f.columns for f in frames)]
    allf = pd.concat([f[cols] for f in frames], ignore_index=True)
    first = allf.drop_duplicates(KEYS)
    clash = allf.merge(first[[*KEYS, "grade", "_src"]], on=KEYS, suffixes=("", "_first"))
    bad = clash.loc[clash["grade"] != clash["grade_first"]]
    if not bad.empty:
        r = bad.iloc[0]
        a, b = items[int(r["_src_first"])][0], items[int(r["_src"])][0]
        raise InputError(f"query {r['query_id']!r}, chunk {r['chunk_id']!r} has grade "
                         f"{int(r['grade_first'])} in {a} and {int(r['grade'])} in {b}: "
                         f"the human label files disagree (correct one of them)")
    out = first.drop(columns="_src").reset_index(drop=True)
    out.attrs["path"] = " + ".join(str(n) for n, _ in items)
    return out


def _pairs(df: pd.DataFrame) -> pd.DataFrame:
    return df[KEYS].astype(str).drop_duplicates()


def _is_frame(x: Any) -> bool:
    return isinstance(x, pd.DataFrame)


def _name(s: Any, i: int) -> str:
    if _is_frame(s):
        return str(s.attrs.get("path", f"human labels #{i + 1}"))
    return str(s)
