"""The statistics options are declared once: the API, `labeler compare` and the run config
offer the same options, with the same defaults, bounds and help."""

from __future__ import annotations

import dataclasses
import re

import pytest
from click.testing import CliRunner

from labeler.cli import main
from labeler.errors import ConfigError
from labeler.pipeline.config import StatisticsConfig
from labeler.statistics.options import StatsOptions, option_specs


def test_the_config_section_has_exactly_the_api_options_and_defaults() -> None:
    api = {f.name: f.default for f in dataclasses.fields(StatsOptions)}
    # plus one setting of the nightly job alone: print the certified leaderboard
    assert {name: f.default for name, f in StatisticsConfig.model_fields.items()} == {
        **api, "certify": False}
    assert StatisticsConfig().options() == StatsOptions()


def test_compare_offers_every_option_with_its_help_and_default() -> None:
    text = CliRunner().invoke(main, ["compare", "--help"], terminal_width=200).output
    from labeler.cli.options import STATS_FLAGS

    for spec in option_specs():
        flag = STATS_FLAGS.get(spec.name, "--" + spec.name.replace("_", "-"))
        assert re.search(rf"{flag}\b", text), flag
        assert spec.help.split(":")[0][:30] in " ".join(text.split())


@pytest.mark.parametrize(("setting", "bad"), [("test", "z"), ("alpha", 0), ("alpha", 1.0),
                                               ("permutations", 0), ("seed", -1)])
def test_a_bad_value_is_refused_the_same_way_everywhere(setting: str, bad: object) -> None:
    with pytest.raises(ConfigError, match=setting):
        StatsOptions(**{setting: bad})
    with pytest.raises(ValueError, match=setting):
        StatisticsConfig(**{setting: bad})
    if setting != "test":
        flag = "--" + setting.replace("_", "-")
        result = CliRunner().invoke(main, ["compare", "--human", "h", "--llm", "l", "--run",
                                           "r", flag, str(bad)])
        assert result.exit_code == 2 and flag in result.output
