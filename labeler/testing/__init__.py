"""A local OpenAI-compatible HTTP server for tests and benchmarks, with fault injection.

Real HTTP on 127.0.0.1 (ephemeral port): ``POST /v1/chat/completions`` and ``GET /v1/models``.
The grade it answers is deterministic (``FakeLLMServer.grade_for``: sha256 of the messages'
text mod 4, or ``grade_fn(text)``); faults are decided per (prompt text, attempt number) from
the seed, so concurrency never changes the outcome. ``fingerprint``, ``reported_model`` and
``shift`` (a share of pairs answered with another grade) simulate a silent judge change.
Needs ``aiohttp`` (the ``test`` extra), imported only when a server starts.

Usage::

    from labeler.testing import FakeLLMServer, FaultPlan
    with FakeLLMServer(latency=0.05, faults=FaultPlan(rate_limit=0.1)) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        ...
        assert srv.calls == len(srv.requests)

    python -m labeler.testing serve --port 0 --latency 0.05   # prints its URL on line 1
"""

from __future__ import annotations

from labeler.testing.behaviour import (ANSWER_STYLES, BAD_BODIES, FAULTS, MALFORMED_ANSWER,
                                        REFUSALS, SCHEMA_FIELDS, STRUCTURED_MODES, FaultPlan,
                                        error_body, messages_text, render_answer)
from labeler.testing.server import FakeLLMServer

__all__ = ["ANSWER_STYLES", "BAD_BODIES", "FAULTS", "MALFORMED_ANSWER", "REFUSALS",
           "SCHEMA_FIELDS", "STRUCTURED_MODES", "FakeLLMServer", "FaultPlan", "error_body",
           "messages_text", "render_answer"]
