"""docs/guide/ecosystem.md's Python examples run as written, in order, offline (the packaged
sample, the lexical judge), and so does examples/pyterrier_experiment.py."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guide" / "ecosystem.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_the_page_has_examples_for_each_library() -> None:
    blocks = BLOCK.findall(PAGE.read_text())
    code = "\n".join(blocks)
    assert len(blocks) >= 8
    for needle in ("ir_datasets.registry.register", "ir_measures.calc_aggregate", "to_ranx",
                   "LLMJudge", "pt.Experiment", "pytrec_eval.RelevanceEvaluator"):
        assert needle in code, needle


def test_the_pages_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    for module in ("ir_datasets", "ir_measures", "pytrec_eval", "pyterrier"):
        pytest.importorskip(module)
    import importlib.util

    import ir_datasets

    # the ranx block runs where ranx is installed
    with_ranx = importlib.util.find_spec("ranx") is not None

    if "sample/dl19" in ir_datasets.registry:   # the page registers it (once per process)
        pytest.skip("sample/dl19 is already registered in this process")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "ecosystem_docs"}
    for i, block in enumerate(BLOCK.findall(PAGE.read_text()), start=1):
        if "ranx" in block and not with_ranx:
            continue
        exec(compile(block, f"{PAGE.name} block {i}", "exec"), namespace)
    side = namespace["side_by_side"]
    assert sorted({key for key, _ in side.index}) == ["LLM", "human"]  # type: ignore[attr-defined]
    judged = namespace["judged"]
    assert set(judged["label_status"]) == {"ok"}  # type: ignore[index]


def test_the_pyterrier_example_script_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyterrier")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pyterrier_experiment.py"])   # the offline judge
    runpy.run_path(str(ROOT / "examples" / "pyterrier_experiment.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "human" in out and "LLM" in out and "nDCG@10" in out
