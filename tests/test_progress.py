"""Progress without a terminal: long commands print a plain line every so often (count, rate,
time left), so a cron job's log shows that it is alive; short ones print none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from labelkit import make_pairs

from labeler.report.progress import EVERY_ENV, Progress

SAMPLE = Path(__file__).resolve().parents[1] / "data"
LLMJUDGE = Path(__file__).parent / "data" / "llmjudge"


def test_the_plain_line_has_the_count_share_rate_and_time_left() -> None:
    shown = Progress("judges", 10, enabled=None, every=3600)
    shown._start -= 4.0          # four seconds ago
    shown.advance(2, "gpt-4o")
    line = shown.line()
    assert line.startswith("judges: 2/10 (20%), 0.5/s, ~16s left · gpt-4o"), line


def _run(*args: object, every: str) -> subprocess.CompletedProcess[str]:
    env = {**__import__("os").environ, EVERY_ENV: every}
    return subprocess.run([sys.executable, "-m", "labeler", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_labelling_without_a_terminal_logs_progress_lines(
        fake_llm: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import labeler

    pairs = make_pairs(40)
    monkeypatch.setenv(EVERY_ENV, "3600")
    labeler.label(pairs, model="gpt-4o-mini", base_url=fake_llm.base_url,  # type: ignore[attr-defined]
                  api_key="sk-test", no_cache=True)
    assert "labelling:" not in capsys.readouterr().err
    monkeypatch.setenv(EVERY_ENV, "0")
    labeler.label(pairs, model="gpt-4o-mini", base_url=fake_llm.base_url,  # type: ignore[attr-defined]
                  api_key="sk-test", no_cache=True)
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("labelling: ")]
    assert lines and "/40 (" in lines[0] and "/s" in lines[0] and "cached 0" in lines[0]


def test_judges_without_a_terminal_logs_progress_lines() -> None:
    human = LLMJUDGE / "test-human.qrels"
    sets = [LLMJUDGE / "Olz-gpt4o.qrels", LLMJUDGE / "willia-umbrela1.qrels"]
    res = _run("judges", "--human", human, "--bootstrap", "0",
               *[x for s in sets for x in ("--llm", s)],
               every="0")
    assert res.returncode == 0, res.stderr
    assert any(x.startswith("judges: 1/2") for x in res.stderr.splitlines()), res.stderr
