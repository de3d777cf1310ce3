"""The judge's settings, declared once: defaults, bounds and help for every option.

:class:`JudgeConfig` is what ``label()`` takes, what ``[judge]`` in a ``labeler run`` config
holds, and where the ``labeler label`` flags come from (``max_tokens`` → ``--max-tokens``;
its description is the flag's help). A new judge option is one new field here.

The API key is never a setting: ``api_key_env`` names the environment variable that holds it,
and ``label()`` also takes the key itself (``api_key=``), passed to the client and nowhere else.

Usage::

    from labeler.settings import JudgeConfig
    judge = JudgeConfig(model="gpt-4o-mini", samples=3, rpm=500)
    judge.model_copy(update={"prompt": "umbrela-style"})
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)

from labeler.errors import ConfigError
from labeler.redact import redact

__all__ = ["BootstrapConfig", "JudgeConfig", "Structured", "judge_config"]

Structured = Literal["auto", "json_schema", "json_object", "text"]
Server = Literal["auto", "openai", "vllm", "llamacpp", "ollama"]
Engine = Literal["local", "ray"]
_URLS = ("base_url", "ray_address")


def _cli(**extra: Any) -> dict[str, Any]:
    """Extra metadata for the derived CLI flag (``envvar``: the variable it falls back to)."""
    return {"cli": extra}


class JudgeConfig(BaseModel):
    """The LLM judge. ``model = "lexical"`` is the offline baseline (no endpoint, no key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description=(
        "Model name (the deployment on Azure); 'lexical' = offline baseline judge."))
    base_url: str | None = Field(default=None, description=(
        "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 [env OPENAI_BASE_URL]. "
        "The key comes from OPENAI_API_KEY (or the variable named by --api-key-env)."),
        json_schema_extra=_cli(envvar="OPENAI_BASE_URL"))
    api_key_env: str = Field(default="OPENAI_API_KEY", description=(
        "The NAME of the environment variable that holds the API key (never the key)."))
    azure: bool | None = Field(default=None, description=(
        "Azure OpenAI (endpoint from --base-url or AZURE_OPENAI_ENDPOINT, key from "
        "AZURE_OPENAI_API_KEY); default: Azure when an API version is set."))
    api_version: str | None = Field(default=None, description=(
        "Azure OpenAI API version [env OPENAI_API_VERSION]."))
    prompt: str = Field(default="default", min_length=1, description=(
        "A built-in prompt name or a template file."))
    concurrency: int = Field(default=8, gt=0, description="Requests in flight at once.")
    rpm: float | None = Field(default=None, gt=0, description=(
        "Client-side limit: requests per minute."))
    tpm: float | None = Field(default=None, gt=0, description=(
        "Client-side limit: tokens per minute (estimated before, corrected after)."))
    max_retries: int = Field(default=5, ge=0, description=(
        "Retries after the first attempt (429, 5xx, timeouts, unparseable answers)."))
    backoff_base: float = Field(default=1.0, ge=0, description=(
        "Seconds: base of the exponential backoff between retries."))
    backoff_max: float = Field(default=60.0, ge=0, description=(
        "Seconds: longest wait between retries (caps Retry-After too)."))
    timeout: float = Field(default=60.0, gt=0, description=(
        "Seconds per request, the whole answer included (a server that drips its answer "
        "cannot hold a request longer)."))
    max_wait: float = Field(default=600.0, ge=0, description=(
        "Seconds: the longest Retry-After a job waits; a longer one fails that attempt at "
        "once."))
    samples: int = Field(default=1, gt=0, description=(
        "Votes per pair (temperature 0.7 unless --temperature); grade = lower median."))
    temperature: float | None = Field(default=None, ge=0, le=2, description=(
        "Sampling temperature (default 0, or 0.7 with --samples > 1)."))
    max_tokens: int = Field(default=200, gt=0, description=(
        "Upper bound on the tokens of each answer."))
    logprobs: bool = Field(default=False, description=(
        "Ask for top logprobs and store the expected grade over 0-3."))
    structured: Structured = Field(default="auto", description=(
        "Structured output: auto steps down from json_schema when refused."))
    examples: str | None = Field(default=None, description=(
        "Human-labelled pairs with texts (query_id, query, chunk_id, chunk, grade) to show "
        "as few-shot examples in every prompt."))
    shots: int | None = Field(default=None, gt=0, description=(
        "How many --examples each prompt shows (default 4): balanced over grades, never "
        "from the query being judged."))
    batch: bool = Field(default=False, description=(
        "Label through the provider's Batch API (OpenAI, Azure OpenAI): half the price, "
        "results within 24 h; the same command started again resumes the job."))
    batch_wait: float | None = Field(default=None, ge=0, description=(
        "With --batch: seconds to wait for the batches (default: until done); if they are "
        "still running then, print their ids and exit 5 without output."))
    batch_file_out: str | None = Field(default=None, min_length=1, description=(
        "Write the batch input file of the requests not cached yet (for vllm run-batch) "
        "and stop, without calling the endpoint."))
    batch_file_in: str | None = Field(default=None, min_length=1, description=(
        "Finish the job from a batch output file (vllm run-batch -o FILE)."))
    server: Server = Field(default="auto", description=(
        "The server's own structured-output form (llama.cpp: schema in json_object; vLLM: "
        "guided_json; Ollama: format); auto: found from the endpoint."))
    engine: Engine = Field(default="local", description=(
        "Where the requests are made: local (this process) or ray (actors of a Ray cluster, "
        "or of a local Ray started for the job; needs labeler[ray]). Cache, records and "
        "exit status are the same."))
    ray_address: str | None = Field(default=None, min_length=1, description=(
        "With --engine ray: the Ray cluster to join (e.g. ray://head:10001 or auto) [env "
        "RAY_ADDRESS]; default: start a local Ray for the job."))
    ray_actors: int | None = Field(default=None, gt=0, description=(
        "With --engine ray: actors judging at once (default 2); --concurrency, --rpm and "
        "--tpm are for the whole job, split over them."))

    @field_validator("api_key_env")
    @classmethod
    def _not_a_key(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", value):
            raise ValueError("api_key_env is the NAME of an environment variable "
                             "(e.g. OPENAI_API_KEY), never the key itself")
        return value

    @model_validator(mode="after")
    def _one_batch_mode(self) -> JudgeConfig:
        given = [name for name in ("batch", "batch_file_out", "batch_file_in")
                 if getattr(self, name)]
        if len(given) > 1:
            raise ValueError(f"{' and '.join(f'`{n}`' for n in given)} exclude each other: "
                             "`batch` goes through the provider, `batch_file_out` / "
                             "`batch_file_in` through a file")
        if self.batch_wait is not None and not self.batch:
            raise ValueError("`batch_wait` needs `batch`")
        if self.engine == "ray" and given:
            raise ValueError(f"`engine` ray and `{given[0]}` exclude each other: a batch "
                             "job is labelled by the provider or from a file")
        ray_only = [n for n in ("ray_address", "ray_actors") if getattr(self, n) is not None]
        if ray_only and self.engine != "ray":
            raise ValueError(f"`{ray_only[0]}` needs `engine` ray")
        return self

    def __repr_args__(self) -> Any:
        # a notebook shows the config: the base URL's credentials never with it
        for name, value in super().__repr_args__():
            yield name, redact(value) if name in _URLS and isinstance(value, str) else value

    def judge_options(self) -> dict[str, Any]:
        """The settings the judge object itself takes (not the job's: concurrency, limits)."""
        return self.model_dump(include={"base_url", "prompt", "samples", "temperature",
                                        "max_tokens", "logprobs", "timeout", "azure",
                                        "api_version", "structured", "max_wait", "server"})


def judge_config(config: JudgeConfig | None = None, **settings: Any) -> JudgeConfig:
    """``config`` with ``settings`` applied (``None`` values left out), validated.

    Errors name the setting (``samples: Input should be greater than 0``), as a
    :class:`~labeler.errors.ConfigError` whose ``setting`` is that name.

    Usage: ``judge_config(model="gpt-4o-mini", samples=3)``
    """
    given = {k: v for k, v in settings.items() if v is not None}
    unknown = sorted(set(given) - set(JudgeConfig.model_fields))
    if unknown:
        raise ConfigError(f"unknown judge setting(s): {', '.join(unknown)} (known: "
                          f"{', '.join(JudgeConfig.model_fields)})", setting=unknown[0])
    data = {**(config.model_dump(exclude_unset=True) if config is not None else {}), **given}
    try:
        return JudgeConfig(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(p) for p in err["loc"]) or "judge"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"`{name}`: {msg}", setting=name) from None


class BootstrapConfig(BaseModel):
    """The bootstrap of the agreement intervals (``reconcile``, ``judges``, ``compare``, the
    ``[human]`` section of a ``labeler run`` config): declared once, as :class:`JudgeConfig`.

    Usage: ``BootstrapConfig(bootstrap=2000, bootstrap_unit="pair")``
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    bootstrap: int = Field(default=1000, ge=0, description=(
        "Bootstrap resamples for the agreement's 95% intervals (0: none)."))
    bootstrap_unit: Literal["query", "pair"] = Field(default="query", description=(
        "What the bootstrap resamples: whole queries (the pairs of one query are not "
        "independent), or single pairs (narrower intervals that cover the truth less often)."))
