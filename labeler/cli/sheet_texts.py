"""Where an annotation sheet's texts come from, for ``labeler reconcile --audit`` and
``labeler sample`` (first draw and ``--more``).

Usage::

    texts = sheet_texts(pairs_path, queries_path, corpus_path, labels, formats)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from labeler.cli.options import InputFormats
from labeler.errors import ConfigError


def sheet_texts(pairs_path: Path | None, queries_path: Path | None, corpus_path: Path | None,
                keys: Any, formats: InputFormats) -> Any:
    """Where the sheet's texts come from: the pairs file, or queries + corpus joined on the
    pairs in ``keys`` (None: no texts).

    Usage: ``texts = sheet_texts(pairs_path, None, None, labels, formats)``
    """
    if pairs_path is not None and (queries_path or corpus_path):
        raise ConfigError("give the texts as --pairs, or as --queries and --corpus, not both")
    if queries_path is None and corpus_path is None:
        if pairs_path is not None and keys is not None and formats["pairs"]:
            from labeler import io
            return io.read_pairs(pairs_path, formats["pairs"])
        return pairs_path
    if queries_path is None or corpus_path is None:
        raise ConfigError("--queries and --corpus go together (query and chunk texts)")
    if keys is None:
        return None
    from labeler.labelling.pooling import with_texts

    return with_texts(keys[["query_id", "chunk_id"]].drop_duplicates(), queries_path,
                      corpus_path, queries_fmt=formats["queries"],
                      corpus_fmt=formats["corpus"])


def warn_ids_only(sheet: Any) -> None:
    """Warn on stderr when ``sheet`` has ids but no query or chunk texts.

    Usage: ``warn_ids_only(sheet)``
    """
    if not {"query", "chunk"} <= set(sheet.columns):
        click.echo("labeler: warning: the sheet has ids only, no query or chunk texts, so "
                   "annotators cannot use it as it is: give --pairs, or --queries and "
                   "--corpus", err=True)
