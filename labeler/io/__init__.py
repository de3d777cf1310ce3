"""Read and write pairs, queries, corpus, qrels, runs and label records as DataFrames.

Every reader validates once, at the edge, and raises :class:`~labeler.errors.InputError`
naming the file and the line (or row) at fault. Ids are always strings. Every writer is
atomic: it writes a temporary file beside the target and renames it into place.

Usage::

    from labeler import io
    qrels = io.read_qrels("tests/data/dl19.qrels")        # query_id, chunk_id, grade
    run = io.read_run("tests/data/runs/bm25.run")          # query_id, chunk_id, score, system
    io.write_qrels(qrels, "out/labels.qrels")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labeler._lazy import lazy_names

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from labeler.io._base import (TABLE_FORMATS as TABLE_FORMATS, GradeMap as GradeMap,
                                  Locator as Locator, PathLike as PathLike,
                                  detect_format as detect_format,
                                  parse_grade_map as parse_grade_map, parse_grades as parse_grades,
                                  read_table as read_table)
    from labeler.io.convert import (is_irds as is_irds, is_path as is_path,
                                    to_ir_measures as to_ir_measures, to_pyterrier as to_pyterrier,
                                    to_pytrec_eval as to_pytrec_eval, to_ranx as to_ranx)
    from labeler.io.edges import (PairsLike as PairsLike, as_corpus as as_corpus,
                                  as_labels as as_labels, as_pairs as as_pairs,
                                  as_queries as as_queries, chunk_texts as chunk_texts,
                                  read_corpus as read_corpus, read_labels as read_labels,
                                  read_pairs as read_pairs, read_queries as read_queries)
    from labeler.io.readers import (RunSpec as RunSpec, as_qrels as as_qrels, as_run as as_run,
                                    as_runs as as_runs, parse_named as parse_named,
                                    parse_run_arg as parse_run_arg, read_qrels as read_qrels,
                                    read_run as read_run, read_runs as read_runs,
                                    rename_aliases as rename_aliases, run_stem as run_stem)
    from labeler.io.writers import (atomic_path as atomic_path, write_json as write_json,
                                    write_labels as write_labels, write_qrels as write_qrels,
                                    write_run as write_run, write_table as write_table,
                                    write_text as write_text)

# Names are imported on first use (PEP 562): ``labeler.io.guard`` and the Arrow readers that
# ``labeler score`` uses do not pay for pandas.
_NAMES = {
    **dict.fromkeys(("TABLE_FORMATS", "GradeMap", "Locator", "PathLike", "detect_format",
                     "parse_grade_map", "parse_grades", "read_table"), "_base"),
    **dict.fromkeys(("is_irds", "is_path", "to_ir_measures", "to_pyterrier", "to_pytrec_eval",
                     "to_ranx"), "convert"),
    **dict.fromkeys(("RunSpec", "as_qrels", "as_run", "as_runs", "parse_named",
                     "parse_run_arg", "read_qrels", "read_run", "read_runs", "rename_aliases",
                     "run_stem"), "readers"),
    **dict.fromkeys(("PairsLike", "as_corpus", "as_labels", "as_pairs", "as_queries",
                     "chunk_texts", "read_corpus", "read_labels", "read_pairs",
                     "read_queries"), "edges"),
    **dict.fromkeys(("atomic_path", "write_json", "write_labels", "write_qrels", "write_run",
                     "write_table", "write_text"), "writers"),
}

# the TYPE_CHECKING imports above re-export each name (``x as x``): ruff and mypy need no
# written-out list
__all__ = list(_NAMES)
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
