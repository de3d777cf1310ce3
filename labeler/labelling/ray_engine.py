"""The Ray engine of the labelling stage: the votes the cache cannot answer go through a Ray
Data pipeline; the cache, the records and the summary stay on the driver.

The driver looks every vote up in the cache, sends the missing ones (one per distinct cache
key) in small blocks through ``map_batches`` to actors that each run the local engine's own
:class:`~labeler.labelling.job.Job` over their block — the same judge (prompts, parsing,
structured-output step-down), retry policy, ``Retry-After``, rate limits (the job's
``rpm``/``tpm``/``concurrency`` split over the actors) and failure reasons. Results come
back through ``iter_batches`` and are cached and counted as they arrive, so a killed job
loses only the blocks in flight and a re-run asks only for the missing votes; a vote cached
by one engine is a hit for the other. A vote that fails is a ``failed`` record with its
reason; a block whose worker raised keeps its answers and fails the rest with the reason;
a pipeline that breaks stops the job early (exit 3), every pair still recorded.

With no ``ray_address`` (and no ``RAY_ADDRESS``) a local Ray is started for the job, with
enough logical CPUs that the pipeline cannot deadlock on a small machine, and shut down at
the end. The API key reaches the actors in memory (never in a ``runtime_env``, a log or a
file) and is masked in every message.

Usage (internal; see :func:`labeler.labelling.stage.label` with ``engine="ray"``)::

    result = ray_label(pairs_df, judge, JudgeConfig(model="m", engine="ray"), cache=cache)
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict
from typing import Any

import pandas as pd

from labeler.errors import ConfigError, EndpointError
from labeler.judges.base import Verdict
from labeler.labelling.cache import LabelCache
from labeler.labelling.flags import with_flags
from labeler.labelling.job import Job, on_stop_signals
from labeler.labelling.limits import RetryPolicy, cost_usd
from labeler.labelling.result import LabelResult, _check_pairs, _with_extras, run_sync, summarize
from labeler.redact import redact
from labeler.settings import JudgeConfig

__all__ = ["INSTALL_HINT", "ray_label"]

INSTALL_HINT = "pip install 'labeler[ray]'"
DEFAULT_ACTORS = 2
ACTOR_CPUS = 0.25
"""Logical CPUs each actor asks for: judging is waiting on HTTP, not computing."""
OBJECT_STORE_BYTES = 256 * 2**20
"""The object store of a local Ray started for the job (blocks of texts and results)."""
DRAIN_S = 3.0
"""After the job stops early (key refused, endpoint gone), how long blocks already judged
are still taken in; the actors, stopped too, return the rest at once, unasked."""
_LOCAL_SYSTEM = {"enable_worker_prestart": False, "prestart_worker_first_driver": False}
"""A local Ray starts no idle workers ahead (each costs ~1 s of CPU): only the actors run."""
CONNECT_S = 20.0
"""Seconds to reach a ``ray_address`` before giving up (Ray itself waits minutes)."""
_DEFAULT_PORTS = {"ray": 10001, "": 6379}
_QUIET = ("ray", "ray.data", "ray._private", "ray.train", "ray.tune")


class _Secret:
    """The API key on its way to the actors: pickled with them, never shown by ``repr``."""

    __slots__ = ("value",)

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "_Secret([redacted])"


# --------------------------------------------------------------------------- the actors

class _BlockJob(Job):
    """The local engine's job over one block: vote ``r`` of the block is slot
    ``r * samples + sample`` (only those slots are asked), without a cache."""

    def __init__(self, rows: pd.DataFrame, judge: Any, policy: Any, slots: list[int]) -> None:
        super().__init__(rows, judge, None, policy, None, None, False)
        self._slots = slots

    def _todo(self) -> Iterator[int]:
        return iter(self._slots)

    def _catch_signals(self) -> Callable[[], None]:
        return lambda: None  # the driver handles SIGINT/SIGTERM for the whole job


async def _no_preflight() -> None:
    """The driver checked the endpoint once before the pipeline started."""


class JudgeActor:
    """A Ray Data callable class: judges the votes of a block with labeler's own job.

    Rows in: ``slot``, ``query``, ``chunk``, ``sample``. Rows out: ``slot``, ``verdict``
    (JSON, empty when failed), ``error``, ``attempts``, ``tokens_in``/``tokens_out`` (every
    billed attempt), ``latency_s``, and per block (on its first row) ``calls``, ``stop``,
    ``stop_exit``.
    """

    def __init__(self, judge: Any, secret: _Secret, policy: Any, concurrency: int,
                 rpm: float | None, tpm: float | None) -> None:
        import asyncio

        from labeler.labelling.limits import RateLimiter

        if secret.value is not None and hasattr(judge, "_api_key"):
            judge._api_key = secret.value
        setattr(judge, "preflight", _no_preflight)  # noqa: B010  (an instance's own no-op)
        self.judge, self.policy, self.concurrency = judge, policy, concurrency
        self.rpm = RateLimiter(rpm) if rpm else None
        self.tpm = RateLimiter(tpm) if tpm else None
        self.loop = asyncio.new_event_loop()  # one loop: the client's connections are kept
        self.stopped: tuple[str, int] | None = None  # once stopped, later blocks are not asked

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        return self.loop.run_until_complete(self._block(batch))

    async def _block(self, batch: pd.DataFrame) -> pd.DataFrame:
        if self.stopped is not None:
            return _unasked(batch, *self.stopped)
        samples = max(1, int(self.judge.samples))
        rows = pd.DataFrame({"query_id": "", "chunk_id": "",
                             "query": batch["query"].astype(str).tolist(),
                             "chunk": batch["chunk"].astype(str).tolist()})
        local = [r * samples + int(s) for r, s in enumerate(batch["sample"].tolist())]
        job = _BlockJob(rows, self.judge, self.policy, local)
        job.rpm, job.tpm = self.rpm, self.tpm  # the actor's share, over all its blocks
        calls = self.judge.calls
        crash = ""
        try:
            await job.run(self.concurrency)
        except EndpointError:
            pass  # refused from the first call: job.stopped says so
        except Exception as exc:  # a bug must not lose the block's answers
            crash = redact(f"internal error in a Ray worker: {type(exc).__name__}: {exc}",
                           getattr(self.judge, "_api_key", None))
        out = []
        for slot, ls in zip(batch["slot"].tolist(), local):
            verdict = job.verdicts[ls]
            error = job.errors.get(ls, "") if verdict is None else ""
            if verdict is None and not error and job.stopped is None:
                error = crash or "not judged (the Ray worker did not get to it)"
            out.append({"slot": int(slot),
                        "verdict": json.dumps(asdict(verdict)) if verdict is not None else "",
                        "error": error, "attempts": job.attempts[ls],
                        "tokens_in": job.tokens_in[ls], "tokens_out": job.tokens_out[ls],
                        "latency_s": float(job.latency[ls]), "calls": 0, "stop": "",
                        "stop_exit": 0})
        if out:
            out[0]["calls"] = self.judge.calls - calls
            if job.stopped is not None:
                out[0]["stop"], out[0]["stop_exit"] = job.stopped.message, job.stop_exit
                self.stopped = (job.stopped.message, job.stop_exit)
        return pd.DataFrame(out, columns=_OUT_COLUMNS).astype(_OUT_TYPES)


def _unasked(batch: pd.DataFrame, stop: str, stop_exit: int) -> pd.DataFrame:
    """A block not asked because the job stopped: no answers, the reason on its first row."""
    n = len(batch)
    return pd.DataFrame({"slot": batch["slot"].astype("int64").tolist(), "verdict": [""] * n,
                         "error": [""] * n, "attempts": [0] * n, "tokens_in": [0] * n,
                         "tokens_out": [0] * n, "latency_s": [0.0] * n, "calls": [0] * n,
                         "stop": [stop] + [""] * (n - 1),
                         "stop_exit": [stop_exit] + [0] * (n - 1)},
                        columns=_OUT_COLUMNS).astype(_OUT_TYPES)


_OUT_TYPES = {"slot": "int64", "verdict": "object", "error": "object", "attempts": "int64",
              "tokens_in": "int64", "tokens_out": "int64", "latency_s": "float64",
              "calls": "int64", "stop": "object", "stop_exit": "int64"}
_OUT_COLUMNS = list(_OUT_TYPES)


# --------------------------------------------------------------------------- the driver

def ray_label(pairs: pd.DataFrame, judge: Any, cfg: JudgeConfig, *,
              cache: LabelCache | None = None, retry: Any = None,
              prices: Mapping[str, tuple[float, float]] | None = None,
              progress: bool | None = None) -> LabelResult:
    """Label ``pairs`` through Ray Data (see module docstring); a
    :class:`~labeler.labelling.result.LabelResult` exactly as the local engine's.

    Usage::

        ray_label(df, judge, JudgeConfig(model="m", engine="ray", ray_actors=4), cache=cache)
    """
    _import_ray()  # exit 2 with the install hint before any work
    start = time.monotonic()
    df = _check_pairs(pairs)
    calls_before = judge.calls
    policy = retry or RetryPolicy(cfg.max_retries, cfg.backoff_base, cfg.backoff_max)
    job = Job(df, judge, cache if judge.cacheable else None, policy, None, None, progress)
    try:
        todo = job._lookup_cache()
        if todo:
            run_sync(lambda: _preflight(judge))  # a bad key or endpoint: exit 2 at once
            _run_pipeline(job, todo, cfg, policy)
    finally:
        job.bar.close()
    if job.stopped is not None and job.stop_exit == 2 and not job.answered:
        raise job.stopped  # refused from the first call: a configuration error
    records = with_flags(job.records(), df)
    summary = summarize(records, judge, job,
                        cost_usd(judge.model, job.input_tokens, job.output_tokens, prices),
                        start, calls_before)
    return LabelResult(records=_with_extras(records, df), summary=summary)


async def _preflight(judge: Any) -> None:
    try:
        await judge.preflight()
    finally:
        await judge.aclose()


def _run_pipeline(job: Job, todo: list[int], cfg: JudgeConfig, policy: Any) -> None:
    """Send the votes ``todo`` through Ray Data and fill ``job`` as blocks come back."""
    first: dict[str, int] = {}  # cache key → the slot asked for it
    twins: dict[int, list[int]] = {}  # that slot → identical votes filled from its answer
    for slot in todo:
        key = job.keys.get(slot) or f"slot-{slot}"
        if key in first:
            twins.setdefault(first[key], []).append(slot)
        else:
            first[key] = slot
    asked = list(first.values())
    actors = max(1, min(cfg.ray_actors or DEFAULT_ACTORS, cfg.concurrency, len(asked)))
    per_actor = max(1, math.ceil(cfg.concurrency / actors))
    block = min(128, max(8, 8 * per_actor))
    secret = _Secret(getattr(job.judge, "_api_key", None))
    with _ray_session(cfg, actors) as ray:   # ray.data is imported with it
        # from_items builds the blocks here (from_pandas would start a task per block)
        ds = ray.data.from_items(_rows(job, asked),
                                 override_num_blocks=math.ceil(len(asked) / block))
        ds = _map(ray, ds, local=not (cfg.ray_address or os.environ.get("RAY_ADDRESS")),
                  actors=actors, kwargs={
                      "judge": _shippable(job.judge), "secret": secret, "policy": policy,
                      "concurrency": per_actor,
                      "rpm": cfg.rpm / actors if cfg.rpm else None,
                      "tpm": cfg.tpm / actors if cfg.tpm else None})
        batches = iter(ds.iter_batches(batch_size=None, batch_format="pandas",
                                       prefetch_batches=1))
        restore = _catch_signals(job)
        try:
            stopped_at: float | None = None
            for out in batches:  # after a stop, the blocks already done are still kept
                if _apply(job, out, twins) and stopped_at is None:
                    stopped_at = time.monotonic()
                if stopped_at is not None and time.monotonic() - stopped_at > DRAIN_S:
                    break
        except _Interrupt:
            pass  # job.interrupt() has recorded why; the blocks not back are not judged
        except Exception as exc:  # the pipeline itself broke: every pair still gets a record
            why = redact(f"{type(exc).__name__}: {exc}", secret.value).splitlines()
            job._stop(EndpointError(f"the Ray pipeline failed ({why[0] if why else ''}); "
                                    "re-run the same command to ask only the pairs missing"),
                      3)
        finally:
            restore()
            close = getattr(batches, "close", None)
            if close is not None:  # a generator left early: its executor stops now, not
                with contextlib.suppress(Exception):  # when Ray is already shut down
                    close()


class _Interrupt(BaseException):
    """Raised by the driver's signal handler to leave a wait for the next block."""


