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
    from labeler.io._base import (TABLE_FORMATS, GradeMap, Locator, PathLike, detect_format,
                                  parse_grade_map, parse_grades, read_table)
    from labeler.io.convert import (is_irds, is_path, to_ir_measures, to_pyterrier,
                                    to_pytrec_eval, to_ranx)
    from labeler.io.edges import (PairsLike, as_corpus, as_labels, as_pairs, as_queries,
                                  chunk_texts, read_corpus, read_labels, read_pairs,
                                  read_queries)
    from labeler.io.readers import (RunSpec, as_qrels, as_run, as_runs, parse_named,
                                    parse_run_arg, read_qrels, read_run, read_runs,
                                    rename_aliases, run_stem)
    from labeler.io.writers import (atomic_path, write_json, write_labels, write_qrels,
                                    write_run, write_table, write_text)

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

# ruff must see the names the TYPE_CHECKING imports above hand on, so the list is written
# out; tests/test_private_names.py checks that it is exactly the lazy table's names.
__all__ = [
    "TABLE_FORMATS", "GradeMap", "Locator", "PairsLike", "PathLike", "RunSpec", "as_corpus",
    "as_labels", "as_pairs", "as_qrels", "as_queries", "as_run", "as_runs", "atomic_path",
    "chunk_texts", "detect_format", "is_irds", "is_path", "parse_grade_map", "parse_grades",
    "parse_named", "parse_run_arg", "read_corpus", "read_labels", "read_pairs", "read_qrels",
    "read_queries", "read_run", "read_runs", "read_table", "rename_aliases", "run_stem",
    "to_ir_measures", "to_pyterrier", "to_pytrec_eval", "to_ranx", "write_json",
    "write_labels", "write_qrels", "write_run", "write_table", "write_text",
]
__getattr__, __dir__ = lazy_names(__name__, _NAMES)
