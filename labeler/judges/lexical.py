"""The offline baseline judge: lexical overlap of query terms in the chunk, mapped to 0–3.

No LLM, no network, deterministic. Both texts are lower-cased, split on letters/digits, a
small stopword list is dropped and a light suffix stemmer applied. Then

    overlap = 0.75 × coverage + 0.25 × phrase

where ``coverage`` is the share of the distinct query terms found in the chunk and ``phrase``
the share of the query's adjacent term pairs found adjacent in the chunk. Grades:
``overlap < 0.35 → 0``, ``< 0.55 → 1``, ``< 0.70 → 2``, else ``3`` (``THRESHOLDS``; chosen
for quadratic kappa on TREC DL 2019 passages, where the overlap's Spearman correlation with
the NIST grades is about 0.34). A floor, not a judge: it cannot tell "mentions" from "answers".

Usage::

    from labeler.judges.lexical import LexicalJudge
    LexicalJudge().judge_text("what is bm25", "BM25 is a ranking function ...").grade
    LexicalJudge().grade_frame(pairs_df)     # query_id, chunk_id, grade, rationale
"""

from __future__ import annotations

import re
from itertools import pairwise
from dataclasses import dataclass
from typing import Any

import pandas as pd

from labeler.errors import ConfigError
from labeler.io._base import require_columns
from labeler.schema import PAIR_COLUMNS
from labeler.schema import Judgement
from labeler.judges.base import LEXICAL_MODEL, Verdict

THRESHOLDS: tuple[float, float, float] = (0.35, 0.55, 0.70)
"""Lower bounds of the overlap for grades 1, 2 and 3."""
COVERAGE_WEIGHT = 0.75

STOPWORDS = frozenset("""
a about an and are as at be been but by can could did do does for from had has have how i if
in into is it its me my of on or our so than that the their them then there these they this
to was we were what when where which who whom whose why will with would you your
define definition meaning mean means
""".split())  # noqa: SIM905
"""Function words, plus the 'define X' / 'X meaning' phrasing of search queries."""

_TOKEN = re.compile(r"[a-z0-9]+")
_SUFFIXES = (("ies", "y", 4), ("sses", "ss", 4), ("ing", "", 5), ("edly", "", 6),
             ("ed", "", 4), ("ly", "", 4), ("es", "", 4), ("s", "", 3))


def stem(word: str) -> str:
    """A light suffix stripper: ``"ranking" → "rank"``, ``"queries" → "query"``."""
    for suffix, replacement, min_stem in _SUFFIXES:
        if (word.endswith(suffix) and len(word) - len(suffix) >= min_stem - 1
                and not (suffix == "s" and word.endswith(("ss", "us", "is")))):
            return word[:-len(suffix)] + replacement
    return word


class _Stems(dict):
    """word → stem ("" for a stopword), filled on first sight (dict lookups are C-fast)."""

    def __missing__(self, word: str) -> str:
        if len(self) > 500_000:  # bound the memory on a huge vocabulary
            self.clear()
        value = "" if word in STOPWORDS else stem(word)
        self[word] = value
        return value


_STEMS = _Stems()


def terms(text: str, *, stopwords: bool = False) -> list[str]:
    """Stemmed content words of ``text``, in order (with ``stopwords=True``: all words)."""
    words = _TOKEN.findall(text.lower().replace("'", ""))
    if stopwords:
        return [stem(w) for w in words]
    return [t for t in map(_STEMS.__getitem__, words) if t]


@dataclass(frozen=True)
class QueryTerms:
    """The distinct terms of a query; ``stopwords`` when it had nothing but stopwords."""

    terms: tuple[str, ...]
    stopwords: bool = False

    @classmethod
    def of(cls, query: str) -> QueryTerms:
        kept = tuple(dict.fromkeys(terms(str(query))))
        if kept:
            return cls(kept)
        return cls(tuple(dict.fromkeys(terms(str(query), stopwords=True))), stopwords=True)


@dataclass(frozen=True)
class Overlap:
    """How much of the query a chunk contains."""

    overlap: float
    matched: int
    n_terms: int
    phrase: float


