"""Scoring out of core with DuckDB (``labeler score --engine duckdb``): runs of any size.

DuckDB streams the runs (TREC, TSV/CSV or Parquet files) and ranks every (system, query)
group with one window, trec_eval's order (score descending, then chunk id descending in
byte order), spilling to disk within ``memory_limit``; only the rows the qrels judge come
back — never more than the qrels hold per run — with their rank, and the size of every
group. The measures are then computed by the in-memory kernel's own code
(:func:`labeler.scoring.ndcg.assemble`), so every value equals the in-memory path's.

Usage::

    out = kernel_duckdb("human.qrels", ["big.parquet"], ks=[10], gain="linear",
                        ideal="qrels", depth=0, memory_limit="2GB")
"""

from __future__ import annotations

import mmap
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from labeler.errors import ConfigError, InputError
from labeler.scoring.arrays import Groups, KernelOut, QrelsArrays

__all__ = ["INSTALL_HINT", "kernel_duckdb", "wants_duckdb"]

INSTALL_HINT = "pip install 'labeler[duckdb]'"
_BYTES_PER_ROW = 600
"""In-memory scoring's peak memory per run row (measured: ~11 GB at 2·10^7 rows)."""
_ROW_BYTES = {"trec": 40, "tsv": 40, "csv": 40, "parquet": 10}
"""Rough bytes per run row of each file format, to guess rows from sizes."""


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise ConfigError(f"--engine duckdb needs DuckDB: {INSTALL_HINT}") from None
    return duckdb


# --------------------------------------------------------------------------- engine choice

def _available_memory() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def wants_duckdb(runs: Sequence[Any], fmt: str | None = None, share: float = 0.5) -> bool:
    """``auto``'s choice: DuckDB (when installed) if scoring the runs in memory would take
    more than ``share`` of the memory available now."""
    import importlib.util

    from labeler.io.arrow_read import split_run_spec

    rows = 0.0
    for spec in runs:
        path = split_run_spec(spec)[1]
        if path is None or not Path(path).is_file():
            return False   # the general reader names the problem
        kind = _format(Path(path), fmt)
        if kind == "parquet":
            try:
                import pyarrow.parquet as pq
                rows += pq.ParquetFile(path).metadata.num_rows
                continue
            except (pa.ArrowException, OSError):
                return False
        rows += Path(path).stat().st_size / _ROW_BYTES.get(kind or "trec", 40)
    if rows * _BYTES_PER_ROW <= share * _available_memory():
        return False
    return importlib.util.find_spec("duckdb") is not None


# --------------------------------------------------------------------------- sources

def _format(p: Path, fmt: str | None) -> str | None:
    if fmt:
        f = fmt.lower()
        return "trec" if f in ("trec", "run", "qrels") else f
    ext = p.suffix.lower()
    if ext in (".run", ".trec", ".txt"):
        return "trec"
    if ext in (".parquet", ".pq"):
        return "parquet"
    if ext in (".tsv", ".csv"):
        return ext[1:]
    return None


