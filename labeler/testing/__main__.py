"""``python -m labeler.testing serve ...``: run the fake server in this process.

Usage::

    python -m labeler.testing serve --port 0 --latency 0.05 --faults '{"rate_limit": 0.1}'
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading

from labeler.testing.app import serve_app
from labeler.testing.behaviour import ANSWER_STYLES, STRUCTURED_MODES, Behaviour, FaultPlan
from labeler.testing.state import ServerState


def serve_forever(args: argparse.Namespace) -> None:
    state = ServerState(Behaviour(
        args.latency, FaultPlan.from_json(args.faults), args.answer_style, args.structured,
        args.seed, None, args.api_key, tuple(args.models.split(",")) if args.models else None,
        args.sample_noise, not args.no_record, args.echo_key, args.revoke_after,
        args.die_after, None if args.no_fingerprint else args.fingerprint, args.reported_model,
        args.shift, args.shift_seed))
    loop = asyncio.new_event_loop()
    runner, port = loop.run_until_complete(serve_app(state, args.host, args.port))
    print(f"http://{args.host}:{port}/v1", flush=True)
    if args.watch_stdin:  # the parent's end closing (or the parent dying) stops the server
        threading.Thread(target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(loop.stop)),
                         daemon=True).start()
    if args.max_seconds:
        loop.call_later(args.max_seconds, loop.stop)
    try:
        loop.run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        loop.run_until_complete(runner.cleanup())
        loop.close()


def main(argv: list[str] | None = None) -> None:
    """``python -m labeler.testing serve ...``: run the fake server in this process."""
    parser = argparse.ArgumentParser(prog="python -m labeler.testing",
                                     description="Fake OpenAI-compatible judge server.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve until stopped; prints the base URL first")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument("--latency", type=float, default=0.0, help="seconds before answering")
    serve.add_argument("--answer-style", choices=ANSWER_STYLES, default="json")
    serve.add_argument("--structured", choices=STRUCTURED_MODES, default="json_schema")
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument("--faults", default="{}", help='FaultPlan as JSON, e.g. {"rate_limit": 0.1}')
    serve.add_argument("--api-key", default=None, help="require this Bearer token (else 401)")
    serve.add_argument("--models", default=None, help="comma-separated known models (else any)")
    serve.add_argument("--sample-noise", type=float, default=0.0)
    serve.add_argument("--no-record", action="store_true", help="do not keep request bodies")
    serve.add_argument("--echo-key", action="store_true", help="a 401 repeats the key it got")
    serve.add_argument("--revoke-after", type=int, default=None,
                       help="refuse the key (401) after this many answers")
    serve.add_argument("--die-after", type=int, default=None,
                       help="drop every connection after this many answers")
    serve.add_argument("--fingerprint", default="fake",
                       help="the system_fingerprint answers report")
    serve.add_argument("--no-fingerprint", action="store_true",
                       help="answers report no system_fingerprint")
    serve.add_argument("--reported-model", default=None,
                       help="the model answers report (default: the one asked for)")
    serve.add_argument("--shift", type=float, default=0.0,
                       help="share of pairs whose grade is changed (a silent judge change)")
    serve.add_argument("--shift-seed", type=int, default=1, help="which pairs --shift changes")
    serve.add_argument("--watch-stdin", action="store_true", help="exit when stdin closes")
    serve.add_argument("--max-seconds", type=float, default=0.0, help="exit after this long")
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        parser.error("the fake server only listens on the loopback interface (127.0.0.1)")
    serve_forever(args)


if __name__ == "__main__":
    main()
