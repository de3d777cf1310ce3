"""A judge for any OpenAI-compatible chat endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp…).

One request per vote through the official async client with its hidden retries off
(``max_retries=0``): the stage's tenacity policy is the only one. ``timeout`` bounds the whole
request, body included. Structured output is asked in each server's own form
(:mod:`.structured`); an endpoint that refuses it is stepped down once per job
(json_schema → json_object with the schema → plain text read by the tolerant parser).
An unparseable answer is never asked again unchanged: the model gets its answer back with a
correction, once. Every message is stripped of the API key (:func:`labeler.redact.redact`).

Usage::

    judge = OpenAIJudge("gpt-4o-mini")                     # key from OPENAI_API_KEY
    judge = OpenAIJudge("qwen2.5:7b", base_url="http://localhost:11434/v1")
    verdict = await judge.judge("what is a qrel", "A qrel is a relevance judgement.")
    body = judge.request_body("what is a qrel", "A qrel is …")     # the exact request
    verdict = judge.parse_response(answer_dict)                    # a chat.completion body
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from typing import Any, Literal

import openai

from labeler.errors import ConfigError, EndpointError, JudgeError
from labeler.judges.prompts import Prompt, load_prompt
from labeler.fmt import clean_text
from labeler.redact import endpoint_name, redact
from labeler.judges.base import RetryableError, Verdict, cache_key
from labeler.judges.http_errors import NoAnswer, cause_of, convert_error, fatal_error, pair_specific
from labeler.judges.parse import (
    billed,
    checked_expected_grade,
    parse_answer,
    read_completion,
    tokens_of,
    usage_known_of,
)
from labeler.judges.structured import (
    MODES,
    SCHEMA_HINT,
    SERVERS,
    Mode,
    judgement_schema,
    retry_after_seconds,
    server_kind,
    structured_fields,
)

__all__ = ["MODES", "Mode", "NoAnswer", "OpenAIJudge", "judgement_schema", "retry_after_seconds"]

DEFAULT_AZURE_API_VERSION = "2024-10-21"
DEFAULT_MAX_TOKENS = 200
DEFAULT_MAX_WAIT = 600.0
SAMPLING_TEMPERATURE = 0.7
TOP_LOGPROBS = 4
_REFUSAL_STATUS = (400, 422, 500, 501)
_CHAT_PATH = "/chat/completions"
CORRECTION = ("Your answer could not be used ({reason}). Reply with only a JSON object "
              'such as {{"grade": 2, "rationale": "one short sentence"}}, where grade is 0, '
              "1, 2 or 3.")


class OpenAIJudge:
    """An LLM judge over the OpenAI chat-completions API (see module docstring).

    ``max_wait``: the longest ``Retry-After`` honoured (seconds); a longer one fails that
    attempt at once. ``server``: ``auto`` (found from the endpoint) or one of
    ``openai``, ``vllm``, ``llamacpp``, ``ollama`` (its own structured-output form).
    """

    cacheable = True
    offline = False

    def __init__(self, model: str, *, base_url: str | None = None,
                 prompt: str | Prompt = "default",
                 temperature: float | None = None, samples: int = 1,
                 max_tokens: int = DEFAULT_MAX_TOKENS, logprobs: bool = False,
                 timeout: float = 60.0, seed: int | None = None, azure: bool | None = None,
                 api_version: str | None = None, structured: Mode | Literal["auto"] = "auto",
                 api_key: str | None = None, max_wait: float = DEFAULT_MAX_WAIT,
                 server: str = "auto", key_env: str | None = None,
                 needs_key: bool = True) -> None:
        if samples < 1:
            raise ConfigError(f"`samples` must be at least 1, got {samples}", setting="samples")
        if max_tokens < 1:
            raise ConfigError(f"`max_tokens` must be at least 1, got {max_tokens}",
                              setting="max_tokens")
        if not timeout > 0:
            raise ConfigError(f"`timeout` must be positive, got {timeout}", setting="timeout")
        if not max_wait >= 0:
            raise ConfigError(f"`max_wait` must be 0 or more, got {max_wait}",
                              setting="max_wait")
        if structured != "auto" and structured not in MODES:
            raise ConfigError(f"unknown structured-output mode {structured!r}; use auto, "
                              + ", ".join(MODES), setting="structured")
        if server != "auto" and server not in SERVERS:
            raise ConfigError(f"unknown server kind {server!r}; use auto, " + ", ".join(SERVERS),
                              setting="server")
        self.model = model
        self.prompt = load_prompt(prompt)
        self.prompt_id = self.prompt.id
        self.samples = samples
        self.temperature = (temperature if temperature is not None
                            else (SAMPLING_TEMPERATURE if samples > 1 else 0.0))
        self.max_tokens = max_tokens
        self.logprobs = logprobs
        self.timeout = float(timeout)
        self.max_wait = float(max_wait)
        self.seed = seed
        self.api_version = api_version or os.environ.get("OPENAI_API_VERSION")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.azure = bool(azure) if azure is not None else bool(
            api_version or (not base_url and os.environ.get("AZURE_OPENAI_ENDPOINT")))
        if self.azure:
            base_url = base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
            if not base_url:
                raise ConfigError("Azure OpenAI needs an endpoint: set `base_url` to "
                                  "https://RESOURCE.openai.azure.com or set AZURE_OPENAI_ENDPOINT")
            api_key = (api_key or os.environ.get("AZURE_OPENAI_API_KEY")
                       or os.environ.get("OPENAI_API_KEY"))
            if not api_key:
                raise ConfigError("Azure OpenAI needs a key: set AZURE_OPENAI_API_KEY")
        elif not base_url and not api_key and needs_key:
            raise ConfigError(f"no API key: set {key_env or 'OPENAI_API_KEY'} to use {model!r} "
                              "on api.openai.com, "
                              "or set `base_url` for a local server, or `model` lexical for "
                              "the offline baseline")
        self.base_url = base_url
        self._api_key = api_key
        self.key_env = key_env
        """The variable the key was read from (named when the endpoint rejects it)."""
        self.server = server if server != "auto" else server_kind(None, base_url)
        self._server_known = server != "auto"
        self.calls = 0
        self.reported: Counter[tuple[str | None, str | None]] = Counter()
        """``(model, system_fingerprint)`` as the endpoint's answers reported them, counted
        (None where an answer gave none): who really answered."""
        self._fingerprint: tuple[str, str] | None = None
        self._mode: Mode = "json_schema" if structured == "auto" else structured
        self._mode_known = structured != "auto"
        self._mode_lock: asyncio.Lock | None = None
        self._stopped: EndpointError | None = None
        self._tokens_param = "max_tokens"
        self._client: openai.AsyncOpenAI | None = None

    # ------------------------------------------------------------------ interface

    @property
    def mode(self) -> Mode:
        """The structured-output mode in use (``json_schema``, ``json_object`` or ``text``)."""
        return self._mode

    @property
    def where(self) -> str:
        """The endpoint, for messages, records and the cache key: the base URL (its user and
        password and any key in its query masked: they do not change the answer, nor does
        what the environment holds) or api.openai.com."""
        return endpoint_name(self.base_url or "https://api.openai.com/v1").rstrip("/")

    @property
    def _response_format(self) -> dict[str, Any]:
        return structured_fields("json_schema", self.server)["response_format"]

    def sampling(self, sample: int = 0) -> dict[str, Any]:
        """The sampling parameters sent with every request (part of the cache key)."""
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.seed is not None:
            params["seed"] = self.seed + sample
        if self.logprobs:
            params.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        return params

    @property
    def fingerprint(self) -> str:
        """Hash of the judge's fixed settings: endpoint, model, prompt text and id, sampling."""
        settings = {"v": 2, "endpoint": self.where, "model": self.model,
                    "prompt_id": self.prompt_id, "sampling": self.sampling(0)}
        memo = repr(settings)
        if self._fingerprint is None or self._fingerprint[0] != memo:
            self._fingerprint = (memo, cache_key({**settings, "prompt": self.prompt.text}))
        return self._fingerprint[1]

    def cache_material(self, query: str, chunk: str, sample: int = 0) -> dict[str, Any]:
        return {"judge": self.fingerprint, "messages": self.prompt.render(query, chunk),
                "sample": sample if self.samples > 1 else 0}

    def estimate_tokens(self, query: str, chunk: str) -> int:
        return (len(self.prompt.text) + len(query) + len(chunk)) // 4 + self.max_tokens

    def request_body(self, query: str, chunk: str, sample: int = 0, *,
                     mode: Mode | None = None) -> dict[str, Any]:
        """The chat.completions request body for one vote, in ``mode`` (default: the current
        one) — exactly what :meth:`judge` sends."""
        return self._body(mode or self._mode, self.prompt.render(query, chunk), sample)

    def parse_response(self, body: Any) -> Verdict:
        """A verdict from a chat.completion body (a dict); a ``JudgeError`` carrying the
        billed tokens when the body or the answer is unusable."""
        done = read_completion(body)
        tokens = (done.input_tokens, done.output_tokens)
        if not done.text.strip():
            raise billed(JudgeError(f"empty answer from the model (finish_reason="
                                    f"{done.finish_reason})", retryable=True), *tokens,
                         usage_known=done.usage_known)
        try:
            judgement = parse_answer(done.text)
            eg = checked_expected_grade(done.logprobs) if self.logprobs and done.logprobs else None
        except JudgeError as exc:
            raise billed(exc, *tokens, usage_known=done.usage_known) from None
        return Verdict(grade=int(judgement.grade), rationale=clean_text(judgement.rationale),
                       input_tokens=tokens[0], output_tokens=tokens[1], expected_grade=eg,
                       raw=done.text, usage_known=done.usage_known)

    async def judge(self, query: str, chunk: str, sample: int = 0) -> Verdict:
        if self._stopped is not None:  # the endpoint already refused the job: ask no more
            raise self._stopped
        messages = self.prompt.render(query, chunk)
        try:
            body = await self._complete(messages, sample)
            try:
                return self.parse_response(body)
            except RetryableError:
                raise
            except JudgeError as exc:  # an unusable answer: ask once more, differently
                return await self._correct(messages, sample, exc)
        except EndpointError as exc:
            self._stopped = exc
            raise

    async def _correct(self, messages: list[dict[str, Any]], sample: int,
                       first: JudgeError) -> Verdict:
        """One more call with the bad answer and a correction (never the same request)."""
        in1, out1 = tokens_of(first)
        known1 = usage_known_of(first)   # the first answer's tokens count in either outcome
        fixed = [*messages, {"role": "assistant", "content": (first.last_answer or "")[:1000]},
                 {"role": "user", "content": CORRECTION.format(reason=first.message[:200])}]
        try:
            verdict = self.parse_response(await self._complete(fixed, sample))
        except JudgeError as exc:
            in2, out2 = tokens_of(exc)
            known = known1 and usage_known_of(exc)
            if isinstance(exc, RetryableError):
                raise billed(exc, in1 + in2, out1 + out2, known) from None
            # At temperature 0 the same request gives the same answer: do not ask again.
            again = JudgeError(f"{exc.message} (also after a correction; first answer: "
                               f"{first.message})", retryable=self.temperature > 0,
                               last_answer=exc.last_answer)
            raise billed(again, in1 + in2, out1 + out2, known) from None
        return Verdict(grade=verdict.grade, rationale=verdict.rationale,
                       input_tokens=verdict.input_tokens + in1,
                       output_tokens=verdict.output_tokens + out1,
                       expected_grade=verdict.expected_grade, raw=verdict.raw,
                       usage_known=known1 and verdict.usage_known)

    async def preflight(self) -> None:
        """One cheap call with a short timeout: unreachable endpoint or bad key → EndpointError.
        Also finds the server kind from the model listing (for its structured-output form)."""
        client = self._get_client().with_options(timeout=min(self.timeout, 10.0))
        try:
            listing = await asyncio.wait_for(client.models.list(), min(self.timeout, 10.0))
            self._learn_server(listing)
            return
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise self._fatal(exc) from None
        except (openai.APITimeoutError, asyncio.TimeoutError, ValueError, TypeError,
                AttributeError):
            pass  # slow to list models, or an odd listing: try a chat call below
        except openai.APIConnectionError as exc:
            why = cause_of(exc, self._api_key)
            raise EndpointError(f"cannot reach the endpoint {self.where} ({why}); "
                                "check `base_url` and that the server is running") from None
        try:  # no /models (404/405…) or slow: a 1-token chat call
            self.calls += 1
            chat: Any = client.chat.completions  # a free-form model name and messages
            await asyncio.wait_for(chat.create(
                model=self.model, messages=[{"role": "user", "content": "Say 0."}],
                **{self._tokens_param: 1}), min(self.timeout, 10.0))
        except (openai.APITimeoutError, asyncio.TimeoutError):
            raise EndpointError(f"the endpoint {self.where} did not answer within "
                                f"{min(self.timeout, 10.0):g}s") from None
        except openai.APIConnectionError as exc:
            why = cause_of(exc, self._api_key)
            raise EndpointError(f"cannot reach the endpoint {self.where} ({why})") from None
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403, 404):
                raise self._fatal(exc) from None
            # 400 (e.g. max_tokens=1 refused), 429, 5xx: the endpoint is there and answers
        except (ValueError, TypeError):
            pass  # it answered, if oddly: the judging calls will tell more

    async def aclose(self) -> None:
        self._mode_lock = None  # asyncio locks belong to one event loop
        self._stopped = None
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    # ------------------------------------------------------------------ batch files

    def verdict_from_body(self, body: Any) -> Verdict:
        """The verdict in a chat-completion body (a batch output line's ``response.body``),
        read exactly as an online answer (:meth:`parse_response`); a ``JudgeError`` carrying
        the billed tokens when unusable (retryable when the body itself is malformed)."""
        return self.parse_response(body)

    def step_down(self) -> bool:
        """After a refusal of the structured-output mode: use the next lower one for the rest
        of the job. False when already at plain text."""
        if self._mode == "text":
            return False
        self._mode, self._mode_known = MODES[MODES.index(self._mode) + 1], True
        return True

    def use_mode(self, mode: Mode) -> None:
        """Fix the structured-output mode (a resumed batch job keeps the mode it found)."""
        if mode not in MODES:
            raise ConfigError(f"unknown structured-output mode {mode!r}")
        self._mode, self._mode_known = mode, True

    # ------------------------------------------------------------------ requests

    def _learn_server(self, listing: Any) -> None:
        if self._server_known:
            return
        data = getattr(listing, "data", None) or []
        owners = [getattr(m, "owned_by", None) for m in data
                  if getattr(m, "id", None) == self.model] or \
            [getattr(m, "owned_by", None) for m in data[:1]]
        self.server = server_kind(owners[0] if owners else None, self.base_url)
        self._server_known = True

    def _get_client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            if self.azure:
                endpoint = self.base_url or ""  # never empty: checked in __init__
                key = self._api_key
                version = self.api_version or DEFAULT_AZURE_API_VERSION
                options: dict[str, Any] = {
                    "api_key": key, "api_version": version, "max_retries": 0,
                    "timeout": self.timeout,
                    ("base_url" if "/openai/" in endpoint else "azure_endpoint"): endpoint}
                self._client = openai.AsyncAzureOpenAI(**options)
            else:
                self._client = openai.AsyncOpenAI(
                    base_url=self.base_url,
                    api_key=self._api_key or "not-needed",
                    max_retries=0, timeout=self.timeout)
        return self._client

    async def _complete(self, messages: list[dict[str, Any]], sample: int) -> Any:
        """One chat completion body (a dict); while the structured mode is unknown, calls go
        one at a time so that a refusal is detected (and stepped down from) once per job."""
        if not self._mode_known:
            if self._mode_lock is None:
                self._mode_lock = asyncio.Lock()
            async with self._mode_lock:
                if self._stopped is not None:
                    raise self._stopped
                if not self._mode_known:
                    return await self._probe(messages, sample)
        try:
            return await self._request(self._mode, messages, sample)
        except openai.OpenAIError as exc:
            raise self._convert(exc) from None

    async def _probe(self, messages: list[dict[str, Any]], sample: int) -> Any:
        """Find the structured-output mode the endpoint accepts, starting from the current one.

        A 400/422 to a structured request steps down one mode, unless it concerns this pair
        only (content filter, context length). A 5xx steps down only if the same request one
        mode lower is answered (else it is a server error, retried later).
        """
        mode = self._mode
        while True:
            try:
                response = await self._request(mode, messages, sample)
            except openai.APIStatusError as exc:
                if (mode == "text" or exc.status_code not in _REFUSAL_STATUS
                        or pair_specific(exc)):
                    raise self._convert(exc) from None
                lower = MODES[MODES.index(mode) + 1]
                if exc.status_code < 500:
                    mode = self._mode = lower
                    continue
                try:
                    response = await self._request(lower, messages, sample)
                except openai.APIStatusError as exc2:
                    if exc2.status_code >= 500 or pair_specific(exc2):
                        raise self._convert(exc2 if exc2.status_code < 500 else exc) from None
                    if exc2.status_code in _REFUSAL_STATUS and lower != "text":
                        mode = self._mode = MODES[MODES.index(lower) + 1]
                        continue
                    raise self._convert(exc2) from None
                except openai.OpenAIError as exc2:
                    raise self._convert(exc2) from None
                mode = lower
            except openai.OpenAIError as exc:
                raise self._convert(exc) from None
            self._mode, self._mode_known = mode, True
            return response

    def _body(self, mode: Mode, messages: list[dict[str, Any]], sample: int) -> dict[str, Any]:
        params = self.sampling(sample)
        params[self._tokens_param] = params.pop("max_tokens")
        if mode != "json_schema":
            messages = _with_hint(messages, SCHEMA_HINT) if mode == "json_object" else messages
        return {"model": self.model, "messages": messages, **params,
                **structured_fields(mode, self.server)}

    async def _request(self, mode: Mode, messages: list[dict[str, Any]], sample: int) -> Any:
        """Send one request; the decoded JSON body of a 2xx answer (any shape). The plain JSON
        body goes through the client's ``post`` (URL, headers, key, timeout and errors as in
        ``chat.completions.create``, without its typed-parameter transform: ~0.5 ms of CPU
        per request, the client's limit at high concurrency); the answer is decoded once."""
        body = self._body(mode, messages, sample)
        self.calls += 1
        try:
            text = await _deadline(self._get_client().post(
                _CHAT_PATH, body=body, cast_to=str, options={"security": {"bearer_auth": True}}),
                self.timeout)
        except asyncio.TimeoutError:
            raise NoAnswer(f"timed out after {self.timeout:g}s (`timeout` bounds the whole "
                           "request)") from None
        except openai.BadRequestError as exc:
            # Newer OpenAI models take max_completion_tokens instead of max_tokens: switch once.
            if self._tokens_param == "max_tokens" and "max_completion_tokens" in str(exc):
                self._tokens_param = "max_completion_tokens"
                return await self._request(mode, messages, sample)
            raise
        try:
            decoded = json.loads(text)
        except ValueError:
            raise RetryableError("malformed response from the endpoint (the body is not "
                                 f"JSON: {redact(text[:80], self._api_key)!r})") from None
        self._note_identity(decoded)
        return decoded

    def _note_identity(self, body: Any) -> None:
        """Count the ``model`` and ``system_fingerprint`` an answer reports."""
        if not isinstance(body, dict):
            return

        def text(value: Any) -> str | None:
            if not isinstance(value, str):
                return None
            return redact(clean_text(value), self._api_key)[:200] or None

        self.reported[(text(body.get("model")), text(body.get("system_fingerprint")))] += 1

    # ------------------------------------------------------------------ errors

    def _convert(self, exc: BaseException) -> Exception:
        """An openai exception as what the stage acts on: retry, fail the pair, stop the job."""
        return convert_error(exc, where=self.where, model=self.model, timeout=self.timeout,
                             max_wait=self.max_wait, key=self._api_key, key_env=self.key_env)

    def _fatal(self, exc: openai.APIStatusError) -> EndpointError:
        return fatal_error(exc, where=self.where, model=self.model, key=self._api_key,
                           key_env=self.key_env)


async def _deadline(call: Any, seconds: float) -> Any:
    """Await ``call`` for at most ``seconds`` in all (asyncio.TimeoutError past it)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await call
    return await asyncio.wait_for(call, seconds)


class JsonObject(dict[str, Any]):
    """A JSON object also read by attribute, a missing key reading None (as ``_verdict`` reads
    a client response). ``json.loads(text, object_hook=JsonObject)`` builds them directly."""

    def __getattr__(self, name: str) -> Any:
        return self.get(name)


def _with_hint(messages: list[dict[str, Any]], hint: str) -> list[dict[str, Any]]:
    """A copy of ``messages`` with ``hint`` appended to the first user message."""
    out = [dict(m) for m in messages]
    for m in out:
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            m["content"] = m["content"] + hint
            return out
    return [*out, {"role": "user", "content": hint.strip()}]