def overlap(query: QueryTerms, chunk: str) -> Overlap:
    """The overlap of the query's distinct terms with ``chunk``."""
    query_terms = query.terms
    if not query_terms:
        return Overlap(0.0, 0, 0, 0.0)
    chunk_terms = terms(chunk, stopwords=query.stopwords)
    present = set(chunk_terms)
    matched = sum(t in present for t in query_terms)
    coverage = matched / len(query_terms)
    bigrams = set(pairwise(query_terms))
    if bigrams:
        phrase = len(bigrams & set(pairwise(chunk_terms))) / len(bigrams)
    else:
        phrase = coverage
    score = COVERAGE_WEIGHT * coverage + (1 - COVERAGE_WEIGHT) * phrase
    return Overlap(round(score, 6), matched, len(query_terms), phrase)


class LexicalJudge:
    """Grades a (query, chunk) pair 0–3 by lexical overlap; labelled ``lexical-baseline``.

    Usage::

        judge = LexicalJudge()
        judge.judge_text("bm25 formula", "The BM25 formula weighs ...")  # Judgement
    """

    model = LEXICAL_MODEL

    def __init__(self, thresholds: tuple[float, float, float] = THRESHOLDS) -> None:
        bounds = tuple(float(t) for t in thresholds)
        if len(bounds) != 3 or not 0.0 < bounds[0] < bounds[1] < bounds[2] <= 1.0:
            raise ConfigError(f"lexical thresholds must be three increasing numbers in (0, 1], "
                              f"got {thresholds}")
        self.thresholds = bounds

    def grade_of(self, score: float) -> int:
        """The grade of an overlap score."""
        return sum(score >= t for t in self.thresholds)

    def _judge(self, query_terms: QueryTerms, chunk: str) -> tuple[int, str]:
        o = overlap(query_terms, chunk)
        if o.n_terms == 0:
            return 0, "lexical overlap 0.00 (the query has no terms)"
        return self.grade_of(o.overlap), (f"lexical overlap {o.overlap:.2f} ({o.matched}/"
                                          f"{o.n_terms} query terms, phrase {o.phrase:.2f})")

    def judge_text(self, query: str, chunk: str) -> Judgement:
        """One Judgement: the grade and "lexical overlap 0.67 (2/3 query terms, ...)"."""
        grade, rationale = self._judge(QueryTerms.of(query), chunk)
        return Judgement(grade=grade, rationale=rationale)

    def grade_frame(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """Grade every pair: a new frame ``query_id, chunk_id, grade, rationale`` (same order).

        Usage::

            LexicalJudge().grade_frame(io.read_pairs("pairs.jsonl"))
        """
        require_columns(pairs, PAIR_COLUMNS, "<pairs>", "pairs")
        queries = pairs["query"].fillna("").astype(str).tolist()
        query_terms = {q: QueryTerms.of(q) for q in set(queries)}
        chunks = pairs["chunk"].fillna("").astype(str).tolist()
        judged = [self._judge(query_terms[q], c) for q, c in zip(queries, chunks)]
        return pd.DataFrame({
            "query_id": pairs["query_id"].astype(str).to_numpy(),
            "chunk_id": pairs["chunk_id"].astype(str).to_numpy(),
            "grade": pd.array([g for g, _ in judged], dtype="int64"),
            "rationale": pd.array([r for _, r in judged], dtype=object),
        })


class LexicalJudgeAdapter:
    """The offline lexical-overlap baseline behind the :class:`Judge` interface.

    Usage::

        judge = LexicalJudgeAdapter()
        judge.judge_frame(pairs_df)   # vectorised: query_id, chunk_id, grade, rationale
    """

    model = LEXICAL_MODEL
    prompt_id = LEXICAL_MODEL
    samples = 1
    cacheable = False
    offline = True
    calls = 0

    def __init__(self) -> None:
        self._judge = LexicalJudge()

    def cache_material(self, query: str, chunk: str, sample: int = 0) -> dict[str, Any]:
        return {"model": self.model, "query": query, "chunk": chunk}

    def estimate_tokens(self, query: str, chunk: str) -> int:
        return 0

    async def judge(self, query: str, chunk: str, sample: int = 0) -> Verdict:
        j = self._judge.judge_text(query, chunk)
        return Verdict(grade=int(j.grade), rationale=j.rationale)

    def judge_frame(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """Grade every pair at once: ``grade`` and ``rationale`` aligned with ``pairs``."""
        return self._judge.grade_frame(pairs)  # a new frame with a fresh RangeIndex

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
