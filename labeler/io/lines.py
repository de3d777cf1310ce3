"""Bytes and lines of an input file: decompression, UTF-8 checks, and the TREC shape sniff.

The lowest floor of :mod:`labeler.io`: the table readers and the TREC readers both stand on it.

Usage::

    from labeler.io.lines import text_lines, sniff_trec
    for number, line in text_lines(Path("run.trec.gz")): ...
    sniff_trec(Path("human.qrels"))       # 'qrels'
"""

from __future__ import annotations

import lzma
import re
import zlib
from collections.abc import Iterator
from io import TextIOWrapper
from pathlib import Path
from typing import Any, BinaryIO

from labeler.errors import InputError


COMPRESSED = (".gz", ".bz2", ".xz")
INT_RE = re.compile(r"^\s*[+-]?\d+\s*$")
"""An integer field (a TREC grade or rank), blanks around it allowed."""
UTF8_ADVICE = ("the file is not UTF-8 text; save it as UTF-8 (in a spreadsheet: Save As → "
               "\"CSV UTF-8\")")
DECOMPRESS_ERRORS = (EOFError, zlib.error, lzma.LZMAError)
"""What a cut or corrupt compressed file raises while it is read."""


def open_binary(p: Path) -> BinaryIO:
    """``p`` opened for reading bytes, decompressed when it ends in .gz, .bz2 or .xz."""
    suffix = p.suffix.lower()
    if suffix == ".gz":
        import gzip
        return gzip.open(p, "rb")  # type: ignore[return-value]
    if suffix == ".bz2":
        import bz2
        return bz2.open(p, "rb")  # type: ignore[return-value]
    if suffix == ".xz":
        import lzma
        return lzma.open(p, "rb")  # type: ignore[return-value]
    return open(p, "rb")


def text_lines(p: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a UTF-8 file (a leading BOM dropped; .gz, .bz2,
    .xz read); a file in another encoding is an InputError naming the first bad line."""
    try:
        with TextIOWrapper(open_binary(p), encoding="utf-8-sig") as fh:
            yield from enumerate(fh, start=1)
    except UnicodeDecodeError:
        raise InputError(UTF8_ADVICE, path=p, line=first_bad_line(p)) from None
    except (*DECOMPRESS_ERRORS, OSError) as exc:
        raise corrupt(p, exc) from None


def first_bad_line(p: Path) -> int | None:
    """The number of the first line of ``p`` that is not UTF-8, or None.

    Usage: ``n = first_bad_line(Path("queries.tsv"))``
    """
    with open_binary(p) as fh:
        return next((n for n, raw in enumerate(fh, start=1) if not _is_utf8(raw)), None)


def corrupt(p: Path, exc: BaseException) -> InputError:
    """The InputError for a file that could not be read (``exc``): a compressed one is
    "corrupt or cut short".

    Usage: ``raise corrupt(p, exc) from None``
    """
    if p.suffix.lower() in COMPRESSED:
        return InputError(f"the compressed file is corrupt or cut short ({first_line(exc)}); "
                          "compress it again, or give the uncompressed file", path=p)
    return InputError(f"cannot read the file ({first_line(exc)})", path=p)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def is_comment(parts: list[str]) -> bool:
    """A line whose first field starts with ``#`` is a comment (trec_eval 10)."""
    return parts[0].startswith("#")


def sniff_trec(p: Path) -> str | None:
    """``"qrels"`` or ``"run"`` when the first record of ``p`` (after blank lines and ``#``
    comments) is a TREC qrels line (``qid iter docid rel``) or a TREC run line
    (``qid Q0 docid rank score tag ...``), else None. A bad line further down is left to the
    reader, which names it."""
    try:
        for _, raw in text_lines(p):
            parts = raw.split()
            if parts and not is_comment(parts):
                return trec_kind(parts) or None
    except (InputError, OSError, EOFError, ValueError):
        return None
    return None


def trec_kind(parts: list[str]) -> str:
    """What a line's whitespace-split fields are: ``"qrels"``, ``"run"`` or neither (``""``).

    Usage: ``trec_kind("q1 0 d1 2".split())``
    """
    if len(parts) == 4 and INT_RE.match(parts[3]):
        return "qrels"
    if len(parts) >= 6 and INT_RE.match(parts[3]) and run_check(parts) is None:
        return "run"
    return ""


def run_check(parts: list[str]) -> str | None:
    """Why the fields of a TREC run line are not one (a score that is no finite number),
    or None.

    Usage: ``run_check("q1 Q0 d1 1 x bm25".split())``
    """
    try:
        value = float(parts[4])
    except ValueError:
        value = float("nan")
    if value != value:   # not a number, or "nan"
        return f"score must be a number, got {parts[4]!r}"
    return None


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none).

    Usage: ``first_line(exc)``
    """
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def read_space_separated(path: Any, names: list[str], types: dict[str, Any]) -> Any:
    """A whitespace-free, space-separated file (TREC qrels or run) read by pyarrow's CSV
    reader into a table with ``names`` and ``types``; None where that reader cannot say the
    same as the general one would (an error, no rows), so the caller falls back to it.

    Usage: ``table = read_space_separated(path, ["query_id", "q0", ...], types)``
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        table = pcsv.read_csv(
            path, read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False,
                                            escape_char=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(column_types=types, null_values=[],
                                                strings_can_be_null=False))
    except (pa.ArrowException, UnicodeDecodeError, OSError):
        return None
    return table if table.num_rows else None
