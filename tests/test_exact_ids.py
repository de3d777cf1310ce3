"""Ids match by equality, whatever they look like, on every path of the scorer.

A differential property test against pytrec_eval draws qrels and runs whose ids come from
different families (RAG chunk ids, UUIDs, URLs, numbers, long shared prefixes, non-ASCII, 1 to
200 bytes), several runs per call, tied scores, queries a run lacks and documents the qrels
lack, and compares every path (frames, pytrec dicts, files, the DuckDB engine, compare) per
query. The helpers of :mod:`labeler._arrow` are checked directly against plain Python on
chunked and sliced arrays and on more than 2^20 rows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labeler
from labeler import _arrow
from labeler.cli import main as cli
from labeler.scoring.results import evaluate, evaluate_files

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = [1, 3, 10]
Run = dict[str, dict[str, float]]   # {query: {doc: score}}

# --------------------------------------------------------------------------- id families

_SAFE = st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"),
                      blacklist_characters="#")
FAMILIES: dict[str, st.SearchStrategy[str]] = {
    "chunk": st.builds(lambda d, c: f"doc{d}_c{c}", st.integers(0, 120), st.integers(0, 40)),
    "uuid": st.uuids().map(str),
    "url": st.builds(lambda h, p: f"https://{h}.example.org/wiki/{p}",
                     st.sampled_from(["en", "de", "fr"]),
                     st.text("abcdefghijklmnop_()%0123456789", min_size=1, max_size=40)),
    "number": st.integers(0, 10**12).map(str),
    "prefix": st.builds(lambda n, s: "msmarco_passage_v2_0123456789"[:n] + s,
                        st.integers(7, 25), st.text("0123456789abc", min_size=0, max_size=6)),
    "unicode": st.text(_SAFE, min_size=1, max_size=50).filter(
        lambda s: 0 < len(s.encode()) <= 200 and s == s.strip()),
    "long": st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=100, max_size=200),
    "short": st.text("0123456789", min_size=1, max_size=3),
}
family = st.sampled_from(sorted(FAMILIES))
SCORES = st.sampled_from([0.0, 0.5, 1.0, 2.25, -1.5, 3.0, 7.75])   # ties on purpose


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[tuple[str, str, int]], dict[str, Run]]:
    """(qrels rows, {system: {query: {doc: score}}}) with ids from mixed families."""
    qfam, jfam, rfam = draw(family), draw(family), draw(family)
    queries = draw(st.lists(FAMILIES[qfam], min_size=1, max_size=4, unique=True))
    qrels: list[tuple[str, str, int]] = []
    judged: dict[str, list[str]] = {}
    for q in queries[:max(1, len(queries) - draw(st.integers(0, 1)))]:   # maybe one unjudged
        docs = draw(st.lists(FAMILIES[jfam], min_size=1, max_size=8, unique=True))
        judged[q] = docs
        qrels += [(q, d, draw(st.integers(0, 3))) for d in docs]
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for s in range(draw(st.integers(1, 3))):
        run: dict[str, dict[str, float]] = {}
        for q in queries:
            if draw(st.booleans()) and len(run) and s:   # a query this run lacks
                continue
            mine = draw(st.lists(st.sampled_from(judged.get(q, ["x"])), max_size=6, unique=True))
            other = draw(st.lists(FAMILIES[rfam], max_size=5, unique=True))
            docs = list(dict.fromkeys(mine + other))
            if docs:
                run[q] = {d: draw(SCORES) for d in docs}
        if run:
            runs[f"sys{s}"] = run
    if not runs:
        runs["sys0"] = {queries[0]: {"only": 1.0}}
    return qrels, runs


# --------------------------------------------------------------------------- references

def pytrec(qrels: list[tuple[str, str, int]], runs: dict[str, dict[str, dict[str, float]]]
           ) -> dict[str, dict[str, dict[int, float]]]:
    qd: dict[str, dict[str, int]] = {}
    for q, d, g in qrels:
        qd.setdefault(q, {})[d] = g
    ev = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut." + ",".join(map(str, KS))})
    return {s: {q: {k: v[f"ndcg_cut_{k}"] for k in KS} for q, v in ev.evaluate(r).items()}
            for s, r in runs.items()}


def ours(result: Any) -> dict[str, dict[str, dict[int, float]]]:
    out: dict[str, dict[str, dict[int, float]]] = {}
    for s, q, k, v in result.per_query[["system", "query_id", "k", "ndcg"]].itertuples(
            index=False):
        if not math.isnan(v):
            out.setdefault(str(s), {}).setdefault(str(q), {})[int(k)] = float(v)
    return out


def assert_same(got: dict[str, dict[str, dict[int, float]]],
                want: dict[str, dict[str, dict[int, float]]], path: str) -> None:
    for s, per_q in want.items():
        # every query pytrec_eval scores; ours leaves out only those it cannot (IDCG 0 → 0)
        mine = got.get(s, {})
        for q, vals in per_q.items():
            for k, v in vals.items():
                assert mine.get(q, {}).get(k, 0.0) == pytest.approx(v, abs=1e-9), (path, s, q, k)
        assert set(mine) <= set(per_q), (path, s)


def frames(qrels: list[tuple[str, str, int]], runs: dict[str, dict[str, dict[str, float]]]
           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    qdf = pd.DataFrame(qrels, columns=["query_id", "chunk_id", "grade"])
    rdf = pd.DataFrame([(q, d, sc, s) for s, r in runs.items() for q, docs in r.items()
                        for d, sc in docs.items()],
                       columns=["query_id", "chunk_id", "score", "system"])
    return qdf, rdf


def write_trec(tmp: Path, qrels: list[tuple[str, str, int]],
               runs: dict[str, dict[str, dict[str, float]]]) -> tuple[Path, list[str]]:
    qpath = tmp / "qrels.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels), encoding="utf-8")
    specs = []
    for s, r in runs.items():
        p = tmp / f"{s}.run"
        p.write_text("".join(f"{q} Q0 {d} {i + 1} {sc!r} {s}\n" for q, docs in r.items()
                             for i, (d, sc) in enumerate(docs.items())), encoding="utf-8")
        specs.append(f"{s}={p}")
    return qpath, specs


# --------------------------------------------------------------------------- the case

def test_rag_chunk_ids_of_different_lengths_score_as_trec_eval(tmp_path: Path) -> None:
    (tmp_path / "q.qrels").write_text("q1 0 doc1_c0 2\nq1 0 doc2_c1 0\nq2 0 doc3_c0 1\n")
    (tmp_path / "r.run").write_text("q1 Q0 doc1_c0 1 3 sys\nq1 Q0 doc12_c10 2 2 sys\n"
                                    "q2 Q0 doc3_c0 1 3 sys\n")
    res = CliRunner().invoke(cli, ["score", "--qrels", str(tmp_path / "q.qrels"),
                                   "--run", str(tmp_path / "r.run"), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["runs"]["sys"]["ndcg@10"]
    assert got["per_query"] == {"q1": 1.0, "q2": 1.0}
    assert got["judged_share"] == pytest.approx(0.75)


def test_a_long_id_in_one_run_does_not_change_another_run() -> None:
    qrels = pd.DataFrame([("q", "doc1_c0", 2), ("q", "doc7", 1)],
                         columns=["query_id", "chunk_id", "grade"])
    short = pd.DataFrame([("q", "doc1_c0", 2.0, "a"), ("q", "doc7", 1.0, "a")],
                         columns=["query_id", "chunk_id", "score", "system"])
    long_id = pd.DataFrame([("q", "x" * 150, 3.0, "b"), ("q", "doc1_c0", 2.0, "b")],
                           columns=["query_id", "chunk_id", "score", "system"])
    alone = evaluate(qrels, short).mean("a", 10)
    together = evaluate(qrels, pd.concat([short, long_id], ignore_index=True))
    assert alone == pytest.approx(1.0)
    assert together.mean("a", 10) == pytest.approx(alone)


# --------------------------------------------------------------------------- every path

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_frames_and_dicts_equal_pytrec_eval(case: Any) -> None:
    qrels, runs = case
    want = pytrec(qrels, runs)
    qdf, rdf = frames(qrels, runs)
    assert_same(ours(evaluate(qdf, rdf, k=KS, include_empty=True)), want, "frames")
    qd: dict[str, dict[str, int]] = {}
    for q, d, g in qrels:
        qd.setdefault(q, {})[d] = g
    assert_same(ours(labeler.score(qd, runs, k=KS, include_empty=True)), want, "dicts")
    for s, r in runs.items():   # one run at a time gives the same values
        assert_same(ours(labeler.score(qd, {s: r}, k=KS, include_empty=True)),
                    {s: want[s]}, "one run")


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_files_and_engines_equal_pytrec_eval(case: Any, tmp_path: Path) -> None:
    qrels, runs = case
    want = pytrec(qrels, runs)
    qpath, specs = write_trec(tmp_path, qrels, runs)
    assert_same(ours(evaluate_files(qpath, specs, k=KS, include_empty=True)), want, "files")
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return
    assert_same(ours(evaluate_files(qpath, specs, k=KS, include_empty=True, engine="duckdb")),
                want, "duckdb")


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_cli_score_and_compare_equal_pytrec_eval(case: Any, tmp_path: Path) -> None:
    qrels, runs = case
    want = pytrec(qrels, runs)
    qpath, specs = write_trec(tmp_path, qrels, runs)
    args = ["score", "--qrels", str(qpath), "--json", "--include-empty"]
    for spec in specs:
        args += ["--run", spec]
    res = CliRunner().invoke(cli, [*args, "--k", "1", "--k", "3", "--k", "10"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)["runs"]
    got = {s: {} for s in out}  # type: dict[str, dict[str, dict[int, float]]]
    for s, m in out.items():
        for k in KS:
            for q, v in m[f"ndcg@{k}"]["per_query"].items():
                got[s].setdefault(q, {})[k] = v
    assert_same(got, want, "cli score")
    # compare: the human side (and the LLM side, on the same qrels) per run
    cmp_args = ["compare", "--human", str(qpath), "--llm", str(qpath), "--json",
                "--include-empty"]
    for spec in specs:
        cmp_args += ["--run", spec]
    res = CliRunner().invoke(cli, cmp_args)
    assert res.exit_code == 0, res.output
    cmp = json.loads(res.output)["runs"]
    for s, per_q in want.items():
        vals = [v[10] for v in per_q.values()]
        if s in cmp and cmp[s]["human"] is not None:
            assert cmp[s]["human"] == pytest.approx(np.mean(vals), abs=1e-9), s
            assert cmp[s]["llm"] == pytest.approx(np.mean(vals), abs=1e-9), s


# --------------------------------------------------------------------------- _arrow's helpers

def _mixed_ids(rng: np.random.Generator, n: int) -> list[str]:
    """Ids of 1 to 200 bytes, ASCII and not, many sharing long prefixes."""
    out = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            out.append(f"doc{rng.integers(0, 10**int(rng.integers(1, 6)))}_c{i % 13}")
        elif kind == 1:
            out.append("p" * int(rng.integers(1, 200)))
        elif kind == 2:
            out.append("msmarco_passage_" + str(rng.integers(0, 10**9)))
        elif kind == 3:
            out.append("é" * int(rng.integers(1, 90)) + str(i % 7))
        else:
            out.append(str(rng.integers(0, 10**int(rng.integers(1, 15)))))
    return out


def _layouts(ids: list[str]) -> list[pa.Array | pa.ChunkedArray]:
    """The same values as one array, as several chunks, and as a slice of a larger array."""
    whole = pa.array(ids, pa.large_string())
    cut = max(1, len(ids) // 3)
    padded = pa.array(["y" * 300, *ids, "z"], pa.large_string()).slice(1, len(ids))
    return [whole, pa.chunked_array([whole.slice(0, cut), whole.slice(cut)]), padded]


@pytest.mark.parametrize("fn", ["hash", "key"])
def test_an_ids_hash_depends_on_its_bytes_alone(fn: str) -> None:
    rng = np.random.default_rng(3)
    ids = _mixed_ids(rng, 400)

    def of(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
        return (_arrow.hash_ids(arr) if fn == "hash"
                else _arrow._per_chunk(arr, _arrow._key))

    alone = np.array([of(pa.array([x], pa.large_string()))[0] for x in ids], dtype=np.uint64)
    for arr in _layouts(ids):
        assert (of(arr) == alone).all()
    codes = rng.integers(0, 5, len(ids))
    alone_c = np.array([_arrow.hash_ids(pa.array([x], pa.large_string()), codes[i:i + 1])[0]
                        for i, x in enumerate(ids)], dtype=np.uint64)
    assert (_arrow.hash_ids(_layouts(ids)[1], codes) == alone_c).all()
    gk = _arrow.group_keys(_layouts(ids)[2], codes)
    alone_g = np.array([_arrow.group_keys(pa.array([x], pa.large_string()), codes[i:i + 1])[0]
                        for i, x in enumerate(ids)], dtype=np.uint64)
    assert (gk == alone_g).all()


def test_same_ids_and_may_repeat_equal_plain_python() -> None:
    rng = np.random.default_rng(5)
    ids = _mixed_ids(rng, 300)
    a, b = pa.array(ids, pa.large_string()), pa.array(ids[::-1], pa.large_string())
    ra, rb = rng.integers(0, 300, 500), rng.integers(0, 300, 500)
    want = np.array([ids[i] == ids[::-1][j] for i, j in zip(ra, rb)])
    got = _arrow.same_ids(_arrow.Bytes.of(a), ra, _arrow.Bytes.of(b), rb)
    assert (got == want).all() and want.any()
    groups = rng.integers(0, 4, len(ids))
    distinct = len({(g, x) for g, x in zip(groups, ids)}) == len(ids)
    for arr in _layouts(ids):   # a "maybe" is allowed; a "no" must be right
        assert _arrow.may_repeat(arr, groups) or distinct
    twice = [*ids, ids[17]]
    for arr in _layouts(twice):
        assert _arrow.may_repeat(arr, np.append(groups, groups[17]))
        assert _arrow.may_repeat(arr)


def test_helpers_across_the_block_boundary() -> None:
    """More than 2^20 rows: blocks of different longest ids must agree with small arrays."""
    n = _arrow._BLOCK + 4096
    rng = np.random.default_rng(11)
    short = [f"d{i}" for i in range(n - 8)]
    tail = _mixed_ids(rng, 8)
    ids = short + tail
    arr = pa.chunked_array([pa.array(ids[: n // 2], pa.large_string()),
                            pa.array(ids[n // 2:], pa.large_string())])
    h = _arrow.hash_ids(arr)
    for i in [0, 1, n // 2 - 1, n // 2, _arrow._BLOCK - 1, _arrow._BLOCK, n - 9, *range(n - 8, n)]:
        assert h[i] == _arrow.hash_ids(pa.array([ids[i]], pa.large_string()))[0], i
    assert not _arrow.may_repeat(arr)
    dup = pa.chunked_array([*arr.chunks, pa.array([tail[3]], pa.large_string())])
    assert _arrow.may_repeat(dup)
    # the whole scorer on this many rows: one long-id run beside a short-id one
    qrels = pd.DataFrame({"query_id": ["q"] * 3, "chunk_id": ["d5", tail[0], "d7"],
                          "grade": [1, 3, 2]})
    run = pd.DataFrame({"query_id": ["q"] * 3, "chunk_id": ["d5", tail[0], "d7"],
                        "score": [3.0, 2.0, 1.0], "system": ["a"] * 3})
    want = evaluate(qrels, run).mean("a", 10)
    big = pd.DataFrame({"query_id": [f"x{i // 100}" for i in range(n)], "chunk_id": ids,
                        "score": np.arange(n, dtype=float), "system": "b"})
    got = evaluate(qrels, pd.concat([run, big], ignore_index=True)).mean("a", 10)
    assert got == pytest.approx(want)


# --------------------------------------------------------------------------- other id-keyed paths

def test_a_chunk_ranked_twice_is_found_whatever_the_ids_beside_it(tmp_path: Path) -> None:
    """Duplicate detection (io and the scorer's own check) on ids of mixed lengths."""
    from labeler import io
    from labeler.errors import InputError

    rows = ["q1 Q0 doc1_c0 1 3 s", "q1 Q0 " + "x" * 120 + " 2 2 s", "q1 Q0 doc12_c10 3 1 s",
            "q1 Q0 doc12_c10 4 0.5 s"]
    path = tmp_path / "dup.run"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError, match="doc12_c10"):
        io.read_run(path)
    path.write_text("\n".join(rows[:3]) + "\n")
    assert list(io.read_run(path)["chunk_id"]) == ["doc1_c0", "x" * 120, "doc12_c10"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), depth=st.integers(1, 4))
