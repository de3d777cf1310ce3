"""``FakeLLMServer``: start/stop the fake OpenAI-compatible server in a thread or a subprocess.

Usage::

    with FakeLLMServer(latency=0.05, faults=FaultPlan(server_error=0.1)) as srv:
        AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from labeler.errors import ConfigError
from labeler.testing.app import serve_app
from labeler.testing.batch import FakeBatches
from labeler.testing.behaviour import Behaviour, FaultPlan, default_grade
from labeler.testing.state import ServerState


class FakeLLMServer:
    """An OpenAI-compatible server on 127.0.0.1 answering deterministic grades, with faults.

    Usage::

        with FakeLLMServer(answer_style="plain", faults=FaultPlan(fail_first=1)) as srv:
            ...  # point any OpenAI client at srv.base_url
            srv.set(fingerprint="fp-2", shift=0.3)  # a silent change of the judge behind it
    """

    def __init__(self, latency: float = 0.0, faults: FaultPlan | None = None,
                 answer_style: str = "json", structured: str = "json_schema", seed: int = 0,
                 grade_fn: Callable[[str], int] | None = None, api_key: str | None = None,
                 in_process: bool = True, *, models: list[str] | None = None,
                 sample_noise: float = 0.0, record: bool = True, echo_key: bool = False,
                 revoke_after: int | None = None, die_after: int | None = None,
                 fingerprint: str | None = "fake", reported_model: str | None = None,
                 shift: float = 0.0, shift_seed: int = 1) -> None:
        if grade_fn is not None and not in_process:
            raise ConfigError("grade_fn needs in_process=True (a function cannot cross "
                              "into the server subprocess)")
        self.state = ServerState(Behaviour(
            latency, faults or FaultPlan(), answer_style, structured, seed, grade_fn, api_key,
            tuple(models) if models else None, sample_noise, record, echo_key, revoke_after,
            die_after, fingerprint, reported_model, shift, shift_seed))
        self.in_process = in_process
        # the Batch API (/v1/files, /v1/batches); a subprocess server's is reached through
        # the controller
        self.batches = FakeBatches(self.state, control=None if in_process else self._control)
        self.state.batches = self.batches
        self.base_url = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc: subprocess.Popen[str] | None = None

    # -- the grade ------------------------------------------------------------------------
    @staticmethod
    def grade_for(messages_or_text: str | list[dict[str, Any]]) -> int:
        """The default grade: sha256 of the messages' text (see ``messages_text``) mod 4."""
        return default_grade(messages_or_text)

    # -- state ----------------------------------------------------------------------------
    @property
    def calls(self) -> int:
        """Chat completion requests received (all of them, faulted ones included)."""
        return self.state.calls if self.in_process else self._control("GET", "state")["calls"]

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Recorded requests: dicts of body, headers, status, fault, grade, attempt, ..."""
        if self.in_process:
            return self.state.requests
        return self._control("GET", "state?requests=1")["requests"]

    def reset(self) -> None:
        """Forget calls, recorded requests and attempt counts."""
        if not self.in_process:
            self._control("POST", "reset")
            return
        self.state.reset()

    def set(self, **changes: Any) -> None:
        """Change behaviour while running: latency, faults, answer_style, structured, ..."""
        if not self.in_process:
            if "grade_fn" in changes:
                raise ConfigError("grade_fn needs in_process=True")
            if isinstance(changes.get("faults"), FaultPlan):
                changes["faults"] = asdict(changes["faults"])
            self._control("POST", "set", changes)
            return
        self.state.update(**changes)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        """Start serving (idempotent); returns self."""
        if self.base_url:
            return self
        if self.in_process:
            self._start_thread()
        else:
            self._start_subprocess()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop = self._thread = None
        if self._proc is not None:
            self._proc.stdin.close()  # type: ignore[union-attr]  # the server exits on EOF
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.terminate()
                self._proc.wait(timeout=5)
            self._proc.stdout.close()  # type: ignore[union-attr]
            self._proc = None
        self.base_url = ""

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start_thread(self) -> None:
        loop = asyncio.new_event_loop()
        ready: list[Any] = []
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                runner, port = loop.run_until_complete(serve_app(self.state, "127.0.0.1", 0))
                ready.append(port)
            except BaseException as exc:  # reported to start()
                ready.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-llm-server", daemon=True)
        self._thread.start()
        started.wait(timeout=30)
        if not ready or isinstance(ready[0], BaseException):
            raise RuntimeError(f"fake LLM server did not start: {ready[0] if ready else ''}")
        self._loop = loop
        self.base_url = f"http://127.0.0.1:{ready[0]}/v1"

    def _start_subprocess(self) -> None:
        b = self.state.behaviour
        cmd = [sys.executable, "-m", "labeler.testing", "serve", "--port", "0",
               "--latency", str(b.latency), "--answer-style", b.answer_style,
               "--structured", b.structured, "--seed", str(b.seed),
               "--faults", json.dumps(asdict(b.faults)), "--sample-noise", str(b.sample_noise),
               "--shift", str(b.shift), "--shift-seed", str(b.shift_seed), "--watch-stdin"]
        if b.fingerprint is not None:
            cmd += ["--fingerprint", b.fingerprint]
        else:
            cmd += ["--no-fingerprint"]
        if b.reported_model is not None:
            cmd += ["--reported-model", b.reported_model]
        if b.api_key is not None:
            cmd += ["--api-key", b.api_key]
        if b.models:
            cmd += ["--models", ",".join(b.models)]
        if not b.record:
            cmd += ["--no-record"]
        if b.echo_key:
            cmd += ["--echo-key"]
        for name in ("revoke_after", "die_after"):
            if getattr(b, name) is not None:
                cmd += ["--" + name.replace("_", "-"), str(getattr(b, name))]
        with tempfile.TemporaryFile(mode="w+") as err:  # the child keeps its own handle
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=err, text=True)
            line = self._proc.stdout.readline().strip()  # type: ignore[union-attr]
            if not line.startswith("http://"):
                self._proc.wait(timeout=5)
                err.seek(0)
                raise RuntimeError("fake LLM server subprocess did not start: "
                                   f"{err.read()[-2000:]}")
        self.base_url = line

    def _control(self, method: str, path: str, data: dict[str, Any] | None = None) -> Any:
        url = self.base_url.removesuffix("/v1") + "/_fake/" + path
        body = json.dumps(data or {}).encode() if method == "POST" else None
        req = urllib.request.Request(url, data=body, method=method,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

