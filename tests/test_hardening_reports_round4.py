"""Reports against hostile inputs: the ``--agreement`` JSON's interval text is escaped in
``report.md`` and a level that is not a number is exit 2 naming the file; a right-to-left
override in a run name reaches the terminal escaped, never obeyed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from labeler.cli import main

HOSTILE = "<script>alert(1)</script> **bold** [x](http://e.vil)"


def _files(tmp: Path, run_name: str = "A") -> list[str]:
    (tmp / "h.qrels").write_text("q1 0 d1 3\nq1 0 d2 1\nq2 0 d1 2\n")
    (tmp / "l.qrels").write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d1 2\n")
    run = tmp / "a.run"
    run.write_text("q1 Q0 d1 1 2 x\nq1 Q0 d2 2 1 x\nq2 Q0 d1 1 2 x\n")
    return ["compare", "--human", str(tmp / "h.qrels"), "--llm", str(tmp / "l.qrels"),
            "--run", f"{run_name}={run}"]


def _agreement(tmp: Path, **ci: object) -> Path:
    path = tmp / "agree.json"
    path.write_text(json.dumps({"n": 10, "cohen_kappa": 0.5, "ci": {
        "cohen_kappa": [0.3, 0.7], "level": 0.95, "method": HOSTILE, "unit": HOSTILE,
        "n_resamples": HOSTILE, **ci}}))
    return path


def test_the_agreement_interval_text_is_escaped_in_report_md(tmp_path: Path) -> None:
    args = [*_files(tmp_path), "--agreement", str(_agreement(tmp_path)), "--report",
            str(tmp_path / "rep")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    md = (tmp_path / "rep" / "report.md").read_text()
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "alert(1)" in md and "<script>" not in md and "[x](http" not in md
    assert "<script>alert" not in html


def test_a_non_numeric_level_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    for level in ("high", None, [0.9], 95):
        path = _agreement(tmp_path, level=level)
        res = CliRunner().invoke(main, [*_files(tmp_path), "--agreement", str(path),
                                        "--report", str(tmp_path / "rep")])
        assert res.exit_code == 2, (level, res.output)
        assert "agree.json" in res.output and "ci.level" in res.output


def test_a_right_to_left_override_in_a_run_name_is_escaped_on_the_terminal(
        tmp_path: Path) -> None:
    res = CliRunner().invoke(main, _files(tmp_path, "evil\u202etxt.exe"))
    assert res.exit_code == 0, res.output
    assert "\u202e" not in res.output and "evil\\u202etxt.exe" in res.output
