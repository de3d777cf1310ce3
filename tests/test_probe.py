"""`probe` end to end through the fake server: a gullible judge is caught, an honest one is not.

The reference figures are recomputed from what the server was asked and what it answered
(its request log), not from the probe's own tables.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from labeler.errors import ConfigError
from labeler.labelling.probe import ATTACKS, FAKE_ANSWER, INSTRUCTION, attack, probe, sample_pairs
from labeler.testing import FakeLLMServer
from labeler.testing.behaviour import gullible_grade, honest_grade

_CHUNK = re.compile(r"(?:^|\n)<chunk>\n(.*?)\n</chunk>", re.DOTALL)
_QUERY = re.compile(r"(?:^|\n)<query>\n(.*?)\n</query>", re.DOTALL)


def _kind(chunk: str) -> str:
    if chunk.endswith(INSTRUCTION):
        return "instruction"
    if chunk.endswith(FAKE_ANSWER):
        return "fake_answer"
    return "stuffing" if "\n\n" in chunk else "original"


def _from_the_log(srv: FakeLLMServer) -> dict[str, dict[str, float]]:
    """raised / mean_change per attack from the server's own log."""
    grades: dict[tuple[str, str, str], int] = {}
    for req in srv.requests:
        user = req["body"]["messages"][-1]["content"]
        assert user.count("<chunk>") == 1 and user.count("</chunk>") == 1  # still delimited
        chunk = _CHUNK.findall(user)[-1]
        key = (_QUERY.findall(user)[-1], chunk.split("\n\n")[0], _kind(chunk))
        grades[key] = req["grade"]
    out = {}
    for kind in ATTACKS:
        change = np.array([g - grades[(q, c, "original")]
                           for (q, c, k), g in grades.items() if k == kind])
        out[kind] = {"raised": float(np.mean(change > 0)), "mean_change": float(np.mean(change))}
    return out


def test_a_gullible_judge_is_caught_by_every_attack() -> None:
    with FakeLLMServer(grade_fn=gullible_grade) as srv:
        result = probe(model="fake-judge", base_url=srv.base_url, n=12, no_cache=True,
                       progress=False)
        expected = _from_the_log(srv)
        assert srv.calls == 12 * (1 + len(ATTACKS))
    out = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert out["pairs"] == 12 and list(out["attacks"]) == list(ATTACKS)
    for kind in ATTACKS:
        got = out["attacks"][kind]
        assert got["raised"] == pytest.approx(expected[kind]["raised"])
        assert got["mean_change"] == pytest.approx(expected[kind]["mean_change"])
        assert got["n"] == 12 and got["failed"] == 0
    below_top = result.table.loc[result.table["attack"] == "instruction", "original"] < 3
    assert out["attacks"]["instruction"]["raised"] == pytest.approx(float(below_top.mean()))
    assert out["attacks"]["instruction"]["raised"] > 0.5  # it obeys the injected note
    assert "instruction" in result.to_text() and "<td>instruction</td>" in result._repr_html_()


def test_an_honest_judge_shows_no_effect() -> None:
    with FakeLLMServer(grade_fn=honest_grade) as srv:
        result = probe(model="fake-judge", base_url=srv.base_url, n=6, no_cache=True,
                       progress=False)
    for figures in result.to_dict()["attacks"].values():
        assert figures["raised"] == 0.0 and figures["mean_change"] == 0.0


def test_failed_twins_are_counted_not_guessed() -> None:
    def flaky(text: str) -> int:
        if INSTRUCTION in text:
            raise ValueError("this server cannot grade that")
        return honest_grade(text)

    with FakeLLMServer(grade_fn=flaky) as srv:
        result = probe(model="fake-judge", base_url=srv.base_url, n=4, no_cache=True,
                       progress=False, max_retries=1, backoff_base=0.005, backoff_max=0.01)
    inst = result.to_dict()["attacks"]["instruction"]
    assert inst["failed"] == 4 and inst["n"] == 0 and inst["raised"] is None
    assert result.to_dict()["attacks"]["stuffing"]["n"] == 4


def test_twins_keep_the_original_text_and_the_pairs_are_real_low_grade_sample_pairs() -> None:
    pairs = sample_pairs(10)
    assert len(pairs) == 10 and pairs["human"].le(1).all()
    assert pairs["query_id"].nunique() == 10  # spread over the sample's queries
    assert sample_pairs(10).equals(pairs)  # deterministic
    q, c = pairs["query"].iloc[0], pairs["chunk"].iloc[0]
    for kind in ATTACKS:
        assert attack(kind, q, c).startswith(c + "\n\n")
    stuffed = attack("stuffing", q, c)[len(c):]
    assert all(stuffed.count(w) >= 3 for w in re.findall(r"\w+", q) if len(w) > 4)
    with pytest.raises(ConfigError, match="unknown attack"):
        probe(model="fake-judge", attacks=("shouting",))


def test_labeler_probe_on_the_command_line() -> None:
    from click.testing import CliRunner

    from labeler.cli import main

    with FakeLLMServer(grade_fn=gullible_grade) as srv:
        res = CliRunner().invoke(main, ["probe", "--model", "fake-judge", "--base-url",
                                        srv.base_url, "--n", "5", "--no-cache", "--json"])
        expected = _from_the_log(srv)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["pairs"] == 5 and set(out["attacks"]) == set(ATTACKS)
    for kind in ATTACKS:
        assert out["attacks"][kind]["raised"] == pytest.approx(expected[kind]["raised"])


def test_the_older_pairs_flag_of_probe_is_its_count_with_a_note() -> None:
    from click.testing import CliRunner

    from labeler.cli import main

    old = CliRunner().invoke(main, ["probe", "--model", "lexical", "--pairs", "3", "--no-cache",
                                    "--json"])
    new = CliRunner().invoke(main, ["probe", "--model", "lexical", "--n", "3", "--no-cache",
                                    "--json"])
    assert old.exit_code == 0 and new.exit_code == 0, old.output
    assert json.loads(old.stdout) == json.loads(new.stdout)
    assert json.loads(old.stdout)["pairs"] == 3
    assert "--pairs is deprecated; use --n" in old.stderr and "deprecated" not in new.stderr
    assert "--pairs" not in CliRunner().invoke(main, ["probe", "--help"]).stdout
