"""`labeler run` config: TOML validated by pydantic, errors naming the key's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.pipeline.config import config_hash, load_config
from labeler.errors import ConfigError

BASE = """\
out_dir = "nightly"
[inputs]
queries = "in/queries.tsv"
corpus = "in/corpus.jsonl"
runs = ["in/runs/*.run"]
depth = 5
[judge]
model = "gpt-4o-mini"
"""


def _config(tmp_path: Path, text: str = BASE, name: str = "job.toml") -> Path:
    runs = tmp_path / "jobs" / "in" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for tag in ("b", "a"):
        (runs / f"{tag}.run").write_text(f"1 Q0 d1 1 2.0 {tag}\n")
    path = tmp_path / "jobs" / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.exit_code == 2
    return str(err.value)


def test_relative_paths_resolve_against_the_config_file_not_the_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _config(tmp_path)
    monkeypatch.chdir(tmp_path)
    cfg = load_config(Path("jobs/job.toml"))
    jobs = (tmp_path / "jobs").resolve()
    assert cfg.inputs.queries == jobs / "in" / "queries.tsv"
    assert cfg.out_dir == jobs / "nightly"
    assert cfg.inputs.runs == [str(jobs / "in" / "runs" / "a.run"),
                               str(jobs / "in" / "runs" / "b.run")]  # glob, sorted
    assert cfg.k == [10] and cfg.judge.concurrency == 8 and cfg.judge.api_key_env == \
        "OPENAI_API_KEY"
    assert path.exists()


def test_a_bad_value_names_file_and_key_path(tmp_path: Path) -> None:
    msg = _error(_config(tmp_path, BASE + "concurrency = 0\n"))
    assert msg.endswith("job.toml: judge.concurrency: Input should be greater than 0")


def test_unknown_keys_are_refused_with_their_path(tmp_path: Path) -> None:
    msg = _error(_config(tmp_path, BASE + "modle = \"x\"\n[drift]\nmax_ndcg = 0.1\n"))
    assert "judge.modle: unknown key" in msg
    assert "drift.max_ndcg: unknown key" in msg


def test_missing_section_and_incomplete_inputs(tmp_path: Path) -> None:
    msg = _error(_config(tmp_path, '[inputs]\nqueries = "q.tsv"\n'))
    assert "judge: Field required" in msg
    assert "inputs: give `pairs`, or `queries`, `corpus` and `runs`" in msg
    assert "missing: corpus, runs" in msg


def test_pairs_and_pooling_inputs_are_exclusive(tmp_path: Path) -> None:
    text = BASE.replace('queries = "in/queries.tsv"', 'pairs = "p.jsonl"\nqueries = "q.tsv"')
    assert "not both" in _error(_config(tmp_path, text))


def test_a_glob_matching_nothing_is_an_error(tmp_path: Path) -> None:
    text = BASE.replace("in/runs/*.run", "in/nothing/*.run")
    msg = _error(_config(tmp_path, text))
    assert "inputs.runs" in msg and "matches no file" in msg


def test_api_key_env_refuses_a_key(tmp_path: Path) -> None:
    msg = _error(_config(tmp_path, BASE + 'api_key_env = "sk-abc123"\n'))
    assert "judge.api_key_env" in msg and "never the key itself" in msg


def test_k_accepts_an_int_or_a_list_and_refuses_zero(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path, "k = 5\n" + BASE)).k == [5]
    assert load_config(_config(tmp_path, "k = [10, 5, 10]\n" + BASE)).k == [10, 5]
    assert "k: Value error" not in (msg := _error(_config(tmp_path, "k = [0]\n" + BASE)))
    assert "k: every k must be greater than 0" in msg


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    msg = _error(_config(tmp_path, BASE + "timeout = \n"))
    assert "not valid TOML" in msg and "line 9" in msg


def test_missing_file(tmp_path: Path) -> None:
    assert "no such config file" in _error(tmp_path / "nope.toml")


def test_config_hash_ignores_out_dir_but_not_the_judge(tmp_path: Path) -> None:
    a = load_config(_config(tmp_path))
    b = load_config(_config(tmp_path, BASE.replace('"nightly"', '"elsewhere"'), "b.toml"))
    c = load_config(_config(tmp_path, BASE.replace("gpt-4o-mini", "gpt-4o"), "c.toml"))
    assert config_hash(a) == config_hash(b) != config_hash(c)
    assert config_hash(a).startswith("sha256:")


def test_prompt_file_resolves_against_the_config(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path, BASE + 'prompt = "prompts/mine.txt"\n'))
    assert cfg.judge.prompt == str((tmp_path / "jobs" / "prompts" / "mine.txt").resolve())
    named = load_config(_config(tmp_path, BASE + 'prompt = "umbrela"\n'))
    assert named.judge.prompt == "umbrela"


@pytest.mark.parametrize("name", ["openai", "azure", "vllm", "ollama"])
def test_example_configs_validate_and_point_at_the_sample(name: str) -> None:
    examples = Path(__file__).resolve().parent.parent / "examples"
    cfg = load_config(examples / f"{name}.toml")
    assert len(cfg.inputs.runs) == 3 and cfg.human is not None
    assert cfg.inputs.queries is not None and cfg.inputs.queries.is_file()
    assert (cfg.judge.base_url is None) == (name == "openai")
    assert (cfg.judge.api_version is not None) == (name == "azure")


def test_score_options_are_checked(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path, 'gain = "exponential"\ninclude_empty = true\n' + BASE))
    assert cfg.gain == "exponential" and cfg.include_empty
    msg = _error(_config(tmp_path, 'gain = "log"\n' + BASE))
    assert "gain: Input should be 'linear' or 'exponential'" in msg


def test_the_documented_config_example_is_valid() -> None:
    import re

    from labeler.pipeline.config import parse_config, tomllib  # tomli on Python 3.10

    root = Path(__file__).resolve().parent.parent
    page = (root / "docs" / "guide" / "nightly.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", page, re.S).group(1)
    cfg = parse_config(tomllib.loads(block), source="docs/guide/nightly.md", base_dir=root)
    assert cfg.human is not None and len(cfg.inputs.runs) == 3
