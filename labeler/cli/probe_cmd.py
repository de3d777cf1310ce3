"""`labeler probe`: can the judge be fooled by keyword stuffing or an injected instruction?

Usage::

    labeler probe --model gpt-4o-mini
    labeler probe --model qwen2.5:7b --base-url http://localhost:11434/v1 --n 40 --json
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from labeler.cli import main
from labeler.cli.options import deprecated_alias, echo_result, judge_options, judge_settings


@main.command("probe", epilog="""\
\b
Examples:
  labeler probe --model lexical
  labeler probe --model qwen2.5:7b --base-url http://localhost:11434/v1
""")
@judge_options(exclude=("examples", "shots"))
@click.option("--n", "n_pairs", type=click.IntRange(min=1, max=100), default=20,
              show_default=True, metavar="N",
              help="How many real pairs of the bundled sample to probe (a count, as in "
                   "`sample --n`).")
@deprecated_alias("--pairs", "n_pairs", "--n", type=click.IntRange(min=1, max=100))
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Which pairs of the sample (chosen deterministically from the seed).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Cache directory [env LABELER_CACHE_DIR; default ~/.cache/labeler].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def probe_cmd(n_pairs: int, seed: int, cache_dir: Path | None, no_cache: bool, as_json: bool,
              **options: Any) -> None:
    """Judge real sample pairs and adversarial twins of them (query words stuffed in, a note
    asking for grade 3, a fake JSON answer); report how often and how much grades rise."""
    from labeler.io.guard import check_outputs
    from labeler.labelling.probe import probe

    check_outputs({}, dirs={"--cache-dir": cache_dir})
    result = probe(n=n_pairs, seed=seed, cache_dir=cache_dir, no_cache=no_cache,
                   **judge_settings(options))
    echo_result(result, as_json)
    failed = sum(a["failed"] for a in result.attacks.values())
    if failed:
        click.echo(f"labeler: {failed} twin(s) could not be judged (left out of the figures)",
                   err=True)