def _quote(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _first_record(p: Path) -> list[str] | None:
    with open(p, "rb") as fh:
        for raw in fh:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line.strip() and not line.lstrip().startswith("#"):
                return [line]
    return None


_GLOB = re.compile(r"[*?\[\]{}]|^~")


def _literal(p: Path, links: Path) -> str:
    """``p`` as DuckDB reads it literally: a path holding glob characters (``r[1].run``) is
    read through a link of a plain name in the job's temporary folder — DuckDB would
    otherwise expand the pattern and read another file."""
    if not _GLOB.search(str(p)):
        return str(p)
    suffix = "" if _GLOB.search(p.suffix) else p.suffix
    link = links / f"run-{len(list(links.iterdir()))}{suffix}"
    try:
        link.symlink_to(p.resolve())
    except OSError:
        raise InputError("--engine duckdb cannot read a file whose name holds *, ?, [ ] or { }"
                         " (it reads such a name as a pattern): rename it or use --engine "
                         "memory", path=p) from None
    return str(link)


def _comments(p: Path) -> str:
    """The ``comment`` option for a TREC file: ``#`` only where lines start with it and no
    id holds one (DuckDB cuts any line at a ``#``; TREC RAG segment ids hold one)."""
    with open(p, "rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return ""
        with mm:
            if mm.find(b"#") < 0:
                return ""
            starts = (mm[:1] == b"#" or any(mm.find(b"\n" + pre + b"#") >= 0
                                            for pre in (b"", b" ", b"\t")))
            if not starts:
                return ""
            inside = re.search(rb"(?m)^[ \t]*[^#\s\n][^\n]*#", mm) is not None
    if inside:
        raise InputError("--engine duckdb cannot read a TREC file with both comment lines "
                         "(# ...) and a # inside a line: use --engine memory", path=p)
    return ", comment='#'"


_TREC_COLUMNS = ("{'query_id': 'VARCHAR', 'q0': 'VARCHAR', 'chunk_id': 'VARCHAR', "
                 "'rank': 'VARCHAR', 'score': 'DOUBLE', 'tag': 'VARCHAR'}")
_CSV_OPTIONS = "auto_detect=false, quote='', escape=''"


def _trec_source(p: Path, links: Path) -> tuple[str, str | None]:
    """SQL reading a TREC run (fields split by single blanks or single tabs) and the tag of
    its first line."""
    first = _first_record(p)
    if first is None:
        raise InputError("the file has no records", path=p)
    line = first[0]
    delim = "\t" if "\t" in line else " "
    parts = line.split(delim)
    if len(parts) != 6 or any(not f for f in parts):
        raise InputError("--engine duckdb reads TREC run lines of exactly six fields, "
                         "separated by single blanks or single tabs (qid Q0 docid rank score "
                         f"tag); this line is not: {line[:80]!r}; use --engine memory",
                         path=p)
    sql = (f"read_csv({_quote(_literal(p, links))}, delim={_quote(delim)}, header=false, "
           f"columns={_TREC_COLUMNS}, {_CSV_OPTIONS}{_comments(p)})")
    return sql, parts[5]


def _table_source(con: Any, p: Path, kind: str, links: Path) -> tuple[str, dict[str, str]]:
    """SQL reading a Parquet, TSV or CSV table, and its column names and types."""
    if kind == "parquet":
        sql = f"read_parquet({_quote(_literal(p, links))})"
    else:
        delim = "\t" if kind == "tsv" else ","
        sql = (f"read_csv({_quote(_literal(p, links))}, delim={_quote(delim)}, header=true, "
               "all_varchar=true)")
    names = {d[0]: str(d[1]) for d in con.execute(f"DESCRIBE SELECT * FROM {sql}").fetchall()}
    return sql, names


def _id(column: str, kind: str) -> str:
    """An id column as text, as the in-memory reader writes it (a whole float without
    ``.0``; a float id that is not whole is refused before, see :func:`_odd_rows`)."""
    if kind in ("FLOAT", "DOUBLE") or kind.startswith("DECIMAL"):
        return f'CAST(CAST("{column}" AS BIGINT) AS VARCHAR)'
    return f'CAST("{column}" AS VARCHAR)'


_ALIASES = {"query_id": ("query_id", "qid", "topic_id"),
            "chunk_id": ("chunk_id", "doc_id", "docid", "docno", "pid"),
            "system": ("system", "run_id", "runid", "tag")}


def _run_select(con: Any, spec: Any, fmt: str | None, links: Path) -> tuple[str, list[str]]:
    """``SELECT system, query_id, chunk_id, score`` of one run, and the names of its
    systems (a NAME wins; else the TREC tag, the system column, the file's stem)."""
    from labeler.io.arrow_read import split_run_spec

    name, path = split_run_spec(spec)
    if path is None:
        from labeler.io import parse_run_arg
        name, path = parse_run_arg(spec)
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p)
    kind = _format(p, fmt)
    if kind == "tsv" and fmt is None:   # a .tsv of TREC lines is TREC (as MS MARCO's)
        first = _first_record(p)
        if first is not None and len(first[0].split("\t")) == 6:
            kind = "trec"
        else:   # id<TAB>text: not a run; the in-memory reader says why
            from labeler import io
            io.read_run(p, fmt, name=name)
    if kind == "trec":
        sql, tag = _trec_source(p, links)
        system = name if name is not None else str(tag)
        return (f"SELECT {_quote(system)} AS system, query_id, chunk_id, score FROM {sql}",
                [system])
    if kind not in ("parquet", "tsv", "csv"):
        raise InputError("--engine duckdb reads TREC, TSV, CSV or Parquet runs; use "
                         "--engine memory for this one", path=p)
    sql, names = _table_source(con, p, kind, links)
    col = {ours: next((a for a in aliases if a in names), None)
           for ours, aliases in _ALIASES.items()}
    if col["query_id"] is None or col["chunk_id"] is None:
        raise InputError(f"a run needs query_id and chunk_id columns; found "
                         f"{', '.join(names)}", path=p)
    if "score" in names:
        score = 'CAST("score" AS DOUBLE)'
    elif "rank" in names:
        score = '-CAST("rank" AS DOUBLE)'
    else:
        raise InputError("runs need a 'score' or a 'rank' column", path=p)
    _odd_rows(con, sql, p, fmt, name, col, names)
    ids = (f'{_id(str(col["query_id"]), names[str(col["query_id"])])} AS query_id, '
           f'{_id(str(col["chunk_id"]), names[str(col["chunk_id"])])} AS chunk_id, '
           f'{score} AS score')
    if name is None and col["system"] is not None:
        systems = [str(r[0]) for r in con.execute(
            f'SELECT DISTINCT CAST("{col["system"]}" AS VARCHAR) FROM {sql}').fetchall()]
        return (f'SELECT CAST("{col["system"]}" AS VARCHAR) AS system, {ids} FROM {sql}',
                systems)
    system = name if name is not None else _stem(p)
    return f"SELECT {_quote(system)} AS system, {ids} FROM {sql}", [system]


def _odd_rows(con: Any, sql: str, p: Path, fmt: str | None, name: str | None,
              col: Mapping[str, str | None], names: Mapping[str, str]) -> None:
    """A float id that is missing, NaN or not whole is refused, as the in-memory reader
    refuses it (with its message, naming the row, where the file is small enough)."""
    floats = [c for c in (col["query_id"], col["chunk_id"])
              if c is not None and (names[c] in ("FLOAT", "DOUBLE")
                                    or names[c].startswith("DECIMAL"))]
    if not floats:
        return
    test = " OR ".join(f'"{c}" IS NULL OR isnan("{c}") OR "{c}" <> floor("{c}")'
                       for c in floats)
    if con.execute(f"SELECT 1 FROM {sql} WHERE {test} LIMIT 1").fetchone() is not None:
        _refuse(p, fmt, name, f"'{floats[0]}' must be a whole-number id")


def _refuse(path: Any, fmt: str | None, name: str | None, why: str) -> None:
    """Raise the in-memory reader's error for ``path`` (naming the line or row) when the file
    is small enough to read; else an error saying ``why``."""
    if Path(path).stat().st_size < _LOCATE_BELOW:
        from labeler import io
        io.read_run(path, fmt, name=name)   # raises, naming the line or row
    raise InputError(why, path=path)


def _stem(p: Path) -> str:
    return p.name.rsplit(".", 1)[0] if "." in p.name else p.name


# --------------------------------------------------------------------------- qrels

def _qrels(qrels: Any, fmt: str | None, grade_map: Mapping[str, int] | None) -> QrelsArrays:
    """The qrels (held in memory: the rows a judge looked at), read and checked as the
    in-memory path reads them."""
    from labeler._arrow import clean_ids
    from labeler.io.arrow_read import read_qrels_arrow
    from labeler.scoring.lookup import QrelsIndex

    table = None if grade_map else read_qrels_arrow(qrels, fmt)
    if table is not None:
        qa = QrelsArrays(query=table.column("query_id"), chunk=table.column("chunk_id"),
                         grade=table.column("grade").to_numpy())
        from labeler._arrow import group_codes

        codes, dictionary = group_codes(qa.query)
        if (clean_ids(qa.chunk) and clean_ids(dictionary)
                and not QrelsIndex.of(qa.chunk, codes, with_order=False).may_repeat):
            return qa
    from labeler import io
    from labeler.scoring.inputs import qrels_arrays

    return qrels_arrays(io.read_qrels(qrels, fmt, grade_map, any_grade=True))


# --------------------------------------------------------------------------- kernel

def kernel_duckdb(qrels: Any, runs: Sequence[Any], ks: list[int], gain: str, ideal: str,
                  depth: int | None, *, qrels_fmt: str | None = None,
                  run_fmt: str | None = None, grade_map: Mapping[str, int] | None = None,
                  memory_limit: str | None = None,
                  temp_dir: str | os.PathLike[str] | None = None) -> KernelOut:
    """:func:`labeler.scoring.ndcg.kernel`'s output, the runs ranked by DuckDB out of core
    (``depth`` as the kernel's: 0 the NDCG cut-offs, None every rank)."""
    duckdb = _duckdb()
    qa = _qrels(qrels, qrels_fmt, grade_map)
    kmax = max(ks) if depth == 0 else (None if depth is None else max([depth, *ks]))
    if ideal == "run":
        kmax = None   # the ideal is the run's own list: every judged row is needed
    if temp_dir is not None:
        try:
            Path(temp_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--temp-dir {temp_dir}: cannot make the folder ({exc})") from None
    try:
        scratch = tempfile.TemporaryDirectory(prefix="labeler-duckdb-",
                                              dir=None if temp_dir is None else str(temp_dir))
    except OSError as exc:
        raise ConfigError(f"--temp-dir {temp_dir}: cannot write there ({exc.strerror or exc}); "
                          "give a folder you can write to") from None
    with scratch as tmp:
        links = Path(tmp) / "runs"
        links.mkdir()
        con = duckdb.connect(config={"preserve_insertion_order": False})
        try:
            if memory_limit:
                try:
                    con.execute(f"SET memory_limit = {_quote(memory_limit)}")
                except duckdb.Error:
                    raise ConfigError(f"--memory-limit {memory_limit!r} is not a size; "
                                      "write e.g. 2GB or 500MB") from None
            con.execute(f"SET temp_directory = {_quote(tmp)}")
            return _rank(con, duckdb, qa, runs, run_fmt, ks, gain, ideal, kmax, links)
        except duckdb.Error as exc:
            raise _input_error(exc, runs) from None
        finally:
            con.close()


def _input_error(exc: Exception, runs: Sequence[Any]) -> InputError | ConfigError:
    text = str(exc).strip().splitlines()
    first = next((t for t in text if t.strip()), str(exc))
    if "memory" in first.lower() and "limit" in first.lower():
        return ConfigError(f"DuckDB ran out of memory ({first}); raise --memory-limit or "
                           "give --temp-dir on a disk with room to spill")
    detail = " ".join(t.strip() for t in text[:6] if t.strip())
    return InputError(f"cannot read the runs with DuckDB: {detail}")


def _rank(con: Any, duckdb: Any, qa: QrelsArrays, runs: Sequence[Any], fmt: str | None,
          ks: list[int], gain: str, ideal: str, kmax: int | None, links: Path) -> KernelOut:
    from labeler.scoring.ndcg import assemble, qrels_codes

    selects: list[str] = []
    seen: dict[str, str] = {}
    for i, spec in enumerate(runs):
        sql, systems = _run_select(con, spec, fmt, links)
        for s in systems:
            if s in seen:
                raise InputError(f"run name {s!r} is used by {seen[s]} too; name each run "
                                 f"as NAME=PATH, e.g. other={spec}")
            seen[s] = str(spec)
        selects.append(f"SELECT {i} AS run_no, * FROM ({sql})")
    con.execute("CREATE TEMP VIEW runs AS " + " UNION ALL ".join(selects))
    q_table = pa.table({"query_id": qa.query, "chunk_id": qa.chunk, "grade": qa.grade})
    con.register("qrels_in", q_table)

    bad = con.execute("SELECT run_no FROM runs WHERE score IS NULL OR isnan(score) "
                      "OR query_id IS NULL OR chunk_id IS NULL OR system IS NULL "
                      "OR query_id = '' OR chunk_id = '' LIMIT 1").fetchone()
    if bad is not None:
        from labeler.io import parse_run_arg

        name, path = parse_run_arg(runs[int(bad[0])])
        _refuse(path, fmt, name, "a run has a row with no query id, chunk id, system or "
                "score (or a NaN score); read it with --engine memory to see the line")
    _check_ranked_once(con, runs, fmt)
    # one row per (system, query), numbered in order of run, then query id
    con.execute("""
        CREATE TEMP TABLE groups AS
        SELECT row_number() OVER (ORDER BY min(run_no), system, query_id) - 1 AS g,
               system, query_id, count(*) AS n, min(run_no) AS run_no
        FROM runs GROUP BY system, query_id""")
    g_table = _arrow_table(con.sql("SELECT system, query_id, n FROM groups ORDER BY g"))
    cut = "" if kmax is None else f"WHERE pos < {int(kmax)}"
    judged = con.execute(f"""
        WITH ranked AS (
            SELECT system, query_id, chunk_id,
                   row_number() OVER (PARTITION BY system, query_id
                                      ORDER BY score DESC, chunk_id DESC) - 1 AS pos
            FROM runs),
        top AS (SELECT * FROM ranked {cut})
        SELECT g.g, t.pos, q.grade
        FROM top t JOIN qrels_in q ON t.query_id = q.query_id AND t.chunk_id = q.chunk_id
                   JOIN groups g ON t.system = g.system AND t.query_id = g.query_id
        ORDER BY g.g, t.pos""").fetchnumpy()
    row_g = np.asarray(judged["g"], dtype=np.int64)
    pos = np.asarray(judged["pos"], dtype=np.int64)
    grades = np.asarray(judged["grade"], dtype=np.int64)

    systems = [str(s) for s in g_table.column("system").to_pylist()]
    names = list(dict.fromkeys(systems))
    from labeler._arrow import encode

    q_code, q_dict = encode(g_table.column("query_id").cast(pa.large_string()))
    grp = Groups(counts=g_table.column("n").to_numpy().astype(np.int64), group_q=q_code,
                 q_dict=q_dict, system_names=names,
                 system=np.asarray([names.index(s) for s in systems], dtype=np.int64)
                 if len(names) > 1 else np.zeros(len(systems), dtype=np.int64))
    qr_q, n_codes = qrels_codes(qa.query, q_dict, False)
    ideal_of = (row_g, grades) if ideal == "run" else None
    return assemble(grp, row_g, pos, grades, qa, qr_q, n_codes, ks, gain, kmax, ideal_of)


_LOCATE_BELOW = 2 << 30
"""A run file with a repeated chunk smaller than this is read by the in-memory reader to
name the line (the same error as ``--engine memory``)."""


def _arrow_table(result: Any) -> pa.Table:
    """A DuckDB relation as an Arrow table (``to_arrow_table`` in DuckDB 2, else
    ``arrow``)."""
    fetch = getattr(result, "to_arrow_table", None) or result.arrow
    table = fetch()
    return table.read_all() if isinstance(table, pa.RecordBatchReader) else table


def _check_ranked_once(con: Any, runs: Sequence[Any], fmt: str | None) -> None:
    """A chunk ranked twice for one (system, query) is the in-memory path's error: the
    file, and its line or row where the file is small enough to find it."""
    dup = con.execute("""
        SELECT system, query_id, chunk_id, run_no FROM (
            SELECT system, query_id, chunk_id, run_no,
                   chunk_id = lag(chunk_id) OVER (PARTITION BY system, query_id
                                                  ORDER BY chunk_id) AS again
            FROM runs)
        WHERE again LIMIT 1""").fetchone()
    if dup is None:
        return
    from labeler.io import parse_run_arg

    name, path = parse_run_arg(runs[int(dup[3])])
    _refuse(path, fmt, name, f"chunk {dup[2]!r} is ranked twice for query {dup[1]!r}")
