"""Planning and sampling against hostile numbers and hand-edited designs: ``plan`` never
names fewer queries than PPI needs for an interval; an absurd ``--minutes-per-query`` is a
clear error; ``sample --more`` checks ``design.json`` against the sheets it names (a
rolled-back ``drawn``, a sheet named ``../x`` or by an absolute path)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from labeler import io
from labeler.cli import main
from labeler.statistics import planning

from test_plan import DATA, noisy, run_args
from test_sample import DATA as SAMPLE_DATA


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("plan4")
    human = io.read_qrels(DATA / "qrels-pass.qrels")
    queries = sorted(human["query_id"].unique())
    picked = [queries[i] for i in np.random.default_rng(5).choice(10, 7, replace=False)]
    out = {"human": tmp / "human.qrels", "llm": tmp / "llm.qrels"}
    io.write_qrels(human.loc[human["query_id"].isin(picked)], out["human"])
    io.write_qrels(noisy(human, 0.4, 0.3, 1), out["llm"])
    return out


def _plan(files: dict[str, Path], *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["plan", "--human", str(files["human"]), "--llm",
                                    str(files["llm"]), *run_args(), "--json", *extra])
    return res.exit_code, res.output


def test_plan_never_names_fewer_than_five_queries(files: dict[str, Path]) -> None:
    code, out = _plan(files, "--half-width", "1", "--per-pair")
    assert code == 0, out
    got = json.loads(out)
    assert min(got["needed"].values()) >= planning.MIN_LABELLED
    for run in got["per_run"].values():
        assert run["ppi"] >= planning.MIN_LABELLED and run["human_only"] >= 5
    assert planning.queries_needed([0.1, 0.2, 0.1, 0.3, 0.2], n_total=50,
                                   half_width=10).n == planning.MIN_LABELLED


def test_an_absurd_minutes_per_query_is_exit_2_not_a_crash(files: dict[str, Path]) -> None:
    code, out = _plan(files, "--half-width", "0.05", "--minutes-per-query", "1e308")
    assert code == 2, out
    assert "minutes per query" in out and "unexpected" not in out


def _first_sample(tmp: Path) -> tuple[Path, Path]:
    sheet = tmp / "sheets" / "todo.csv"
    res = CliRunner().invoke(main, ["sample", "--unit", "query", "--labels",
                                    str(SAMPLE_DATA / "willia-umbrela1.qrels"), "--n", "5",
                                    "--seed", "2", "--out", str(sheet)])
    assert res.exit_code == 0, res.output
    return sheet, sheet.parent / "design.json"


def test_sample_more_refuses_a_rolled_back_drawn(tmp_path: Path) -> None:
    sheet, dfile = _first_sample(tmp_path)
    design = json.loads(dfile.read_text())
    design.update(drawn=2, queries_drawn=design["permutation"][:2],
                  draws=[{"n": 2, "sheet": "todo.csv"}])
    dfile.write_text(json.dumps(design))
    res = CliRunner().invoke(main, ["sample", "--more", "3", "--from", str(dfile)])
    assert res.exit_code == 2, res.output
    assert "rolled back" in res.output
    assert not (sheet.parent / "todo-2.csv").exists()


@pytest.mark.parametrize("name", ["../escaped.csv", "ABSOLUTE"])
def test_sample_more_never_writes_outside_the_design_folder(tmp_path: Path, name: str) -> None:
    _, dfile = _first_sample(tmp_path)
    planted = str(tmp_path / "elsewhere" / "x.csv") if name == "ABSOLUTE" else name
    design = json.loads(dfile.read_text())
    design["draws"][0]["sheet"] = planted
    dfile.write_text(json.dumps(design))
    res = CliRunner().invoke(main, ["sample", "--more", "3", "--from", str(dfile)])
    assert res.exit_code == 0, res.output
    made = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.csv")}
    assert made == {"sheets/todo.csv", f"sheets/{Path(planted).stem}-2.csv"}
