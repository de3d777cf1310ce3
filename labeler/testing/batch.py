"""The fake server's Batch API: ``/v1/files`` and ``/v1/batches``, as OpenAI (and vLLM's
``run-batch`` output) shape them.

Each line of a batch is answered by the same decision (:func:`~labeler.testing.answers.decide`)
as the online ``/v1/chat/completions`` endpoint (same grades, same faults, same structured-output
behaviour, attempts counted per prompt text across both), so batch and online labels agree.
On top of that, :class:`BatchSettings` adds what only batches do: a processing time, lines
that fail (HTTP 500 in the error file) or expire (``batch_expired``: the batch ends
``expired``), a batch refused whole for its ``response_format``, and a limit on batches in
progress (``POST /v1/batches`` answers 429 beyond it).

Usage::

    with FakeLLMServer() as srv:
        srv.batches.configure(processing_s=0.5, fail_lines=0.1, queue_limit=2)
        ...   # client.files.create(file=..., purpose="batch"); client.batches.create(...)
        srv.batches.stats()   # {"files": n, "batches": n, "requests": n, "lines": [[ids], ...]}
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, fields, replace
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from labeler.errors import ConfigError
from labeler.testing.answers import decide
from labeler.testing.behaviour import error_body, messages_text, question_text, seeded_rng
from labeler.testing.state import ServerState

if TYPE_CHECKING:
    from aiohttp import web

Control = Callable[[str, str, "dict[str, Any] | None"], Any]
"""A subprocess server's controller request: (method, path, data) → the decoded answer."""

ENDPOINTS = ("/v1/chat/completions", "/chat/completions")
_RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
_STEP = 256  # lines answered between two progress updates


@dataclass(frozen=True)
class BatchSettings:
    """What the fake Batch API does beyond answering each line like the chat endpoint.

    ``processing_s``: seconds from creation to completion (lines are answered evenly over
    it). ``fail_lines`` / ``expire_lines``: share of lines (decided per prompt text and the
    number of times it was batched, from the server's seed) answered 500 / left unprocessed
    with ``batch_expired`` (the batch then ends ``expired``). ``refuse_format``: a
    ``response_format`` type (e.g. ``"json_schema"``) that makes the whole batch ``failed``.
    ``queue_limit``: batches running at once; one more is refused with 429, or with
    ``queue_refusal="fail"`` created ``failed`` with ``token_limit_exceeded`` (as OpenAI
    refuses a batch over the enqueued-token limit).
    """

    processing_s: float = 0.0
    fail_lines: float = 0.0
    expire_lines: float = 0.0
    refuse_format: str | None = None
    queue_limit: int | None = None
    queue_refusal: str = "429"

    def __post_init__(self) -> None:
        if self.processing_s < 0:
            raise ConfigError("processing_s must be 0 or more")
        if not (0 <= self.fail_lines <= 1 and 0 <= self.expire_lines <= 1
                and self.fail_lines + self.expire_lines <= 1):
            raise ConfigError("fail_lines and expire_lines must be in [0, 1], summing to ≤ 1")
        if self.queue_limit is not None and self.queue_limit < 1:
            raise ConfigError("queue_limit must be at least 1")
        if self.queue_refusal not in ("429", "fail"):
            raise ConfigError("queue_refusal must be '429' or 'fail'")


