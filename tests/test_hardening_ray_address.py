"""An unreachable ``--ray-address`` is a clear error within a deadline (exit 2), not a wait
of minutes in Ray; a ``ray://`` address without Ray's client says how to install it."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import main
from labeler.testing import FakeLLMServer

from labelkit import make_pairs, write_pairs

pytest.importorskip("ray.data", reason="the ray extra is not installed")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _label(tmp: Path, srv: FakeLLMServer, address: str) -> tuple[int, str, float]:
    pairs = write_pairs(make_pairs(3), tmp / "pairs.jsonl")
    start = time.monotonic()
    res = CliRunner().invoke(main, ["label", "--pairs", str(pairs), "--model", "fake-judge",
                                    "--base-url", srv.base_url, "--no-cache", "--out",
                                    str(tmp / "out.jsonl"), "--engine", "ray",
                                    "--ray-address", address])
    return res.exit_code, res.output, time.monotonic() - start


def test_a_ray_address_nobody_listens_on_is_exit_2_at_once(tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        code, out, took = _label(tmp_path, srv, f"127.0.0.1:{_closed_port()}")
    assert code == 2, out
    assert "cannot reach the Ray cluster" in out and "--ray-address" in out
    assert took < 15 and not (tmp_path / "out.jsonl").exists()


def test_an_address_that_never_answers_gets_a_deadline(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from labeler.labelling import ray_engine

    monkeypatch.setattr(ray_engine, "CONNECT_S", 0.3)
    with FakeLLMServer() as srv:  # 192.0.2.0/24 is TEST-NET-1: never routed, never answers
        code, out, took = _label(tmp_path, srv, "192.0.2.1:6379")
    assert code == 2, out
    assert "cannot reach the Ray cluster at 192.0.2.1:6379" in out
    assert took < 15


def test_ray_client_address_without_the_client_names_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "grpc", None)  # ray[client] not installed
    with FakeLLMServer() as srv:
        code, out, _ = _label(tmp_path, srv, "ray://head.example:10001")
    assert code == 2, out
    assert "ray[client]" in out
