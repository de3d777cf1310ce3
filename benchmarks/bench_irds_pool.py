"""Pooling from an ir_datasets corpus: only the pooled documents are fetched, by id.

Registers a local ir_datasets dataset from the shared TREC DL 2019 files (43 judged queries,
10,818 passages, two runs), pools each run's top ``--depth``, and prints how many documents
the docs store was asked for, against the corpus size, and the time of pooling from the
dataset vs from the files (the docs store is built once, before timing, as ir_datasets'
own datasets ship it built). The pairs must be the same either way.

    python benchmarks/bench_irds_pool.py [--data ../shared/data/trec-dl-2019] [--depth 10]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent.parent / "shared" / "data" /
                    "trec-dl-2019")
    ap.add_argument("--depth", type=int, default=10)
    args = ap.parse_args()

    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import JsonlDocs, TrecQrels, TsvQueries
    from ir_datasets.indices import PickleLz4FullStore
    from ir_datasets.util import LocalDownload

    import labeler

    tmp = Path(tempfile.mkdtemp())
    for name in ("dl2019_document.jsonl", "msmarco-test2019-queries.tsv", "2019qrels-pass.txt"):
        shutil.copyfile(args.data / name, tmp / name)
    docs = tmp / "dl2019_document.jsonl"
    ir_datasets.registry.register("bench/dl19", Dataset(
        JsonlDocs(LocalDownload(docs), mapping={"doc_id": "docid", "text": "doc"}),
        TsvQueries(LocalDownload(tmp / "msmarco-test2019-queries.tsv")),
        TrecQrels(LocalDownload(tmp / "2019qrels-pass.txt"), {0: "0", 1: "1", 2: "2", 3: "3"}),
    ))
    ds = ir_datasets.load("bench/dl19")
    ds.docs_store().build()
    n_docs = ds.docs_store().count()
    runs = [str(args.data / "runs" / f"{r}.run") for r in ("ICT-BERT2", "ICT-CKNRM_B")]

    asked: list[int] = []
    get_many = PickleLz4FullStore.get_many

    def counting(self, doc_ids, field=None):  # type: ignore[no-untyped-def]
        ids = list(doc_ids)
        asked.append(len(ids))
        return get_many(self, ids, field)

    PickleLz4FullStore.get_many = counting  # type: ignore[method-assign]
    t0 = time.perf_counter()
    from_ds = labeler.pool("irds:bench/dl19", "irds:bench/dl19", runs, depth=args.depth)
    t_ds = time.perf_counter() - t0
    t0 = time.perf_counter()
    labeler.pool("irds:bench/dl19", "irds:bench/dl19", runs, depth=args.depth)
    t_warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    from_files = labeler.pool(args.data / "msmarco-test2019-queries.tsv", docs, runs,
                              depth=args.depth)
    t_files = time.perf_counter() - t0
    assert from_ds.equals(from_files), "the pairs differ"
    print(f"pooled {len(from_ds)} pairs (depth {args.depth}, 2 runs, "
          f"{from_ds.query_id.nunique()} queries)")
    print(f"documents fetched from the docs store: {asked[0]} of {n_docs} "
          f"({asked[0] / n_docs:.1%}) in one get_many call per pooling")
    print(f"pool from irds: {t_ds:.2f} s (first call), {t_warm:.2f} s (again); from the files "
          f"(corpus read whole): {t_files:.2f} s")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
