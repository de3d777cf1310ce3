"""DataFrames handed to the Python API with hostile shapes — a lone surrogate, a column
name twice, both ``relevance`` and ``label``, bytes for texts — get a clear
:class:`~labeler.errors.InputError` naming the column and row, never a crash, a silent pick
or a judged ``repr``."""

from __future__ import annotations

import pandas as pd
import pytest

import labeler
from labeler import io
from labeler.errors import InputError

BASE = {"query_id": ["q1", "q2"], "query": ["what is a", "b"], "chunk_id": ["c1", "c2"],
        "chunk": ["text a", "text b"]}


def _objects(values: list[object]) -> pd.Series:
    return pd.Series(values, dtype=object)


@pytest.mark.parametrize(("frame", "says"), [
    (pd.DataFrame({**BASE, "chunk": _objects(["bad \ud800 text", "ok"])}),
     "row 1: 'chunk' holds a lone surrogate"),
    (pd.DataFrame({**BASE, "query_id": _objects(["q1", "q\udc80"])}),
     "row 2: 'query_id' holds a lone surrogate"),
    (pd.DataFrame({**BASE, "chunk": _objects([b"bytes text", b"more"])}),
     "row 1: 'chunk' holds bytes"),
    (pd.DataFrame([["q1", "a", "c1", "t", "x"]],
                  columns=["query_id", "query", "chunk_id", "chunk", "chunk"]),
     "the column 'chunk' appears twice"),
], ids=["surrogate-text", "surrogate-id", "bytes-text", "duplicated-column"])
def test_label_refuses_a_hostile_frame_clearly(frame: pd.DataFrame, says: str) -> None:
    with pytest.raises(InputError, match=says.replace("(", r"\(")):
        labeler.label(frame, model="lexical", no_cache=True)


def test_a_qrels_frame_with_both_relevance_and_label_must_say_which() -> None:
    both = pd.DataFrame({"query_id": ["q1"], "chunk_id": ["c1"], "relevance": [1],
                         "label": [3]})
    with pytest.raises(InputError, match="both 'relevance' and 'label' could be the grade"):
        io.as_qrels(both)
    with pytest.raises(InputError, match="both 'relevance' and 'label'"):
        io.as_labels(both)
    named = io.as_qrels(both.rename(columns={"label": "grade"}))
    assert named["grade"].tolist() == [3]
    chosen = io.as_qrels(both, columns={"relevance": "grade"})
    assert chosen["grade"].tolist() == [1]


def test_a_qrels_or_run_frame_with_a_column_twice_or_bytes_ids_is_refused() -> None:
    twice = pd.DataFrame([["q1", "c1", 1, 2]], columns=["query_id", "chunk_id", "grade",
                                                         "grade"])
    with pytest.raises(InputError, match="the column 'grade' appears twice"):
        io.as_qrels(twice)
    run = pd.DataFrame({"query_id": _objects([b"q1"]), "chunk_id": ["c1"], "score": [1.0]})
    with pytest.raises(InputError, match="'query_id' holds bytes"):
        io.as_run(run)
