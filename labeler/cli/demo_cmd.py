"""`labeler demo`: the whole pipeline on the bundled sample, offline, in seconds.

Usage::

    labeler demo
    labeler demo --model gpt-4o-mini     # with OPENAI_API_KEY set
"""

from __future__ import annotations

from pathlib import Path

import click

from labeler.cli import main
from labeler.cli.run_cmd import LEVELS, finish, shown, stderr_logging


@main.command("demo", epilog="""\
\b
Examples:
  labeler demo
  labeler demo --model gpt-4o-mini     # with OPENAI_API_KEY set
""")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("labeler-demo"), show_default=True,
              help="Where to write the sample, demo.toml and the run.")
@click.option("--model", default="lexical", show_default=True, metavar="NAME",
              help="Judge model; the default is the offline lexical baseline (no network). "
                   "Any other model needs an endpoint: --base-url or OPENAI_BASE_URL, key "
                   "from OPENAI_API_KEY.")
@click.option("--base-url", default=None, metavar="URL",
              help="OpenAI-compatible endpoint for --model.")
@click.option("--log-level", type=click.Choice(LEVELS), default="warning",
              show_default=True, help="Log level on stderr.")
@click.pass_context
def demo_command(ctx: click.Context, out_dir: Path, model: str, base_url: str | None,
                 log_level: str) -> None:
    """Run the whole pipeline on the bundled TREC DL 2019 sample, offline, in seconds.

    Pools the top 20 of three runs, labels the pairs (lexical baseline judge unless --model),
    reconciles with the NIST human labels, scores and compares, and writes the report.
    """
    from labeler.demo import run_demo
    from labeler.io.guard import check_outputs

    check_outputs({}, dirs={"--out": out_dir})
    with stderr_logging(log_level):
        outcome = run_demo(out_dir, model=model, base_url=base_url, progress=None)
    click.echo(f"sample and config: {shown(out_dir / 'data')}, {shown(out_dir / 'demo.toml')}")
    finish(ctx, outcome, fail_on_drift=False)