def _catch_signals(job: Job) -> Callable[[], None]:
    """While blocks come back (main thread only): SIGINT or SIGTERM stops the job as the local
    engine's does — what came back is kept, every other pair is recorded ``failed``,
    interrupted (exit 130 / 143); a second signal stops at once. Returns the restorer."""
    from labeler.errors import Interrupted

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        if job.interrupted:
            raise Interrupted(signum)
        job.interrupt(signum)
        raise _Interrupt

    return on_stop_signals(handler)


def _map(ray: Any, ds: Any, *, local: bool, actors: int, kwargs: dict[str, Any]) -> Any:
    """``ds.map_batches`` over a pool of ``actors`` :class:`JudgeActor`. On a local Ray the
    actors are not restarted (they die only with the machine; Ray would also print a note
    about restarting them on the terminal); on a cluster, Ray Data's own restarts apply."""
    import warnings

    options: dict[str, Any] = {"batch_size": None, "batch_format": "pandas",
                               "compute": ray.data.ActorPoolStrategy(size=actors),
                               "num_cpus": ACTOR_CPUS, "fn_constructor_kwargs": kwargs}
    if local:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # remote args given by name are deprecated
            with contextlib.suppress(TypeError):  # a Ray that no longer takes them
                return ds.map_batches(JudgeActor, **options, max_restarts=0)
    return ds.map_batches(JudgeActor, **options)


