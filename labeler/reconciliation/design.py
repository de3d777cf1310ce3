"""A random sample of queries that can grow: one seeded permutation, drawn from the front.

``labeler sample --unit query`` puts the queries left to draw in one random order (from the
seed; its first n are the n queries the command has always drawn) and takes the first n;
``design.json``, written next to the sheet, keeps the seed, that order and how far it has
been drawn. ``labeler sample --more M`` takes the next M of the same order: the queries drawn
so far, together, are still a simple random sample, and none is drawn twice.

Usage::

    from labeler.reconciliation.design import draw_queries, more_queries, read_design
    first = draw_queries("labels.jsonl", n=10, seed=0)       # first.pairs, first.design
    write_design(first.design, "sheets/design.json")
    more = more_queries("labels.jsonl", read_design("sheets/design.json"), m=15)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labeler.errors import ConfigError, InputError
from labeler.reconciliation.agreement import (KEYS, LabelsLike, PairsLike, QrelsLike, add_texts,
                                              read_human, read_llm)

DESIGN_FILE = "design.json"
"""The design's file name, next to the first sheet."""


class Draw(BaseModel):
    """One draw: how many queries, and the sheet they went to."""

    model_config = ConfigDict(extra="forbid")
    n: int = Field(ge=1)
    sheet: str | None = None


class QueryDesign(BaseModel):
    """A simple random sample of queries drawn from the front of one seeded permutation.

    ``permutation``: every query that could be drawn, in the random order of ``seed``;
    ``drawn``: how many from its front have been drawn; ``excluded``: queries that had human
    labels before the first draw (not in the permutation); ``labels``: the label records the
    queries came from (as given, relative to the design's folder when it can be); ``texts``:
    where the first draw's query and chunk texts came from (``{"pairs": path}`` or
    ``{"queries": path, "corpus": path}``, the same way; ``labeler sample --more`` reuses
    them unless given others); ``draws``:
    each draw's size and sheet; ``queries_drawn``: the front of the permutation drawn so far
    (written for people to read; checked against ``drawn`` when read).
    """

    model_config = ConfigDict(extra="forbid")
    kind: str = "simple random sample of queries"
    version: int = 1
    seed: int = Field(ge=0)
    drawn: int = Field(ge=0)
    queries_drawn: list[str] = []
    permutation: list[str]
    excluded: list[str] = []
    labels: str | None = None
    texts: dict[str, str] = {}
    draws: list[Draw] = []

    @model_validator(mode="after")
    def _consistent(self) -> QueryDesign:
        if self.drawn > len(self.permutation):
            raise ValueError(f"drawn is {self.drawn} but the permutation has only "
                             f"{len(self.permutation)} queries")
        if len(set(self.permutation)) != len(self.permutation):
            raise ValueError("the permutation names a query twice")
        if self.queries_drawn and self.queries_drawn != self.permutation[:self.drawn]:
            raise ValueError("queries_drawn is not the front of the permutation")
        return self

    @property
    def queries(self) -> list[str]:
        """The queries drawn so far, in the order drawn."""
        return self.permutation[:self.drawn]

    @property
    def left(self) -> int:
        """How many queries are left to draw."""
        return len(self.permutation) - self.drawn


@dataclass(frozen=True)
class QuerySample:
    """A draw: ``pairs`` (every pooled pair of the new queries: ``query_id, chunk_id,
    llm_grade`` + texts) and the ``design`` after it (:class:`QueryDesign`); ``sheet`` and
    ``design_file``: where they were written, if they were."""

    pairs: pd.DataFrame
    design: QueryDesign
    sheet: Path | None = None
    design_file: Path | None = None

    @property
    def new_queries(self) -> list[str]:
        """The queries this draw added."""
        return self.design.permutation[self.design.drawn - self.design.draws[-1].n:
                                       self.design.drawn]


