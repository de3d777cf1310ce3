"""``labeler.scoring.kernels`` on its own: every measure's per-query values from the kernel's
ranked rows equal a plain-Python reference written from the textbook definitions (trec_eval's
order: score descending, then the doc id descending), the missing queries are the qrels' queries
a run lacks, and asking for more than the kernel kept is an internal error, not the user's."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from labeler.errors import LabelerError
from labeler.scoring.inputs import qrels_arrays, run_arrays
from labeler.scoring.kernels import measure_values, missing_queries, value_blocks
from labeler.scoring.measures import parse_measure
from labeler.scoring.ndcg import kernel

MEASURES = ["P@5", "P(rel=2)@10", "R@10", "R(rel=2)@4", "RR", "RR@3", "RR(rel=3)", "AP",
            "AP@5", "AP(rel=2)", "Rprec", "Rprec(rel=2)", "Bpref", "Bpref(rel=2)", "Success@3",
            "Success(rel=3)@10", "nDCG", "nDCG@5", "Judged@10", "Judged@3"]


def _data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two systems over 12 queries: ties in score, unjudged chunks, a query with nothing
    relevant, queries only in the qrels and only in the run."""
    rng = random.Random(seed)
    qrels, run = [], []
    for q in range(12):
        qid = f"q{q}"
        docs = [f"d{q}_{i}" for i in range(rng.randint(3, 25))]
        if q != 11:   # q11 is only in the run
            for d in docs:
                if rng.random() < 0.7:
                    grade = 0 if q == 3 else rng.choice([0, 0, 1, 2, 3])
                    qrels.append((qid, d, grade))
        if q == 10:   # q10 is only in the qrels
            continue
        for system in ("bm25", "dense"):
            for d in rng.sample(docs, rng.randint(1, len(docs))):
                run.append((qid, d, float(rng.choice([1, 2, 2, 3, 5, 8])), system))
    return (pd.DataFrame(qrels, columns=["query_id", "chunk_id", "grade"]),
            pd.DataFrame(run, columns=["query_id", "chunk_id", "score", "system"]))


def _ranking(docs: dict[str, float]) -> list[str]:
    return sorted(docs, key=lambda d: (docs[d], d.encode()), reverse=True)


def reference(text: str, ranked: list[str], grades: dict[str, int]) -> float:
    """The measure of one ranking, from its definition."""
    m = parse_measure(text)
    k = m.cutoff
    top = ranked[:k] if k else ranked
    if m.name == "Judged":
        return sum(d in grades for d in top) / min(int(k or 1), len(ranked))
    if m.name == "nDCG":
        dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(top)
                  if grades.get(d, 0) > 0)
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        return min(dcg / idcg, 1.0) if idcg > 0 else 0.0
    rel = {d for d, g in grades.items() if g >= m.rel}
    n_rel = len(rel)
    hits = [i for i, d in enumerate(top) if d in rel]   # 0-based ranks of relevant chunks
    if m.name == "P":
        return len(hits) / int(k or 1)
    if m.name == "R":
        return len(hits) / n_rel if n_rel else 0.0
    if m.name == "Success":
        return float(bool(hits))
    if m.name == "RR":
        return 1 / (hits[0] + 1) if hits else 0.0
    if m.name == "AP":
        return sum((j + 1) / (i + 1) for j, i in enumerate(hits)) / n_rel if n_rel else 0.0
    if m.name == "Rprec":
        return sum(d in rel for d in ranked[:n_rel]) / n_rel if n_rel else 0.0
    assert m.name == "Bpref"
    non = {d for d, g in grades.items() if 0 <= g < m.rel}
    total, above = 0.0, 0
    for d in ranked:
        if d in non:
            above += 1
        elif d in rel:
            total += 1.0 if above == 0 else 1 - min(above, n_rel) / min(len(non), n_rel)
    return total / n_rel if n_rel else 0.0


def _kernel(qrels: pd.DataFrame, run: pd.DataFrame, depth: int | None = None):  # type: ignore[no-untyped-def]
    return kernel(run_arrays(run), qrels_arrays(qrels), [5, 10], "linear", "qrels",
                  depth=depth)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_measure_equals_its_definition(seed: int) -> None:
    qrels, run = _data(seed)
    out = _kernel(qrels, run)
    assert out.ranked is not None
    judged = {q: dict(zip(g["chunk_id"], g["grade"])) for q, g in qrels.groupby("query_id")}
    groups = [(out.system_names[s], str(q)) for s, q in zip(out.system, out.queries.to_pylist())]
    for text in MEASURES:
        values, empty = measure_values(out.ranked, parse_measure(text))
        m = parse_measure(text)
        level = 1 if m.name in ("nDCG", "Judged") else m.rel
        for g, (system, query) in enumerate(groups):
            if query not in judged:
                continue
            rows = run[(run["system"] == system) & (run["query_id"] == query)]
            ranked = _ranking(dict(zip(rows["chunk_id"], rows["score"])))
            expected = reference(text, ranked, judged[query])
            assert values[g] == pytest.approx(expected, abs=1e-12), (text, system, query)
            assert bool(empty[g]) == (not any(v >= level for v in judged[query].values()))


def test_the_ndcg_blocks_and_the_queries_a_run_lacks() -> None:
    qrels, run = _data(4)
    out = _kernel(qrels, run)
    blocks = value_blocks(out, [5, 10], [parse_measure("P@5"), parse_measure("nDCG@10")],
                          missing_queries(out))
    assert [b[0] for b in blocks] == ["ndcg@5", "ndcg@10", "P@5", "nDCG@10"]
    np.testing.assert_array_equal(blocks[1][1], blocks[3][1])   # nDCG@10 is ndcg@10
    missing = missing_queries(out)
    lacking = {(out.system_names[s], q) for s, q in zip(missing.system,
                                                         missing.queries.to_pylist())}
    assert lacking == {(s, "q10") for s in ("bm25", "dense")}
    judged = {q: dict(zip(g["chunk_id"], g["grade"])) for q, g in qrels.groupby("query_id")}
    inq = [q for q in out.queries.to_pylist() if q in judged]
    for (_, value, empty, _), k in zip(blocks[:2], (5, 10)):
        assert len(value) == len(inq)
        for v, e, (s, q) in zip(value, empty, [(out.system_names[s], q) for s, q in zip(
                out.system, out.queries.to_pylist()) if q in judged]):
            rows = run[(run["system"] == s) & (run["query_id"] == q)]
            ranked = _ranking(dict(zip(rows["chunk_id"], rows["score"])))
            assert v == pytest.approx(reference(f"nDCG@{k}", ranked, judged[q]), abs=1e-12)
            assert bool(e) == (max(judged[q].values()) <= 0)


def test_asking_for_more_than_the_kernel_kept_is_an_internal_error() -> None:
    qrels, run = _data(5)
    out = _kernel(qrels, run, depth=5)
    assert out.ranked is not None
    with pytest.raises(RuntimeError, match="internal error") as caught:
        measure_values(out.ranked, parse_measure("AP"))
    assert not isinstance(caught.value, LabelerError)   # not the user's: exit 1, not 2
    measure_values(out.ranked, parse_measure("P@5"))     # what it kept is enough for this
