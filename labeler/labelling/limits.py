"""Limits of a labelling job: the retry policy, client-side rate limits, and prices.

Usage::

    policy = RetryPolicy(max_retries=5, backoff_base=1.0, backoff_max=60.0)
    async for attempt in policy.retrying():
        with attempt:
            verdict = await judge.judge(query, chunk)

    rpm = RateLimiter(per_minute=500); await rpm.acquire()
    cost_usd("gpt-4o-mini", 1_000_000, 10_000)      # → 0.156 (built-in estimate)
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
)
from tenacity.wait import wait_random_exponential

from labeler.errors import ConfigError, JudgeError
from labeler.judges.base import LEXICAL_MODEL

# USD per 1M (input, output) tokens. Estimates from public list prices; override with
# --prices FILE.json ({"model": {"input": 0.15, "output": 0.6}}). Dated snapshots
# ("gpt-4o-mini-2024-07-18") use the longest matching name.
PRICES: dict[str, tuple[float, float]] = {
    LEXICAL_MODEL: (0.0, 0.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
    "gpt-3.5-turbo": (0.50, 1.50),
}


# --------------------------------------------------------------------------- retry

def is_retryable(exc: BaseException) -> bool:
    """Whether a judge's error is worth another try (a timeout, a 429, a 5xx ...).

    Usage: ``retry=retry_if_exception(is_retryable)``
    """
    return isinstance(exc, JudgeError) and exc.retryable


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter; ``Retry-After`` honoured, capped at
    ``backoff_max``. ``max_retries`` attempts after the first. (A ``Retry-After`` longer than
    the job may wait never gets here: the judge fails that attempt at once.)"""

    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ConfigError(f"`max_retries` must be 0 or more, got {self.max_retries}",
                              setting="max_retries")
        for name in ("backoff_base", "backoff_max"):
            if getattr(self, name) < 0:
                raise ConfigError(f"`{name}` must be 0 or more seconds, got "
                                  f"{getattr(self, name)}", setting=name)

    def wait(self, state: RetryCallState) -> float:
        """Seconds before the next attempt."""
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        if after is not None and after >= 0:
            return min(float(after) * (1.0 + 0.1 * random.random()), self.backoff_max)
        return wait_random_exponential(multiplier=self.backoff_base, max=self.backoff_max)(state)

    def retrying(self) -> AsyncRetrying:
        """A fresh tenacity controller for one pair (re-raises the last error)."""
        return AsyncRetrying(stop=stop_after_attempt(self.max_retries + 1), wait=self.wait,
                             retry=retry_if_exception(is_retryable), reraise=True)


# --------------------------------------------------------------------------- rates

class RateLimiter:
    """An async token bucket refilled at ``per_minute / 60`` per second (one second of burst).

    A request larger than the bucket waits for a full bucket and leaves it in debt, so the
    long-run rate holds for any request size. :meth:`adjust` corrects an estimate afterwards.
    ``clock`` and ``sleep`` are the time it runs on (``time.monotonic``, ``asyncio.sleep``;
    a test passes a virtual clock and waits for nothing).
    """

    def __init__(self, per_minute: float, burst_s: float = 1.0, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        if per_minute <= 0:
            raise ConfigError(f"rate limits must be positive, got {per_minute}")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.tokens = self.capacity
        self._clock, self._sleep = clock, sleep
        self._stamp = clock()
        self._lock: asyncio.Lock | None = None

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self, n: float = 1.0) -> None:
        """Wait until ``n`` tokens may be spent, then spend them."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # first come, first served
            need = min(n, self.capacity)
            self._refill()
            while self.tokens < need:
                await self._sleep((need - self.tokens) / self.rate)
                self._refill()
            self.tokens -= n

    def adjust(self, delta: float) -> None:
        """Spend ``delta`` more tokens (negative: give some back) once the true cost is known."""
        self._refill()
        self.tokens = min(self.capacity, self.tokens - delta)


# --------------------------------------------------------------------------- prices

class Price(BaseModel):
    """USD per 1M tokens for one model: the same check for ``--prices`` and a config's
    ``[prices]`` table (non-negative, finite; ``batch_*`` through the Batch API)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    batch_input: float | None = Field(default=None, ge=0,
                                      description="through the Batch API (else input / 2)")
    batch_output: float | None = Field(default=None, ge=0,
                                       description="through the Batch API (else output / 2)")


def read_price_table(path: str | os.PathLike[str]) -> dict[str, Price]:
    """Read and check a ``--prices`` JSON file: ``{"model": {"input": x, "output": y}}``
    (or ``[x, y]``), USD per 1M tokens; exit-2 :class:`ConfigError` naming the model."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the price table ({exc})", path=p) from None
    if not isinstance(raw, Mapping):
        raise ConfigError('the price table must be a JSON object {"model": {"input": x, '
                          '"output": y}} in USD per 1M tokens', path=p)
    out: dict[str, Price] = {}
    for model, spec in raw.items():
        if isinstance(spec, (list, tuple)) and len(spec) == 2:
            spec = {"input": spec[0], "output": spec[1]}
        try:
            out[str(model)] = Price.model_validate(spec)
        except ValidationError as exc:
            why = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                            for e in exc.errors())
            raise ConfigError(f'bad price for {model!r} ({why}): use {{"input": x, '
                              '"output": y}} in USD per 1M tokens, 0 or more', path=p) from None
    return out


def load_prices(path: str | Path) -> dict[str, tuple[float, float]]:
    """Read ``{"model": {"input": usd_per_1m, "output": usd_per_1m}}`` (or ``[in, out]``)."""
    return {m: (p.input, p.output) for m, p in read_price_table(path).items()}


def price_of(model: str, prices: Mapping[str, tuple[float, float]] | None = None
             ) -> tuple[float, float] | None:
    """USD per 1M (input, output) tokens for ``model`` (longest matching name), or None."""
    table = {**PRICES, **(prices or {})}
    if model in table:
        return table[model]
    matches = [name for name in table if model.startswith(name + "-")]
    return table[max(matches, key=len)] if matches else None


def cost_usd(model: str, input_tokens: int, output_tokens: int,
             prices: Mapping[str, tuple[float, float]] | None = None) -> float | None:
    """Estimated cost in USD, or None when the model has no known price."""
    price = price_of(model, prices)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1e6
