"""The CLI shell: every command listed, and a closed pipe is not an error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from labeler.cli import main


def test_help_lists_every_command() -> None:
    out = CliRunner().invoke(main, ["--help"]).output
    for name in ("label", "reconcile", "sample", "score", "compare", "run", "demo"):
        assert f"  {name} " in out


def test_output_piped_into_head_exits_quietly(tmp_path: Path) -> None:
    # enough per-query output (> a pipe buffer) that the pipe closes while we still write
    qrels = tmp_path / "h.qrels"
    run = tmp_path / "r.run"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(6000)))
    run.write_text("".join(f"q{i} Q0 d{i} 1 1.0 sys\n" for i in range(6000)))
    for fmt in ("--per-query", "--json"):  # a rich table, and JSON through click.echo
        cmd = f"{sys.executable} -m labeler score --qrels {qrels} --run {run} {fmt} | head -c 9"
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True,
                              text=True, timeout=120)
        assert len(proc.stdout) == 9
        assert proc.stderr == ""  # no "unexpected error", no traceback
        assert proc.returncode in (0, 1)  # 1 is click's and rich's quiet exit on a closed pipe