def _rows(job: Job, slots: list[int]) -> list[dict[str, Any]]:
    samples = job.samples
    return [{"slot": s, "query": job.queries[s // samples], "chunk": job.chunks[s // samples],
             "sample": s % samples} for s in slots]


def _apply(job: Job, out: pd.DataFrame, twins: dict[int, list[int]]) -> bool:
    """Fill the job from one block of results; True when the block says to stop the job."""
    judge = job.judge
    judge.calls += int(out["calls"].sum())
    stop = False
    for row in out.itertuples(index=False):
        slot = int(row.slot)
        job.attempts[slot] = int(row.attempts)
        job.latency[slot] = float(row.latency_s)
        job._bill(slot, int(row.tokens_in), int(row.tokens_out))
        if row.stop and int(row.stop_exit):
            job._stop(EndpointError(str(row.stop)), int(row.stop_exit))
            stop = True
        if row.verdict:
            verdict = Verdict(**json.loads(row.verdict))
            job.verdicts[slot] = verdict
            job.answered += 1
            job.no_usage += not verdict.usage_known
            job._remember(slot, verdict)
            job.bar.advance(tokens=verdict.input_tokens + verdict.output_tokens)
            for twin in twins.get(slot, ()):
                job.verdicts[twin], job.cached[twin] = verdict, 1
                job.bar.advance(cached=True)
        elif row.error:
            for failed in (slot, *twins.get(slot, ())):
                job.errors[failed] = str(row.error)
                job.bar.advance(failed=True)
    return stop


def _shippable(judge: Any) -> Any:
    """A copy of the judge for the actors: its settings and what the preflight learned,
    without its client, its locks or its key (the key travels apart, masked)."""
    twin = copy.copy(judge)
    for name, empty in (("_client", None), ("_mode_lock", None), ("_stopped", None),
                        ("_api_key", None)):
        if hasattr(twin, name):
            setattr(twin, name, empty)
    return twin


# --------------------------------------------------------------------------- Ray itself

def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # the extra installs ray[data]
    except ImportError:
        raise ConfigError("--engine ray needs Ray, which is not installed: "
                          f"{INSTALL_HINT}", setting="engine") from None
    return ray


@contextlib.contextmanager
def _ray_session(cfg: JudgeConfig, actors: int) -> Iterator[Any]:
    """Ray, joined at ``cfg.ray_address`` (else ``RAY_ADDRESS``) or started locally for the
    job and shut down after it; a Ray already initialised in this process is used as is."""
    ray = _import_ray()
    address = cfg.ray_address or os.environ.get("RAY_ADDRESS") or None
    if address and not ray.is_initialized():
        reach(address)
    started = False
    on_term = signal.getsignal(signal.SIGTERM)  # ray.init sets its own (exit through finally)
    quiet = {name: logging.getLogger(name).level for name in _QUIET}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no call home, no network
            options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
            if address:
                options["address"] = address
            else:
                # "local": a new Ray for this job, even where `ray start` left one running
                options.update(address="local", num_cpus=max(4, actors + 2),
                               include_dashboard=False,
                               object_store_memory=OBJECT_STORE_BYTES,
                               _system_config=_LOCAL_SYSTEM)
            try:
                ray.init(**options)
            except Exception as exc:
                where = f"the Ray cluster at {address}" if address else "a local Ray"
                raise ConfigError(f"cannot start or join {where} ({type(exc).__name__}: "
                                  f"{redact(str(exc))})",
                                  setting="ray_address" if address else "engine") from None
            started = True
        _tune_data(ray)
        yield ray
    finally:
        if started:
            with contextlib.suppress(Exception):
                ray.shutdown()
            if threading.current_thread() is threading.main_thread() and on_term is not None:
                signal.signal(signal.SIGTERM, on_term)
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)


