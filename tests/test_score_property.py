"""The vectorised scoring kernel against a ten-line reference NDCG, on generated runs.

The kernel (``scoring``, ``_ndcg``, ``_arrow``) is specialist code written for speed; this
property test states what it must compute in the plainest Python and lets hypothesis look
for a run, a qrels and a cut-off where the two disagree.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labeler.scoring.results import evaluate


def reference_ndcg(ranked: list[tuple[str, float]], judged: dict[str, int], k: int) -> float:
    """trec_eval's ndcg_cut.k: rank by score desc then doc id desc; ideal from every judgement."""
    order = sorted(ranked, key=lambda d: (d[1], d[0].encode()), reverse=True)[:k]
    gains = [max(judged.get(doc, 0), 0) for doc, _ in order]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted((max(g, 0) for g in judged.values()), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else math.nan


docs = st.sampled_from([f"d{i}" for i in range(12)] + ["D1", "é", "10", "9"])
queries = st.sampled_from(["q1", "q2", "007", "7"])
scores = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, -1.0, 3.25])  # ties on purpose


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=st.dictionaries(st.tuples(queries, docs), scores, min_size=1, max_size=40),
       qrels=st.dictionaries(st.tuples(queries, docs), st.integers(0, 3), min_size=1,
                             max_size=30),
       k=st.integers(1, 15))
def test_kernel_equals_the_reference(run: dict[tuple[str, str], float],
                                     qrels: dict[tuple[str, str], int], k: int) -> None:
    run_df = pd.DataFrame([(q, d, s) for (q, d), s in run.items()],
                          columns=["query_id", "chunk_id", "score"]).assign(system="r")
    qrels_df = pd.DataFrame([(q, d, g) for (q, d), g in qrels.items()],
                            columns=["query_id", "chunk_id", "grade"])
    got = evaluate(qrels_df, run_df, k=k).per_query.set_index("query_id")["ndcg"]
    for qid in sorted(set(run_df["query_id"])):
        judged = {d: g for (q, d), g in qrels.items() if q == qid}
        ranked = [(d, s) for (q, d), s in run.items() if q == qid]
        want = reference_ndcg(ranked, judged, k)
        if math.isnan(want):  # no relevant judgement: undefined, left out of the mean
            assert math.isnan(got[qid])
        else:
            assert got[qid] == pytest.approx(want, abs=1e-12), (qid, ranked, judged)
