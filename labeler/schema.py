"""Column contracts shared by every stage, and the judge's answer model (``Judgement``).

Usage::

    from labeler.schema import Judgement, LABEL_COLUMNS
    Judgement(grade=2, rationale="answers most of it")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from labeler._judgement import Judgement as Judgement

QUERY_ID, QUERY, CHUNK_ID, CHUNK, GRADE, SCORE, SYSTEM = (
    "query_id", "query", "chunk_id", "chunk", "grade", "score", "system")
"""Column names every stage uses."""
KEYS: tuple[str, str] = (QUERY_ID, CHUNK_ID)
"""A judgement's key: one grade per (query_id, chunk_id)."""
STATUS, STATUS_OK, STATUS_FAILED = "status", "ok", "failed"
"""A label record's ``status`` column and its two values."""
STATUSES: tuple[str, ...] = (STATUS_OK, STATUS_FAILED)

Gain = Literal["linear", "exponential"]
"""NDCG gain of a grade g: ``linear`` g, ``exponential`` 2^g - 1."""
GAINS: tuple[str, ...] = get_args(Gain)
Ideal = Literal["qrels", "run"]
"""Where IDCG comes from: every judged chunk of the query (trec_eval), or the run re-sorted."""
IDEALS: tuple[str, ...] = get_args(Ideal)

InputFormat = Literal["csv", "jsonl", "parquet", "tsv", "trec"]
"""An input file's format: a table (CSV, JSON Lines, Parquet, TSV) or TREC's whitespace-
separated qrels and runs."""
INPUT_FORMATS: tuple[str, ...] = get_args(InputFormat)
FORMATS_OF: dict[str, tuple[str, ...]] = {
    "pairs": ("csv", "jsonl", "parquet"),
    "queries": ("csv", "jsonl", "parquet", "tsv"),
    "corpus": ("csv", "jsonl", "parquet", "tsv"),
    "labels": ("csv", "jsonl", "parquet", "trec"),
    "runs": ("csv", "jsonl", "parquet", "trec"),
}
"""The formats each object can be read from (qrels are ``labels``): the one table the CLI's
``--format`` and the config's ``format`` settings check against."""

GRADES: tuple[int, ...] = (0, 1, 2, 3)
"""The relevance scale: 3 perfectly answers, 2 highly relevant, 1 related, 0 irrelevant."""

PAIR_COLUMNS: tuple[str, ...] = ("query_id", "query", "chunk_id", "chunk")
QUERY_COLUMNS: tuple[str, ...] = ("query_id", "query")
CORPUS_COLUMNS: tuple[str, ...] = ("chunk_id", "chunk")
QRELS_COLUMNS: tuple[str, ...] = ("query_id", "chunk_id", "grade")
LABEL_COLUMNS: tuple[str, ...] = (
    "query_id", "chunk_id", "grade", "status", "rationale", "model", "prompt_id",
    "attempts", "cached", "input_tokens", "output_tokens", "latency_s", "error",
)
"""Columns of a label record, in output order; extra columns may follow."""


def __getattr__(name: str) -> object:
    """``Judgement`` is built on first use: readers and the scorer need no pydantic."""
    if name == "Judgement":
        from labeler._judgement import Judgement

        return Judgement
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
