"""`labeler demo`: the whole pipeline on the packaged TREC DL 2019 sample, offline.

The demo is an ordinary ``labeler run``: it copies the sample (``labeler._data``) to
``OUT/data/``, writes ``OUT/demo.toml`` pointing at it, and runs that config — so the demo and
a scheduled job share one code path, and the config is a starting point for your own. A
``demo.toml`` you edited is kept and run as it is (its first line records a checksum of the
text the demo wrote; a file that no longer matches it was edited).

The sample's runs rank passages NIST never judged for the query, below rank 10: pooled at
depth 20, the LLM judges them and the merged labels fill those holes in the human labels.

Usage::

    from labeler.demo import run_demo
    outcome = run_demo("labeler-demo")          # lexical judge, no network
    outcome.report_html
"""

from __future__ import annotations

import hashlib
import json
import logging
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from labeler.pipeline.config import load_config
from labeler.io import atomic_path, write_text
from labeler.pipeline.nightly import RunOutcome, run_pipeline

__all__ = ["DEMO_DEPTH", "copy_sample", "run_demo", "write_demo_config"]

log = logging.getLogger(__name__)

DEMO_DEPTH = 20
_MARK = "# labeler demo config, checksum "
_SAMPLE_SUFFIXES = (".tsv", ".jsonl", ".qrels", ".run", ".md")


def _sample_files(root: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    out: list[tuple[str, Traversable]] = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.is_dir() and not entry.name.startswith(("_", ".")):
            out += _sample_files(entry, f"{prefix}{entry.name}/")
        elif entry.is_file() and entry.name.endswith(_SAMPLE_SUFFIXES):
            out.append((prefix + entry.name, entry))
    return out


def copy_sample(dest: str | Path) -> Path:
    """Copy the packaged sample (queries, corpus, human qrels, runs, README) to ``dest``."""
    dest = Path(dest)
    for rel, entry in _sample_files(files("labeler._data")):
        data = entry.read_bytes()
        target = dest / rel
        if target.is_file() and target.read_bytes() == data:
            continue
        with atomic_path(target) as tmp:
            tmp.write_bytes(data)
    return dest


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _checksum(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _edited(path: Path) -> bool:
    """Whether ``path`` exists and is not the text the demo wrote (its checksum line)."""
    if not path.is_file():
        return False
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    return not (first.startswith(_MARK) and first[len(_MARK):].strip() == _checksum(rest))


def write_demo_config(out_dir: str | Path, *, model: str = "lexical",
                      base_url: str | None = None) -> Path:
    """Copy the sample to ``out_dir/data`` and write ``out_dir/demo.toml`` (unless you
    edited it: then it is kept as it is); returns its path."""
    out = Path(out_dir)
    copy_sample(out / "data")
    target = out / "demo.toml"
    if _edited(target):
        log.warning("%s was edited: running it as it is (delete it to get the demo's own "
                    "config back)", target)
        return target
    judge = [f"model = {_toml_str(model)}"]
    if base_url:
        judge.append(f"base_url = {_toml_str(base_url)}")
    text = f"""\
# labeler demo: the whole pipeline on the TREC DL 2019 sample (data/README.md).
# Paths are relative to this file. Edit it (labeler demo then keeps your edits) and run:
#   labeler run {_toml_str(str(out / "demo.toml"))}
title = "labeler demo: TREC DL 2019 sample, human vs LLM labels"
out_dir = "."
cache_dir = "cache"
k = [20, 10]

[inputs]
queries = "data/queries.tsv"
corpus = "data/corpus.jsonl"
runs = ["data/runs/*.run"]
depth = {DEMO_DEPTH}

[judge]
{chr(10).join(judge)}

[human]
qrels = "data/human.qrels"
bootstrap = 200
"""
    return write_text(f"{_MARK}{_checksum(text)}\n{text}", target)


def run_demo(out_dir: str | Path = "labeler-demo", *, model: str = "lexical",
             base_url: str | None = None, progress: Any = None) -> RunOutcome:
    """Run the demo into ``out_dir`` (a new dated run each time; ``out_dir/latest`` points
    at it)."""
    path = write_demo_config(out_dir, model=model, base_url=base_url)
    return run_pipeline(load_config(path), config_path=path, progress=progress)