def query_permutation(queries: Sequence[str], seed: int, first: int) -> list[str]:
    """The candidate ``queries`` (sorted first) in one random order from ``seed``: the
    ``first`` that ``Generator.choice(N, first, replace=False)`` picks (the queries
    ``labeler sample --unit query --n first`` has always drawn), then the others shuffled by
    the same generator. Every order is equally likely, so any front of it is a simple random
    sample.

    Usage: ``query_permutation(["q1", "q2", "q3"], seed=0, first=2)``
    """
    ordered = sorted(set(queries))
    if not ordered:
        return []
    rng = np.random.default_rng(seed)
    head = rng.choice(len(ordered), size=min(int(first), len(ordered)), replace=False)
    taken = np.zeros(len(ordered), dtype=bool)
    taken[head] = True
    rest = np.flatnonzero(~taken)
    order = np.concatenate([head, rest[rng.permutation(len(rest))]])
    return [ordered[i] for i in order]


def _pairs_of(df: pd.DataFrame, picked: set[str], pairs: PairsLike | None) -> pd.DataFrame:
    out = df.loc[df["query_id"].isin(picked)].rename(columns={"grade": "llm_grade"})
    texts = [c for c in ("query", "chunk") if c in out.columns]
    out = add_texts(out[[*KEYS, "llm_grade", *texts]], pairs)
    extra = [c for c in ("query", "chunk") if c in out.columns]
    out = out.sort_values(KEYS, kind="stable")
    return out[[*KEYS, "llm_grade", *extra]].reset_index(drop=True)