def reach(address: str, deadline: float | None = None) -> None:
    """Refuse fast, with a clear error, a ``ray_address`` that cannot be joined: a ``ray://``
    address without Ray's client installed, or a host and port that take no TCP connection
    within ``deadline`` seconds (default :data:`CONNECT_S`). ``auto`` and ``local`` are left
    to Ray."""
    from urllib.parse import urlsplit

    scheme, _, rest = address.rpartition("://")
    if address in ("auto", "local") or scheme not in ("", "ray"):
        return
    if scheme == "ray":
        try:
            import grpc  # noqa: F401 - what ray[client] adds
        except ImportError:
            raise ConfigError(f"`ray_address` {redact(address)}: a ray:// address needs "
                              "Ray's client: pip install 'ray[client]' (labeler[ray] "
                              "installs it)", setting="ray_address") from None
    try:
        parts = urlsplit("//" + rest)
        host, port = parts.hostname, parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        host, port = None, 0
    if not host:
        raise ConfigError(f"`ray_address` {redact(address)} is not host:port, ray://host:port "
                          "or auto", setting="ray_address")
    wait = CONNECT_S if deadline is None else deadline
    try:
        socket.create_connection((host, port), timeout=wait).close()
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ConfigError(f"cannot reach the Ray cluster at {redact(address)} within {wait:g} s "
                          f"({why}); check `ray_address` and that the cluster is up",
                          setting="ray_address") from None


def _tune_data(ray: Any) -> None:
    """Ray Data for this job: no progress bars or stats on the terminal, blocks in any order."""
    ctx = ray.data.DataContext.get_current()
    for name, value in (("enable_progress_bars", False), ("print_on_execution_start", False),
                        ("enable_operator_progress_bars", False),
                        ("verbose_stats_logs", False)):
        if hasattr(ctx, name):
            setattr(ctx, name, value)
    ctx.execution_options.preserve_order = False
    if hasattr(ctx.execution_options, "verbose_progress"):
        ctx.execution_options.verbose_progress = False
