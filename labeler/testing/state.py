"""The mutable state of one fake server: its behaviour, counters and recorded requests.

Shared by the HTTP app (:mod:`.app`) and the controller (:class:`~.server.FakeLLMServer`);
thread-safe, since the app serves from its own thread.

Usage::

    state = ServerState(Behaviour(...))
    attempt = state.next_attempt(prompt_text)     # 1 for the first time this text is asked
    state.update(latency=0.05)
"""

from __future__ import annotations

import threading
from dataclasses import fields, replace
from typing import Any

from labeler.errors import ConfigError
from labeler.testing.behaviour import Behaviour, FaultPlan, default_grade, shifted_grade


class ServerState:
    """Behaviour, call counters and the request log of one running fake server."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.lock = threading.Lock()
        self.calls = 0
        self.answered = 0  # 200 answers to chat requests (for revoke_after / die_after)
        self._requests: list[dict[str, Any]] = []
        self._attempts: dict[str, int] = {}
        # the Batch API's files and batches (a labeler.testing.batch.FakeBatches), attached by
        # whoever serves this state (the batch routes need it; this module does not)
        self.batches: Any = None

    def grade(self, text: str) -> int:
        """The grade the server decides for a prompt's text (shifted for ``shift`` of them)."""
        b = self.behaviour
        grade = int(b.grade_fn(text)) if b.grade_fn else default_grade(text)
        return shifted_grade(grade, text, b.shift, b.shift_seed)

    def next_attempt(self, text: str) -> int:
        """How many times this prompt text has been asked, this time included."""
        with self.lock:
            self._attempts[text] = self._attempts.get(text, 0) + 1
            return self._attempts[text]

    def record(self, rec: dict[str, Any]) -> None:
        """Count one chat request, and keep it when the behaviour says to record."""
        with self.lock:
            self.calls += 1
            if self.behaviour.record:
                self._requests.append(rec)

    def count_answer(self) -> int:
        """Count one 200 answer; returns how many there were before it."""
        with self.lock:
            self.answered += 1
            return self.answered - 1

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self._requests)

    def reset(self) -> None:
        """Forget calls, answers, recorded requests and attempt counts."""
        with self.lock:
            self.calls = self.answered = 0
            self._requests, self._attempts = [], {}

    def update(self, **changes: Any) -> None:
        """Replace some behaviour settings (``faults`` may be a dict); unknown names refused."""
        if "faults" in changes and isinstance(changes["faults"], dict):
            changes["faults"] = FaultPlan(**changes["faults"])
        if "models" in changes and changes["models"] is not None:
            changes["models"] = tuple(changes["models"])
        unknown = set(changes) - {f.name for f in fields(Behaviour)}
        if unknown:
            raise ConfigError(f"unknown FakeLLMServer settings: {sorted(unknown)}")
        self.behaviour = replace(self.behaviour, **changes)
