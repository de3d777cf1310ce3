"""Credentials in every spelling a base URL can carry them — a password holding ``'`` or a raw
``@``, query-string secrets (``?key=``, ``&token=``, ``&sig=``…), a value shaped like a key —
are masked by one function, in every file, message and repr labeler writes; none of them
changes the cache key."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import main
from labeler.errors import ConfigError, EndpointError
from labeler.judges.openai_judge import OpenAIJudge
from labeler.redact import redact
from labeler.settings import JudgeConfig
from labeler.testing import FakeLLMServer

from labelkit import make_pairs, write_job, write_pairs

SECRETS = ("Pa55'w0rd", "p@ss", "word9", "QkEy-0123-abcd", "ToKen-9876-zyxw", "AcCeSs-5555-tok",
           "OaUtH-C0de-1234", "S1gnAtUrE-77", "Hunter2-pw-42", "AIzaSyD0123456789abcdefGHIJ")
"""Each planted below; none may survive."""

SPELLINGS = [
    "http://gw-user:Pa55'w0rd@{host}/v1",
    "http://gw-user:p@ss@word9@{host}/v1",
    "http://{host}/v1?key=QkEy-0123-abcd",
    "http://{host}/v1?api-version=2024-02-01&token=ToKen-9876-zyxw",
    "http://{host}/v1?access_token=AcCeSs-5555-tok",
    "http://{host}/v1?code=OaUtH-C0de-1234",
    "http://{host}/v1?sv=2024&sig=S1gnAtUrE-77",
    "http://{host}/v1?password=Hunter2-pw-42",
    "http://{host}/v1?x-goog-api-key=QkEy-0123-abcd",
    "http://{host}/v1?foo=AIzaSyD0123456789abcdefGHIJ",
]


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _files_leaking(*roots: Path) -> dict[str, list[str]]:
    found = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and _leaks(path.read_bytes().decode("utf-8", "replace")):
                found[str(path)] = _leaks(path.read_bytes().decode("utf-8", "replace"))
    return found


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_spelling_is_masked_in_text_quoted_or_not(spelling: str) -> None:
    url = spelling.format(host="gw.example:4000")
    for text in (url, f"cannot reach {url} (refused)", f"base_url='{url}'", f'{{"u": "{url}"}}'):
        clean = redact(text)
        assert not _leaks(clean), clean
        assert "gw.example:4000" in clean and "[redacted]" in clean


def test_plain_urls_and_harmless_parameters_are_left_alone() -> None:
    text = ("http://localhost:8000/v1?api-version=2024-02-01&model=gpt-4o-mini-2024-07-18 "
            "max_tokens=200 input_tokens: 12 joe@example.com")
    assert redact(text) == text


def test_a_key_in_the_base_url_does_not_change_the_cache_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    plain = OpenAIJudge("m", base_url="http://localhost:8000/v1", api_key="x")
    monkeypatch.setenv("OPENAI_API_KEY", "local")  # a key that occurs inside the URL
    same = OpenAIJudge("m", base_url="http://localhost:8000/v1")
    assert same.fingerprint == plain.fingerprint
    rotated = [OpenAIJudge("m", base_url=f"http://gw/v1?key={k}").fingerprint
               for k in ("QkEy-0123-abcd", "QkEy-9999-efgh")]
    assert rotated[0] == rotated[1]
    from labeler.redact import endpoint_name

    assert endpoint_name("http://u:p@ss@gw/v1?sig=S1gnAtUrE-77") == \
        "http://[redacted]@gw/v1?sig=[redacted]"


def test_judge_config_repr_and_api_exceptions_hide_the_url_credentials() -> None:
    url = SPELLINGS[1].format(host="gw:4000")
    config = JudgeConfig(model="m", base_url=url)
    assert not _leaks(repr(config)) and not _leaks(str(config)) and "gw:4000" in repr(config)
    for error in (ConfigError(f"cannot use {url}", path=url), EndpointError(f"refused: {url}")):
        assert not _leaks(str(error)) and not _leaks(error.message)


def test_an_unreachable_endpoint_in_the_api_names_it_without_its_credentials() -> None:
    import labeler

    url = "http://gw-user:p@ss@word9@127.0.0.1:9/v1?key=QkEy-0123-abcd"
    with pytest.raises(EndpointError) as caught:
        labeler.label(make_pairs(2), model="m", base_url=url, api_key="k", timeout=0.5,
                      max_retries=0, no_cache=True)
    assert not _leaks(str(caught.value)) and "127.0.0.1:9" in str(caught.value)


@pytest.mark.parametrize("spelling", [SPELLINGS[0], SPELLINGS[2], SPELLINGS[6]])
def test_run_check_run_and_manifest_hold_no_credentials(tmp_path: Path, spelling: str) -> None:
    with FakeLLMServer() as srv:
        host = srv.base_url.removeprefix("http://").removesuffix("/v1")
        config = write_job(tmp_path, f"""\
out_dir = "out"
cache_dir = "cache"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 1
[judge]
model = "fake-judge"
base_url = "{spelling.format(host=host).replace('"', '')}"
max_retries = 0
""")
        check = CliRunner().invoke(main, ["run", str(config), "--check"])
        res = CliRunner().invoke(main, ["run", str(config)])
    assert check.exit_code == 0, check.output
    assert not _leaks(check.output) and not _leaks(res.output), res.output
    if "@" in spelling:  # the client sends a query in the base URL on: a 404 here
        assert res.exit_code in (0, 3), res.output
        assert list((tmp_path / "out").rglob("manifest.json"))
    assert _files_leaking(tmp_path / "out", tmp_path / "cache") == {}


def test_batch_state_files_and_messages_hold_no_password_with_an_at_sign(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABELER_BATCH_POLL", "0.01")
    pairs = write_pairs(make_pairs(4), tmp_path / "pairs.jsonl")
    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=1)
        url = srv.base_url.replace("http://", "http://u:p@ss@word9@")
        res = CliRunner().invoke(main, [
            "label", "--pairs", str(pairs), "--model", "fake-judge", "--base-url", url,
            "--out", str(tmp_path / "o.jsonl"), "--cache-dir", str(tmp_path / "cache"),
            "--batch", "--batch-wait", "0", "--backoff-base", "0.01"])
    assert list((tmp_path / "cache" / "batches").glob("*.json")), res.output
    assert not _leaks(res.output)
    assert _files_leaking(tmp_path) == {}


@pytest.mark.parametrize("spelling", [SPELLINGS[1], SPELLINGS[2]])
def test_probe_says_nothing_of_the_credentials(tmp_path: Path, spelling: str) -> None:
    with FakeLLMServer(api_key="the-right-key-123") as srv:  # refuses: the error names the URL
        host = srv.base_url.removeprefix("http://").removesuffix("/v1")
        res = CliRunner().invoke(main, ["probe", "--model", "fake-judge", "--base-url",
                                        spelling.format(host=host), "--pairs", "2",
                                        "--no-cache", "--max-retries", "0"])
    assert res.exit_code == 2, res.output
    assert not _leaks(res.output) and "[redacted]" in res.output
