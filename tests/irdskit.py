"""A local ir_datasets dataset built from the vendored TREC DL 2019 slice (no network).

``register(tmp_dir)`` copies the slice's files to ``tmp_dir`` (ir_datasets writes its docs
store beside the documents file) and registers, once per process, ``labeler-test/dl19``
(queries, documents, qrels, and the BM25 run as its scored documents) and
``labeler-test/dl19-topics``: the same documents, queries with a ``description`` (written
here from the query text, to see it reach a prompt) and only the judgements of the
documents the slice holds (so that every judged pair has its text).

Usage::

    ds_id = irdskit.register(tmp_path_factory.mktemp("irds"))
    ds = ir_datasets.load(ds_id)
"""

from __future__ import annotations

import shutil
from pathlib import Path

SLICE = Path(__file__).parent / "data" / "dl19_irds"
DATASET_ID = "labeler-test/dl19"
TOPICS_ID = "labeler-test/dl19-topics"
QRELS_DEFS = {0: "irrelevant", 1: "related", 2: "highly relevant", 3: "perfectly relevant"}


def register(tmp_dir: Path) -> str:
    """Register the slice as ``labeler-test/dl19`` (files copied to ``tmp_dir``) unless this
    process already has; returns the id."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TrecScoredDocs, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload
    from typing import NamedTuple

    class Topic(NamedTuple):
        query_id: str
        text: str
        description: str

        def default_text(self) -> str:
            return self.text

    if DATASET_ID in ir_datasets.registry:
        return DATASET_ID
    for name in ("queries.tsv", "docs.tsv", "qrels-pass.qrels", "runs/bm25tuned_p.run"):
        (tmp_dir / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SLICE / name, tmp_dir / name)
    ds = Dataset(
        TsvDocs(LocalDownload(tmp_dir / "docs.tsv"), namespace="msmarco", lang="en"),
        TsvQueries(LocalDownload(tmp_dir / "queries.tsv"), namespace="msmarco", lang="en"),
        TrecQrels(LocalDownload(tmp_dir / "qrels-pass.qrels"), QRELS_DEFS),
        TrecScoredDocs(LocalDownload(tmp_dir / "runs" / "bm25tuned_p.run")),
    )
    ir_datasets.registry.register(DATASET_ID, ds)
    held = {line.split("\t", 1)[0] for line in (SLICE / "docs.tsv").read_text().splitlines()}
    (tmp_dir / "judged.qrels").write_text("".join(
        line for line in (SLICE / "qrels-pass.qrels").read_text().splitlines(True)
        if line.split()[2] in held))
    (tmp_dir / "topics.tsv").write_text("".join(
        f"{qid}\t{text}\tPassages that answer: {text}\n" for qid, text in
        (line.split("\t") for line in (SLICE / "queries.tsv").read_text().splitlines())))
    topics = Dataset(
        TsvDocs(LocalDownload(tmp_dir / "docs.tsv"), namespace="msmarco", lang="en"),
        TsvQueries(LocalDownload(tmp_dir / "topics.tsv"), query_cls=Topic, namespace="msmarco",
                   lang="en"),
        TrecQrels(LocalDownload(tmp_dir / "judged.qrels"), QRELS_DEFS),
    )
    ir_datasets.registry.register(TOPICS_ID, topics)
    return DATASET_ID
