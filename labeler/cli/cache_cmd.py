"""`labeler cache migrate DIR --trust`: convert an old (pickled) verdict cache to JSON.

Old versions of labeler stored cached answers as pickles, which run code when loaded: a
directory someone else could write (a shared CI cache, a copied folder) is not safe to load.
labeler no longer loads them (they are asked again); this command converts them once, in
place, for a directory whose every writer you trust.

Usage::

    labeler cache migrate ~/.cache/labeler --trust
"""

from __future__ import annotations

from pathlib import Path

import click

from labeler.errors import ConfigError
from labeler.cli import main


@main.group("cache", epilog="""\
\b
Examples:
  labeler cache migrate ~/.cache/labeler --trust
""")
def cache_group() -> None:
    """Manage the verdict cache."""


@cache_group.command("migrate", epilog="""\
\b
Examples:
  # an old cache that only you (or your CI) ever wrote
  labeler cache migrate ~/.cache/labeler --trust
""")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--trust", is_flag=True,
              help="Confirm that you trust every writer of DIRECTORY: converting loads its "
                   "old pickled entries, and a pickle can run code.")
def migrate_command(directory: Path, trust: bool) -> None:
    """Convert a cache written by an older labeler (pickled answers) to JSON, in place.

    Loading a pickle runs whatever code it names, so this needs --trust. Entries that are
    not valid answers are deleted. Exit 0 done, 2 not a cache or no --trust.
    """
    if not trust:
        raise ConfigError("converting an old cache loads its pickled entries, which can run "
                          "code: give --trust if you trust every writer of this directory "
                          "(else delete it, or let labeler ask those pairs again)",
                          path=directory)
    from labeler.labelling.cache import migrate

    converted, dropped = migrate(directory)
    click.echo(f"{directory}: {converted} converted to JSON, {dropped} dropped (not valid "
               "answers)")