def test_pooling_and_merging_equal_plain_python(case: Any, depth: int) -> None:
    from labeler.labelling.pooling import pool_pairs
    from labeler.reconciliation.stage import merge

    qrels, runs = case
    _, rdf = frames(qrels, runs)
    queries = pd.DataFrame({"query_id": sorted(set(rdf["query_id"])),
                            "query": "text"})
    corpus = pd.DataFrame({"chunk_id": sorted(set(rdf["chunk_id"])), "chunk": "body"})
    pooled = pool_pairs(queries, corpus, rdf, depth=depth)
    want = set()
    for r in runs.values():
        for q, docs in r.items():
            ranked = sorted(docs.items(), key=lambda d: (d[1], d[0].encode()), reverse=True)
            want |= {(q, d) for d, _ in ranked[:depth]}
    assert set(zip(pooled["query_id"], pooled["chunk_id"])) == want
    assert len(pooled) == len(want)
    # merged labels: the human grade where there is one, else the LLM's
    llm = pd.DataFrame({"query_id": pooled["query_id"], "chunk_id": pooled["chunk_id"],
                        "grade": 1})
    human = pd.DataFrame(qrels, columns=["query_id", "chunk_id", "grade"]).drop_duplicates(
        ["query_id", "chunk_id"])
    merged = merge(llm=llm, human=human)
    expect = {(q, d): 1 for q, d in want}
    expect.update({(q, d): g for q, d, g in human.itertuples(index=False)})
    assert dict(zip(zip(merged["query_id"], merged["chunk_id"]), merged["grade"])) == expect
