"""``labeler score --engine duckdb``: the runs ranked out of core by DuckDB give exactly the
in-memory path's figures (and so pytrec_eval's), from TREC, TSV and Parquet runs, with
heavy ties, grades -1..4, queries only in the run or only in the qrels; the same errors.

Skipped without DuckDB (the ``labeler[duckdb]`` extra).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from labeler.cli import main
from labeler.errors import InputError
from labeler.scoring import duckdb_engine
from labeler.scoring.results import evaluate_files
from test_measures import MEASURES, reference
from test_score_pytrec import generate

duckdb = pytest.importorskip("duckdb")

ALL = [*MEASURES, "nDCG@3", "AP@5", "Success@3"]


def _write(tmp: Path, seed: int, fmt: str) -> tuple[Path, list[str], pd.DataFrame,
                                                      pd.DataFrame]:
    qrels, run = generate(seed, "short", n_queries=30, depth=25, wide_grades=True)
    qpath = tmp / "qrels.qrels"
    qpath.write_text("".join(f"{q} 0 {c} {g}\n" for q, c, g in
                             qrels[["query_id", "chunk_id", "grade"]].itertuples(index=False)))
    specs = []
    for system, rows in run.groupby("system", sort=False):
        if fmt == "parquet":
            path = tmp / f"{system}.parquet"
            rows[["query_id", "chunk_id", "score"]].to_parquet(path)
            specs.append(f"{system}={path}")
        else:   # TREC lines; in a .tsv, split by tabs (as MS MARCO's files)
            sep, ext = ("\t", "tsv") if fmt == "tsv" else (" ", "run")
            path = tmp / f"{system}.{ext}"
            path.write_text("".join(sep.join([q, "Q0", c, str(i), repr(s), system]) + "\n"
                                    for i, (q, c, s) in enumerate(
                                        rows[["query_id", "chunk_id", "score"]]
                                        .itertuples(index=False))))
            specs.append(str(path))
    return qpath, specs, qrels, run


@pytest.mark.parametrize("seed,fmt", [(0, "trec"), (1, "parquet"), (2, "tsv")])
def test_duckdb_equals_memory_and_pytrec_eval(tmp_path: Path, seed: int, fmt: str) -> None:
    qpath, specs, qrels, run = _write(tmp_path, seed, fmt)
    for options in ({}, {"include_empty": True, "complete": True}):
        kw = {"k": [5, 10], "measures": ALL, **options}
        mem = evaluate_files(qpath, specs, engine="memory", **kw)
        duck = evaluate_files(qpath, specs, engine="duckdb", memory_limit="200MB",
                              temp_dir=tmp_path / "spill", **kw)
        assert duck.to_dict() == mem.to_dict()          # every figure, exactly
        assert duck.to_trec(per_query=True) == mem.to_trec(per_query=True)
    for text in ("AP", "Bpref", "nDCG", "P(rel=2)@10", "Rprec"):
        for system, expected in reference(qrels, run, text).items():
            ours = duck.to_dict()["runs"][system][text]["per_query"]
            for q, value in expected.items():
                assert ours[q] == pytest.approx(value, abs=1e-9), (text, system, q)


@pytest.mark.parametrize("ideal,gain", [("run", "linear"), ("qrels", "exponential")])
def test_duckdb_equals_memory_for_other_ideals_and_gains(tmp_path: Path, ideal: str,
                                                        gain: str) -> None:
    qpath, specs, _, _ = _write(tmp_path, 3, "trec")
    kw = {"k": [1, 3, 10], "ideal": ideal, "gain": gain}
    assert (evaluate_files(qpath, specs, engine="duckdb", **kw).to_dict()
            == evaluate_files(qpath, specs, engine="memory", **kw).to_dict())


def test_a_chunk_ranked_twice_is_the_same_error(tmp_path: Path) -> None:
    qpath, specs, _, _ = _write(tmp_path, 4, "trec")
    path = Path(specs[0])
    lines = path.read_text().splitlines(True)
    path.write_text("".join([*lines[:5], lines[1].replace(" 1 ", " 99 "), *lines[5:]]))
    errors = []
    for engine in ("memory", "duckdb"):
        with pytest.raises(InputError) as info:
            evaluate_files(qpath, specs, engine=engine)
        errors.append(str(info.value))
    assert errors[0] == errors[1] and "ranked twice" in errors[0] and "line 6" in errors[0]


def test_cli_engines_print_the_same_json(tmp_path: Path) -> None:
    qpath, specs, _, _ = _write(tmp_path, 5, "parquet")
    outs = []
    for engine in ("memory", "duckdb", "auto"):
        result = CliRunner().invoke(main, ["score", "--qrels", str(qpath),
                                           *[a for s in specs for a in ("--run", s)],
                                           "--measure", "AP", "--measure", "nDCG@10",
                                           "--engine", engine, "--memory-limit", "1GB",
                                           "--json"])
        assert result.exit_code == 0, result.output
        outs.append(json.loads(result.output))
    assert outs[0] == outs[1] == outs[2]


def test_auto_picks_duckdb_for_runs_large_for_memory(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _, specs, _, _ = _write(tmp_path, 6, "trec")
    assert not duckdb_engine.wants_duckdb(specs)
    monkeypatch.setattr(duckdb_engine, "_available_memory", lambda: 10_000)
    assert duckdb_engine.wants_duckdb(specs)


def test_without_duckdb_the_engine_says_how_to_install(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    qpath, specs, _, _ = _write(tmp_path, 7, "trec")
    monkeypatch.setitem(sys.modules, "duckdb", None)   # as if not installed
    result = CliRunner().invoke(main, ["score", "--qrels", str(qpath), "--run", specs[0],
                                       "--engine", "duckdb"])
    assert result.exit_code == 2
    assert "pip install 'labeler[duckdb]'" in result.output


def test_a_bad_memory_limit_is_a_configuration_error(tmp_path: Path) -> None:
    qpath, specs, _, _ = _write(tmp_path, 8, "trec")
    result = CliRunner().invoke(main, ["score", "--qrels", str(qpath), "--run", specs[0],
                                       "--engine", "duckdb", "--memory-limit", "lots"])
    assert result.exit_code == 2 and "--memory-limit" in result.output


def test_the_python_api_takes_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    """``labeler.score(..., engine="duckdb")`` ranks the run files with DuckDB (its kernel
    runs), with the in-memory figures; frames cannot be streamed: a clear error."""
    import labeler
    from labeler.errors import ConfigError

    qpath, specs, qrels, run = _write(tmp_path, 3, "trec")
    calls: list[int] = []
    real = duckdb_engine.kernel_duckdb

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(duckdb_engine, "kernel_duckdb", counted)
    named = {Path(s).stem: s for s in specs}
    duck = labeler.score(qpath, named, k=[5, 10], measures=["AP"], engine="duckdb",
                         memory_limit="200MB")
    assert calls == [1]
    mem = labeler.score(qpath, named, k=[5, 10], measures=["AP"])
    assert calls == [1]
    pd.testing.assert_frame_equal(duck.summary, mem.summary)
    assert set(duck.systems) == set(named)
    with pytest.raises(ConfigError, match="engine duckdb reads files"):
        labeler.score(qrels, run, engine="duckdb")
    with pytest.raises(ConfigError, match="engine must be"):
        labeler.score(qpath, specs, engine="spark")  # type: ignore[arg-type]
    # auto on frames: in memory, the same figures
    auto = labeler.score(qrels, run, k=[5, 10], measures=["AP"], engine="auto")
    assert auto.mean(run["system"].iloc[0], 10) == pytest.approx(
        labeler.score(qrels, run, k=[5, 10]).mean(run["system"].iloc[0], 10))