def _check_count(n: object, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(f"the number of {what} must be at least 1, got {n!r}")
    return int(n)


def draw_queries(labels: LabelsLike, *, n: int, seed: int = 0,
                 exclude: QrelsLike | None = None, pairs: PairsLike | None = None,
                 labels_path: str | None = None,
                 texts_paths: dict[str, str] | None = None) -> QuerySample:
    """The first ``n`` queries of the seeded permutation of the labelled queries (those of
    ``exclude``, already judged by humans, left out), every pooled pair of them, and the
    design to extend the sample with :func:`more_queries`. ``labels_path`` and
    ``texts_paths`` (``{"pairs": path}`` or ``{"queries": .., "corpus": ..}``) are recorded
    in the design for ``labeler sample --more``.

    Usage: ``draw_queries("labels.jsonl", n=10, seed=0).pairs``
    """
    n = _check_count(n, "queries")
    df = read_llm(labels)
    queries = sorted(set(df["query_id"]))
    excluded: list[str] = []
    if exclude is not None:
        done = set(read_human(exclude)["query_id"])
        excluded = [q for q in queries if q in done]
        queries = [q for q in queries if q not in done]
    if len(queries) < n:
        raise ConfigError(f"asked for {n} queries but only {len(queries)} of the labelled "
                          f"queries are left to draw from"
                          + (" (the others already have human labels)" if exclude is not None
                             else ""))
    order = query_permutation(queries, seed, n)
    design = QueryDesign(seed=int(seed), permutation=order, drawn=n, queries_drawn=order[:n],
                         excluded=excluded,
                         labels=labels_path, texts=dict(texts_paths or {}),
                         draws=[Draw(n=n)])
    return QuerySample(_pairs_of(df, set(order[:n]), pairs), design)


def more_queries(labels: LabelsLike, design: QueryDesign, *, m: int,
                 pairs: PairsLike | None = None, human: QrelsLike | None = None,
                 source: str | os.PathLike[str] = DESIGN_FILE) -> QuerySample:
    """The next ``m`` queries of ``design``'s permutation and every pooled pair of them; the
    returned design has them drawn. ``labels`` must hold the queries the design was drawn
    from (its permutation and excluded queries, no other), and its permutation must be the
    one its seed gives; ``human`` (optional) may cover no query the design has not drawn.
    Raises :class:`~labeler.errors.ConfigError` when the permutation has fewer than ``m``
    queries left, :class:`~labeler.errors.InputError` when the design and inputs disagree.

    Usage: ``more_queries("labels.jsonl", read_design("design.json"), m=15).pairs``
    """
    m = _check_count(m, "more queries")
    df = read_llm(labels)
    have = set(df["query_id"])
    known = set(design.permutation) | set(design.excluded)
    if have != known:
        extra, missing = sorted(have - known), sorted(known - have)
        parts = []
        if extra:
            parts.append(f"the label records have {len(extra)} queries it does not "
                         f"({_some(extra)})")
        if missing:
            parts.append(f"it has {len(missing)} queries the label records do not "
                         f"({_some(missing)})")
        what = "; ".join(parts)
        raise InputError(f"the design does not match the label records: {what}. Give the "
                         f"label records the sample was first drawn from", path=source)
    first = design.draws[0].n if design.draws else design.drawn
    if query_permutation(design.permutation, design.seed, first) != design.permutation:
        raise InputError("the design's permutation is not the one its seed gives (edited, or "
                         "made by another version?); draw a new sample instead", path=source)
    if human is not None:
        ahead = sorted(set(read_human(human)["query_id"]) & set(design.permutation[
            design.drawn:]))
        if ahead:
            raise InputError(f"the human labels cover {len(ahead)} queries the design has not "
                             f"drawn yet ({_some(ahead)}): the labelled queries would no "
                             f"longer be a random sample", path=source)
    if design.left == 0:
        raise ConfigError(f"every one of the design's {len(design.permutation)} queries has "
                          f"been drawn already; there is nothing more to draw")
    if m > design.left:
        raise ConfigError(f"asked for {m} more queries but only {design.left} of the "
                          f"design's {len(design.permutation)} are left to draw")
    new = design.permutation[design.drawn:design.drawn + m]
    after = design.model_copy(update={"drawn": design.drawn + m,
                                      "queries_drawn": design.permutation[:design.drawn + m],
                                      "draws": [*design.draws, Draw(n=m)]})
    return QuerySample(_pairs_of(df, set(new), pairs), after)


def from_design(path: str, base: Path) -> str | Path:
    """A path a design records: relative to its folder ``base``, absolute, or
    ``irds:<id>`` (as it is)."""
    if path.startswith("irds:"):
        return path
    return Path(path) if Path(path).is_absolute() else base / path


def next_sheet(design_file: Path, first: str | None, k: int) -> Path:
    """``to_annotate-<k>.csv`` next to the design, named after the first sheet
    (``to_annotate.csv``) — its name only: a design naming ``../x`` or an absolute path
    never sends the new sheet out of the design's folder."""
    name = Path(first).name if first else ""
    base = design_file.parent / (name if name not in ("", ".", "..") else "to_annotate.csv")
    return base.with_name(f"{base.stem}-{k}{base.suffix}")


def relative_name(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when inside it, else absolute (a draw's sheet)."""
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def _some(ids: Sequence[str], k: int = 3) -> str:
    shown = ", ".join(ids[:k])
    return shown + (f", … {len(ids) - k} more" if len(ids) > k else "")


def read_design(path: str | os.PathLike[str]) -> QueryDesign:
    """Read ``design.json``, or the design next to a sheet (``path`` a sheet file).

    Usage: ``read_design("to_annotate.csv").queries``
    """
    p = design_path(path)
    if not p.is_file():
        raise InputError(f"no sample design here (looked for {p.name} next to the sheet; "
                         f"draw the first sample with `labeler sample --unit query`)", path=p)
    try:
        return QueryDesign.model_validate(json.loads(p.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a valid JSON file ({exc})", path=p) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "the top level"
        raise InputError(f"not a sample design: {where}: {first['msg']}", path=p) from None


def design_path(path: str | os.PathLike[str]) -> Path:
    """``path`` itself when it is a ``.json`` file, else the design next to it (a sheet)."""
    p = Path(path)
    return p if p.suffix.lower() == ".json" else p.parent / DESIGN_FILE


def write_design(design: QueryDesign, path: str | os.PathLike[str]) -> Path:
    """Write the design as indented JSON, atomically."""
    from labeler import io

    full = design.model_copy(update={"queries_drawn": design.queries})
    return io.write_json(full.model_dump(mode="json"), path)
