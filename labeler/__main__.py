"""``python -m labeler`` runs the CLI."""

from labeler.cli import run

run()
