"""Credentials in a base URL (``http://user:password@host/v1``, a gateway's basic auth) and
a ``Basic`` header echoed by a server never reach a file, a log line or a message; a key
rejected from a custom variable is blamed on that variable."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from labeler.cli import main
from labeler.redact import redact
from labeler.testing import FakeLLMServer

from labelkit import make_pairs, write_job, write_pairs

PASSWORD = "pa55w0rd-Gateway-9"
USER = "gw-user"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
FAST = ("--backoff-base", "0.01", "--backoff-max", "0.05")


def _with_credentials(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@")


def _leaks(text: str) -> list[str]:
    return [s for s in (PASSWORD, BASIC, BASIC.rstrip("="), f"{USER}:") if s in text]


def _files_leaking(*roots: Path) -> dict[str, list[str]]:
    found = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                text = path.read_bytes().decode("utf-8", "replace")
                if _leaks(text):
                    found[str(path)] = _leaks(text)
    return found


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("text", [
    f"http://{USER}:{PASSWORD}@127.0.0.1:8000/v1",
    f"cannot reach https://{USER}:{PASSWORD}@gw.example/v1/chat (refused)",
    f"Incorrect API key provided: Basic {BASIC}. You can find",
    f"'Authorization': 'basic {BASIC.rstrip('=')}'",
])
def test_redact_masks_url_credentials_and_basic_auth(text: str) -> None:
    assert not _leaks(redact(text)) and "[redacted]" in redact(text)


def test_redact_leaves_plain_words_and_emails_alone() -> None:
    text = "basic information about joe@example.com at http://host/v1"
    assert redact(text) == text


def test_a_run_with_credentials_in_its_base_url_writes_them_nowhere(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        config = write_job(tmp_path, f"""\
out_dir = "out"
cache_dir = "cache"
k = [10]
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 2
[judge]
model = "fake-judge"
base_url = "{_with_credentials(srv.base_url)}"
concurrency = 4
max_retries = 1
[human]
qrels = "data/human.qrels"
bootstrap = 0
""")
        check = _cli("run", str(config), "--check")
        res = _cli("run", str(config))
        sent = [r["headers"].get("authorization", "") for r in srv.requests]
    assert check.exit_code == 0, check.output
    assert res.exit_code in (0, 3), res.output
    assert any(BASIC in s for s in sent)  # the credentials did reach the server
    assert not _leaks(check.output) and not _leaks(res.output)
    assert (tmp_path / "out" / "latest.txt").is_file()
    assert _files_leaking(tmp_path / "out", tmp_path / "cache") == {}


def test_an_echoed_basic_header_and_the_url_are_masked_in_errors(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(3), tmp_path / "pairs.jsonl")
    with FakeLLMServer(api_key="the-real-key-123", echo_key=True) as srv:
        res = _cli("label", "--pairs", str(pairs), "--model", "fake-judge", "--base-url",
                   _with_credentials(srv.base_url), "--out", str(tmp_path / "o.jsonl"), *FAST)
        echoed = [r for r in srv.requests if r["status"] == 401]
    assert res.exit_code == 2, res.output
    assert echoed and "rejected" in res.output
    assert not _leaks(res.output)
    assert _files_leaking(tmp_path) == {}


def test_batch_state_files_hold_no_credentials(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LABELER_BATCH_POLL", "0.01")
    pairs = write_pairs(make_pairs(4), tmp_path / "pairs.jsonl")
    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=1)
        res = _cli("label", "--pairs", str(pairs), "--model", "fake-judge", "--base-url",
                   _with_credentials(srv.base_url), "--out", str(tmp_path / "o.jsonl"),
                   "--cache-dir", str(tmp_path / "cache"), "--batch", "--batch-wait", "0",
                   *FAST)
    assert res.exit_code == 5, res.output
    states = list((tmp_path / "cache" / "batches").glob("*.json"))
    assert states
    assert not _leaks(res.output)
    assert _files_leaking(tmp_path) == {}


def test_a_key_rejected_from_a_custom_variable_names_that_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_GATEWAY_KEY", "sk-wrong-key-0123456789")
    with FakeLLMServer(api_key="sk-right-key-0123456789") as srv:
        config = write_job(tmp_path, f"""\
out_dir = "out"
[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = 1
[judge]
model = "fake-judge"
base_url = "{srv.base_url}"
api_key_env = "MY_GATEWAY_KEY"
max_retries = 0
""")
        res = _cli("run", str(config))
    assert res.exit_code == 2, res.output
    assert "MY_GATEWAY_KEY" in res.output and "OPENAI_API_KEY" not in res.output
    assert "sk-wrong-key" not in res.output