class FakeBatches:
    """The Batch API state of one fake server (files, batches, counters). ``control``: the
    controller's request function of a server in a subprocess, to which ``configure``/``stats``
    are forwarded."""

    def __init__(self, state: ServerState, control: Control | None = None) -> None:
        self.state = state
        self.control = control
        self.settings = BatchSettings()
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.lines: dict[str, list[str]] = {}  # batch id → custom ids, in order
        self.requests = 0  # HTTP requests to /v1/files and /v1/batches
        self.api_versions: set[str] = set()  # ?api-version= seen (Azure clients send it)
        self._seen: dict[str, int] = {}
        self._n = 0
        self._cancel: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- control ------------------------------------------------------------------------
    def configure(self, **changes: Any) -> None:
        """Change :class:`BatchSettings` (works with a subprocess server too)."""
        if self.control is not None:
            self.control("POST", "batch", changes)
            return
        unknown = set(changes) - {f.name for f in fields(BatchSettings)}
        if unknown:
            raise ConfigError(f"unknown batch settings: {sorted(unknown)}")
        self.settings = replace(self.settings, **changes)

    def stats(self) -> dict[str, Any]:
        """Counts of uploaded files, created batches, HTTP requests; custom ids per batch."""
        if self.control is not None:
            return dict(self.control("GET", "batch", None))
        return {"files": len(self.files), "batches": len(self.batches),
                "requests": self.requests, "lines": [list(v) for v in self.lines.values()],
                "api_versions": sorted(self.api_versions),
                "settings": asdict(self.settings)}

    # -- the lines ----------------------------------------------------------------------
    def _answer(self, line: dict[str, Any], n: int) -> tuple[dict[str, Any] | None, bool]:
        """One line's result and whether it was processed (False: expired)."""
        body = line.get("body") or {}
        text = messages_text(body.get("messages") or []) if isinstance(
            body.get("messages"), list) else ""
        seen = self._seen[text] = self._seen.get(text, 0) + 1
        s, state, b = self.settings, self.state, self.state.behaviour
        u = 1.0 if not (s.expire_lines or s.fail_lines) else seeded_rng(
            b.seed, "batch", seen, text).random()
        head = {"id": f"batch_req_{n:06d}", "custom_id": line.get("custom_id")}
        if u < s.expire_lines:
            return dict(head, response=None, error={
                "code": "batch_expired", "message": "This request could not be executed "
                "before the completion window expired."}), False
        auth = {"authorization": f"Bearer {b.api_key}"} if b.api_key is not None else {}
        messages = body.get("messages")
        asked = question_text(messages) if isinstance(messages, list) else ""
        rec: dict[str, Any] = {"grade": state.grade(asked), "attempt": None}
        payload: dict[str, Any] | None
        if u < s.expire_lines + s.fail_lines:
            state.next_attempt(text)
            status, payload = 500, error_body(500)
        else:
            out = decide(state, body, auth, rec)
            status, payload = (500, error_body(500)) if out.drop else (out.status, out.payload)
        return dict(head, response={"status_code": status, "request_id": f"req_{n:06d}",
                                    "body": payload}, error=None), True

    async def _process(self, batch: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        start = time.monotonic()
        batch.update(status="in_progress", in_progress_at=int(time.time()))
        ok: list[bytes] = []
        bad: list[bytes] = []
        expired = cancelled = False
        counts = batch["request_counts"]
        for i, line in enumerate(lines):
            if batch["id"] in self._cancel:
                cancelled = True
                break
            self._n += 1
            result, done = self._answer(line, self._n)
            expired |= not done
            good = done and result is not None and result["response"]["status_code"] == 200
            (ok if good else bad).append(json.dumps(result).encode() + b"\n")
            counts["completed" if good else "failed"] += 1
            if i % _STEP == _STEP - 1 or i == len(lines) - 1:
                due = start + self.settings.processing_s * (i + 1) / len(lines)
                await asyncio.sleep(max(0.0, due - time.monotonic()))
        now = int(time.time())
        batch["output_file_id"] = self._store(b"".join(ok), "batch_output") if ok else None
        batch["error_file_id"] = self._store(b"".join(bad), "batch_output") if bad else None
        if cancelled:
            batch.update(status="cancelled", cancelled_at=now)
        elif expired:
            batch.update(status="expired", expired_at=now)
        else:
            batch.update(status="completed", finalizing_at=now, completed_at=now)

    def _store(self, data: bytes, purpose: str, filename: str = "output.jsonl") -> str:
        file_id = f"file-fake{len(self.files) + 1:06d}"
        self.files[file_id] = {"id": file_id, "object": "file", "bytes": len(data),
                               "created_at": int(time.time()), "filename": filename,
                               "purpose": purpose, "status": "processed"}
        self.contents[file_id] = data
        return file_id

    def _validate(self, raw: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[Any]]:
        """The lines of an input file, or the batch-level errors that fail it whole."""
        lines: list[dict[str, Any]] = []
        ids: set[str] = set()
        refuse = self.settings.refuse_format
        for n, text in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except ValueError:
                return [], [_err("invalid_json_line", "This line is not valid JSON.", n)]
            cid = line.get("custom_id") if isinstance(line, dict) else None
            if not isinstance(cid, str) or line.get("method") != "POST" or not isinstance(
                    line.get("body"), dict):
                return [], [_err("invalid_request", "Each line needs custom_id, method POST "
                                 "and a body.", n)]
            if line.get("url") != endpoint:
                return [], [_err("mismatched_endpoint", f"The url {line.get('url')!r} does "
                                 f"not match the batch endpoint {endpoint!r}.", n, "url")]
            if cid in ids:
                return [], [_err("duplicate_custom_id", "The custom_id for this request is a "
                                 "duplicate of another request.", n, "custom_id")]
            fmt = line["body"].get("response_format")
            if refuse and isinstance(fmt, dict) and fmt.get("type") == refuse:
                return [], [_err("invalid_request", f"response_format {refuse} is not "
                                 "supported for this model in batches.", n,
                                 "body.response_format")]
            ids.add(cid)
            lines.append(line)
        if not lines:
            return [], [_err("empty_file", "The input file has no requests.", None)]
        return lines, []

    def _create(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        file_id, endpoint = body.get("input_file_id"), body.get("endpoint")
        if file_id not in self.contents:
            return 404, error_body(404, f"No such File object: {file_id}")
        if endpoint not in ENDPOINTS or body.get("completion_window") != "24h":
            return 400, error_body(400, "endpoint must be /v1/chat/completions and "
                                   "completion_window 24h")
        limit = self.settings.queue_limit
        full = limit is not None and sum(b["status"] in _RUNNING
                                         for b in self.batches.values()) >= limit
        if full and self.settings.queue_refusal == "429":
            return 429, error_body(429, f"Enqueued batch limit reached ({limit} batches "
                                   "in progress). Wait for one to finish.")
        now = int(time.time())
        batch_id = f"batch_fake{len(self.batches) + 1:06d}"
        lines, errors = self._validate(self.contents[file_id], endpoint)
        if full and not errors:
            errors = [_err("token_limit_exceeded", f"Enqueued token limit reached for this "
                           f"model ({limit} batches in progress). Try again once some "
                           "in_progress batches have been completed.", None)]
        batch: dict[str, Any] = {
            "id": batch_id, "object": "batch", "endpoint": endpoint, "errors": None,
            "input_file_id": file_id, "completion_window": "24h", "status": "validating",
            "output_file_id": None, "error_file_id": None, "created_at": now,
            "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None,
            "completed_at": None, "failed_at": None, "expired_at": None,
            "cancelling_at": None, "cancelled_at": None, "metadata": body.get("metadata"),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
        self.batches[batch_id] = batch
        self.lines[batch_id] = [str(x["custom_id"]) for x in lines]
        if errors:
            batch.update(status="failed", failed_at=now,
                         errors={"object": "list", "data": errors})
        else:
            task = asyncio.get_running_loop().create_task(self._process(batch, lines))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return 200, batch

    def _cancel_batch(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return 404, error_body(404, f"No such Batch: {batch_id}")
        if batch["status"] in ("validating", "in_progress", "finalizing"):
            self._cancel.add(batch_id)
            batch.update(status="cancelling", cancelling_at=int(time.time()))
        return 200, batch


def _err(code: str, message: str, line: int | None, param: str | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "line": line, "param": param}


def add_batch_routes(app: web.Application, state: ServerState) -> None:
    """Register the Batch API routes of ``state.batches`` on the fake server's app."""
    from aiohttp import BodyPartReader, web

    if state.batches is None:
        state.batches = FakeBatches(state)
    fake: FakeBatches = state.batches

    def denied(request: web.Request) -> web.Response | None:
        fake.requests += 1
        if "api-version" in request.query:
            fake.api_versions.add(request.query["api-version"])
        key = state.behaviour.api_key
        if key is not None and request.headers.get("Authorization") != f"Bearer {key}":
            return web.json_response(error_body(401), status=401)
        return None

    async def upload(request: web.Request) -> web.Response:
        if (no := denied(request)) is not None:
            return no
        purpose, data, name = None, b"", "input.jsonl"
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "purpose":
                purpose = (await part.text()).strip()
            elif part.name == "file":
                name = part.filename or name
                chunks = []  # chunk by chunk: batch files exceed the app's body limit
                while chunk := await part.read_chunk(1 << 20):
                    chunks.append(chunk)
                data = b"".join(chunks)
        if purpose != "batch":
            return web.json_response(error_body(400, f"purpose must be 'batch', got {purpose!r}"),
                                     status=400)
        return web.json_response(fake.files[fake._store(data, "batch", name)])

    def found(request: web.Request, table: dict[str, Any], key: str, what: str) -> web.Response:
        item = table.get(request.match_info[key])
        return (web.json_response(item) if item else
                web.json_response(error_body(404, f"No such {what}."), status=404))

    async def file_meta(request: web.Request) -> web.Response:
        return denied(request) or found(request, fake.files, "file_id", "File object")

    async def content(request: web.Request) -> web.Response:
        if (no := denied(request)) is not None:
            return no
        data = fake.contents.get(request.match_info["file_id"])
        if data is None:
            return web.json_response(error_body(404, "No such File object."), status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def create(request: web.Request) -> web.Response:
        if (no := denied(request)) is not None:
            return no
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return web.json_response(error_body(400, "the body must be a JSON object"),
                                     status=400)
        status, payload = fake._create(body)
        return web.json_response(payload, status=status)

    async def listing(request: web.Request) -> web.Response:
        if (no := denied(request)) is not None:
            return no
        data = sorted(fake.batches.values(), key=lambda b: b["id"], reverse=True)
        after = request.query.get("after")
        if after:
            data = [b for b in data if b["id"] < after]
        limit = int(request.query.get("limit") or 20)
        page = data[:limit]
        return web.json_response({"object": "list", "data": page,
                                  "first_id": page[0]["id"] if page else None,
                                  "last_id": page[-1]["id"] if page else None,
                                  "has_more": len(data) > limit})

    async def retrieve(request: web.Request) -> web.Response:
        return denied(request) or found(request, fake.batches, "batch_id", "Batch")

    async def cancel(request: web.Request) -> web.Response:
        if (no := denied(request)) is not None:
            return no
        status, payload = fake._cancel_batch(request.match_info["batch_id"])
        return web.json_response(payload, status=status)

    async def control(request: web.Request) -> web.Response:
        if request.method == "GET":
            return web.json_response(fake.stats())
        try:
            fake.configure(**(await request.json()))
        except (ConfigError, TypeError) as exc:
            return web.json_response(error_body(400, str(exc)), status=400)
        return web.json_response({"ok": True})

    async def azure_models(request: web.Request) -> web.Response:
        names = state.behaviour.models or ("fake-judge",)
        return web.json_response({"object": "list", "data": [
            {"id": n, "object": "model", "created": 0, "owned_by": "labeler"} for n in names]})

    for prefix in ("/v1", "/openai"):  # OpenAI paths, and Azure's (azure_endpoint/openai/...)
        app.router.add_post(f"{prefix}/files", upload)
        app.router.add_get(f"{prefix}/files/{{file_id}}", file_meta)
        app.router.add_get(f"{prefix}/files/{{file_id}}/content", content)
        app.router.add_post(f"{prefix}/batches", create)
        app.router.add_get(f"{prefix}/batches", listing)
        app.router.add_get(f"{prefix}/batches/{{batch_id}}", retrieve)
        app.router.add_post(f"{prefix}/batches/{{batch_id}}/cancel", cancel)
    app.router.add_get("/openai/models", azure_models)
    app.router.add_route("*", "/_fake/batch", control)
