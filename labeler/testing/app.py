"""The aiohttp app of the fake server: HTTP in, a decided answer (:mod:`.answers`) out.

Other endpoints plug in through :data:`EXTRA_ROUTES`: each named module has
``add_routes(app: aiohttp.web.Application, state: ServerState) -> None``, called when the app
is built (in-process and subprocess servers alike).

Usage (internal; see ``FakeLLMServer``)::

    runner, port = await serve_app(state, "127.0.0.1", 0)
"""

from __future__ import annotations

import asyncio
import importlib
import json
import socket
import time
from typing import Any

from labeler.errors import ConfigError
from labeler.testing.answers import Outcome, decide, error
from labeler.testing.batch import add_batch_routes
from labeler.testing.behaviour import DEFAULT_MODEL, OWNED_BY, error_body, question_text
from labeler.testing.state import ServerState

EXTRA_ROUTES: tuple[str, ...] = ()
"""Modules adding endpoints to the fake server (``add_routes(app, state)``)."""


def _parse_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _log_entry(state: ServerState, body: dict[str, Any], headers: dict[str, str]
               ) -> dict[str, Any]:
    messages = body.get("messages")
    text = question_text(messages) if isinstance(messages, list) else ""
    rf = body.get("response_format")
    return {"body": body, "headers": headers, "status": None, "fault": None,
            "grade": state.grade(text), "attempt": None, "t": time.monotonic(),
            "response_format": rf.get("type") if isinstance(rf, dict) else None}


async def _send(request: Any, out: Outcome) -> Any:
    """Write ``out``: at once, or the headers then the body dripped 16 bytes at a time."""
    from aiohttp import web

    if out.drop:
        request.transport.close()
        raise asyncio.CancelledError
    if not out.drip:
        headers = {k: v for k, v in out.headers.items() if k.lower() != "content-type"}
        return web.Response(body=out.body(), status=out.status, headers=headers,
                            content_type=out.headers.get("content-type", "application/json"))
    resp = web.StreamResponse(status=out.status, headers=out.headers)
    resp.content_type = "application/json"
    data = out.body()
    resp.content_length = len(data)
    await resp.prepare(request)
    for start in range(0, len(data), 16):
        await resp.write(data[start:start + 16])
        await asyncio.sleep(out.drip)
    await resp.write_eof()
    return resp


async def serve_app(state: ServerState, host: str, port: int) -> tuple[Any, int]:
    """Build the aiohttp app over ``state`` and listen on host:port; returns (runner, port)."""
    from aiohttp import web

    async def chat(request: web.Request) -> web.StreamResponse:
        b = state.behaviour
        body = _parse_body(await request.read())
        headers = {k.lower(): v for k, v in request.headers.items()}
        rec = _log_entry(state, body, headers)
        state.record(rec)
        out = decide(state, body, headers, rec) if body else error(
            400, "the body must be a JSON object")
        rec["status"], rec["fault"] = (None if out.drop else out.status), out.fault
        if b.latency > 0:
            await asyncio.sleep(b.latency)
        if out.hang > 0:
            await asyncio.sleep(out.hang)
        return await _send(request, out)

    async def models(request: web.Request) -> web.Response:
        b = state.behaviour
        owner = OWNED_BY.get(b.structured, "labeler")
        return web.json_response({"object": "list", "data": [
            {"id": n, "object": "model", "created": 0, "owned_by": owner}
            for n in b.models or (DEFAULT_MODEL,)]})

    async def control_state(request: web.Request) -> web.Response:
        data: dict[str, Any] = {"calls": state.calls}
        if request.query.get("requests"):
            data["requests"] = state.requests
        return web.json_response(data)

    async def reset(request: web.Request) -> web.Response:
        state.reset()
        return web.json_response({"ok": True})

    async def set_(request: web.Request) -> web.Response:
        try:
            state.update(**(await request.json()))
        except (ConfigError, TypeError) as exc:
            return web.json_response(error_body(400, str(exc)), status=400)
        return web.json_response({"ok": True})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/_fake/state", control_state)
    app.router.add_post("/_fake/reset", reset)
    app.router.add_post("/_fake/set", set_)
    add_batch_routes(app, state)
    for name in EXTRA_ROUTES:
        importlib.import_module(name).add_routes(app, state)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True,
                           shutdown_timeout=0.2)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    await web.SockSite(runner, sock, backlog=1024).start()
    return runner, sock.getsockname()[1]
