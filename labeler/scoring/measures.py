"""Evaluation measures named as ir_measures writes them: ``nDCG@10``, ``P(rel=2)@10``, ``RR``.

A :class:`Measure` is parsed from text (ir_measures names, or trec_eval's ``ndcg_cut.10``,
``P_10``, ``recall.100``, ``recip_rank``, ``map``, ``map_cut.100``) and prints back in the
canonical ir_measures form, which is also its JSON key. Each is declared once, with its
kernel, in :mod:`labeler.scoring.registry`. Per query, each equals trec_eval:

| measure | trec_eval | per query |
| --- | --- | --- |
| ``nDCG@k`` | ``ndcg_cut.k`` | DCG@k / IDCG@k, linear gain, ideal from every judged chunk |
| ``P@k`` | ``P.k`` | relevant in the top k / k |
| ``R@k`` | ``recall.k`` | relevant in the top k / relevant judged (0 when none) |
| ``RR``, ``RR@k`` | ``recip_rank`` | 1 / rank of the first relevant chunk (in the top k) |
| ``AP``, ``AP@k`` | ``map``, ``map_cut.k`` | Σ precision at relevant ranks (≤ k) / relevant |
| ``Judged@k`` | (ir_measures) | judged chunks in the top k / min(k, chunks ranked) |
| ``nDCG`` | ``ndcg`` | nDCG of the whole ranking |
| ``Rprec`` | ``Rprec`` | relevant in the top R / R (R: relevant judged) |
| ``Bpref`` | ``bpref`` | mean over the relevant of 1 − min(non-relevant above, R) / min(N, R) |
| ``Success@k`` | ``success_k`` | 1 when a relevant chunk is in the top k, else 0 |

"Relevant" means a grade ≥ ``rel`` (default 1, trec_eval's ``-l 1``).

Usage::

    from labeler.scoring.measures import parse_measure
    m = parse_measure("P(rel=2)@10")
    str(m), m.trec_name          # 'P(rel=2)@10', 'P(rel=2)@10'
    parse_measure("ndcg_cut.10") # nDCG@10
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from labeler.errors import ConfigError
from labeler.scoring.registry import MEASURES, MeasureDef

__all__ = ["MEASURE_NAMES", "Measure", "parse_measure", "parse_measures"]

MEASURE_NAMES: tuple[str, ...] = tuple(MEASURES)
_NEEDS_CUTOFF = {n for n, d in MEASURES.items() if d.cutoff == "required"}
_NO_CUTOFF = {n for n, d in MEASURES.items() if d.cutoff == "none"}
_HAS_REL = {n for n, d in MEASURES.items() if d.rel}
_ALIASES = {alias: n for n, d in MEASURES.items() for alias in d.aliases}
_TREC = {n: d.trec_cut for n, d in MEASURES.items() if d.trec_cut}
_TREC_UNCUT = {n: d.trec_uncut for n, d in MEASURES.items() if d.trec_uncut}
_PATTERN = re.compile(r"^(?P<name>[A-Za-z_]+?)(?:\((?P<params>[^)]*)\))?"
                      r"(?:(?:@|\.|_)(?P<cut>[+-]?\d+))?$")


def _forms(d: MeasureDef) -> str:
    return {"required": f"{d.name}@k", "optional": f"{d.name}, {d.name}@k",
            "none": d.name}[d.cutoff]


_HELP = ("use " + ", ".join(_forms(d) for d in MEASURES.values())
         + ", with an optional relevance level for " + ", ".join(
             n for n, d in MEASURES.items() if d.rel) + ", e.g. P(rel=2)@10")


@dataclass(frozen=True)
class Measure:
    """One measure: ``name`` (one of :data:`MEASURE_NAMES`), ``cutoff`` (None = the whole
    ranking) and ``rel`` (the lowest relevant grade, for the binary measures).

    Usage: ``Measure("P", 10, rel=2)`` prints as ``P(rel=2)@10``.
    """

    name: str
    cutoff: int | None = None
    rel: int = 1
    asked: str | None = field(default=None, compare=False, repr=False)
    """The name it was asked by (``ndcg_cut.10``), kept for the output; not part of its
    identity (``ndcg_cut.10`` and ``nDCG@10`` are one measure)."""

    def __post_init__(self) -> None:
        if self.name not in MEASURE_NAMES:
            raise ConfigError(f"unknown measure {self.name!r}: {_HELP}")
        if self.cutoff is not None and (isinstance(self.cutoff, bool) or self.cutoff < 1):
            raise ConfigError(f"the cut-off of {self.name} must be a positive integer, "
                              f"got {self.cutoff!r}")
        if self.cutoff is None and self.name in _NEEDS_CUTOFF:
            raise ConfigError(f"{self.name} needs a cut-off, e.g. {self.name}@10")
        if self.cutoff is not None and self.name in _NO_CUTOFF:
            raise ConfigError(f"{self.name} has no cut-off: write {self.name}")
        if self.rel != 1 and self.name not in _HAS_REL:
            raise ConfigError(f"{self.name} has no relevance level (rel=) parameter")
        if isinstance(self.rel, bool) or self.rel < 1:
            raise ConfigError(f"the relevance level of {self.name} must be 1 or more, "
                              f"got {self.rel!r}")

    def __str__(self) -> str:
        text = self.name + (f"(rel={self.rel})" if self.rel != 1 else "")
        return text + (f"@{self.cutoff}" if self.cutoff is not None else "")

    def __repr__(self) -> str:
        return str(self)

    @property
    def key(self) -> str:
        """The JSON key and the name in every table: the measure as it was asked
        (``ndcg_cut.10`` stays ``ndcg_cut.10``), else its canonical name."""
        return self.asked or str(self)

    @property
    def depth(self) -> int | None:
        """How deep the ranking must be read (None: all of it)."""
        return self.cutoff

    @property
    def trec_name(self) -> str:
        """The name trec_eval prints (``ndcg_cut_10``, ``ndcg``, ``P_10``, ``recall_100``,
        ``recip_rank``, ``map``, ``map_cut_100``, ``Rprec``, ``bpref``, ``success_10``); the
        canonical name where trec_eval has none (a cut RR, Judged, a relevance level other
        than 1)."""
        if self.rel != 1:
            return str(self)
        if self.cutoff is None:
            return _TREC_UNCUT.get(self.name, str(self))
        if self.name in _TREC:
            return _TREC[self.name].format(k=self.cutoff)
        return str(self)


def parse_measure(text: str | Measure) -> Measure:
    """A :class:`Measure` from its name; a bad name is a ConfigError saying what is known.

    Usage: ``parse_measure("AP@100")``, ``parse_measure("recall.100")`` → ``R@100``.
    """
    if isinstance(text, Measure):
        return text
    raw = str(text).strip()
    if raw.lower() in _ALIASES and "-" in raw:   # r-prec: no cut-off to split off
        raw = _ALIASES[raw.lower()]
    match = _PATTERN.match(raw.replace(" ", ""))
    if not match:
        raise ConfigError(f"cannot read the measure {raw!r}: {_HELP}")
    name = _ALIASES.get(match["name"].lower(), match["name"])
    if name not in MEASURE_NAMES:
        raise ConfigError(f"unknown measure {raw!r}: {_HELP}")
    rel = 1
    for param in filter(None, (match["params"] or "").split(",")):
        key, sep, value = param.partition("=")
        if key != "rel" or not sep or not re.fullmatch(r"[+-]?\d+", value):
            raise ConfigError(f"cannot read the parameter {param!r} of {raw!r}: "
                              "the only parameter is rel=<integer>, e.g. P(rel=2)@10")
        rel = int(value)
    cutoff = int(match["cut"]) if match["cut"] is not None else None
    return Measure(name, cutoff, rel, asked=raw)


def parse_measures(texts: Iterable[str | Measure]) -> list[Measure]:
    """Several measures, each once, in the order given.

    Usage: ``parse_measures(["nDCG@10", "P@10", "ndcg_cut.10"])`` → ``[nDCG@10, P@10]``.
    """
    out: list[Measure] = []
    for text in texts:
        measure = parse_measure(text)
        if measure not in out:
            out.append(measure)
    return out
