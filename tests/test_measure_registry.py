"""Each measure is one declaration (labeler.scoring.registry): what it is asked by parses to
it, its trec_eval name is what pytrec_eval prints, its help is in the --measure help, and
``-m`` is ``--measure``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval
from click.testing import CliRunner

from labeler.cli import main
from labeler.scoring.measures import MEASURE_NAMES, Measure, parse_measure
from labeler.scoring.registry import MEASURES

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("name", list(MEASURES))
def test_every_declared_measure_is_asked_by_its_names(name: str) -> None:
    d = MEASURES[name]
    cut = None if d.cutoff == "none" else 5 if d.cutoff == "required" else None
    m = Measure(name, cut)
    assert parse_measure(str(m)) == m
    for alias in d.aliases:
        spelled = alias + (f".{cut}" if cut is not None else "")
        assert parse_measure(spelled) == m, spelled
    assert name in MEASURE_NAMES


@pytest.mark.parametrize("text", ["P@5", "R@5", "AP@5", "nDCG@5", "Success@5", "nDCG", "AP",
                                  "RR", "Rprec", "Bpref"])
def test_the_trec_eval_name_is_what_pytrec_eval_prints(text: str) -> None:
    m = parse_measure(text)
    spec = m.trec_name.rsplit("_", 1)
    asked = f"{spec[0]}.{spec[1]}" if len(spec) == 2 and spec[1].isdigit() else m.trec_name
    out = pytrec_eval.RelevanceEvaluator({"q": {"a": 1, "b": 0}}, {asked}).evaluate(
        {"q": {"a": 2.0, "b": 1.0}})
    assert m.trec_name in out["q"]


def test_dash_m_is_the_measure_flag() -> None:
    runs = sorted(str(p) for p in (DATA / "runs").glob("*.run"))[:2]
    args = ["score", "--qrels", str(DATA / "human.qrels"),
            *[a for r in runs for a in ("--run", r)], "--json"]
    short = CliRunner().invoke(main, [*args, "-m", "AP", "-m", "P(rel=2)@10"])
    long = CliRunner().invoke(main, [*args, "--measure", "AP", "--measure", "P(rel=2)@10"])
    assert short.exit_code == 0, short.output
    assert json.loads(short.stdout) == json.loads(long.stdout)
    assert json.loads(short.stdout)["measures"] == ["AP", "P(rel=2)@10"]


def test_each_measure_is_named_as_it_was_asked() -> None:
    args = ["score", "--qrels", str(DATA / "human.qrels"), "--run",
            str(sorted((DATA / "runs").glob("*.run"))[0]), "--json"]
    trec = CliRunner().invoke(main, [*args, "-m", "ndcg_cut.10", "-m", "P.5", "-m", "map"])
    irm = CliRunner().invoke(main, [*args, "-m", "nDCG@10", "-m", "P@5", "-m", "AP"])
    a, b = json.loads(trec.stdout), json.loads(irm.stdout)
    assert a["measures"] == ["ndcg_cut.10", "P.5", "map"]
    assert b["measures"] == ["nDCG@10", "P@5", "AP"]
    (ra,), (rb,) = a["runs"].values(), b["runs"].values()
    assert list(ra) == a["measures"] and list(rb) == b["measures"]   # NDCG@10 once
    for x, y in zip(a["measures"], b["measures"]):
        assert ra[x] == rb[y]                                       # the same figures
    both = CliRunner().invoke(main, [*args, "-m", "P.5", "-m", "P@5"])
    assert json.loads(both.stdout)["measures"] == ["P.5"]          # one measure, once
