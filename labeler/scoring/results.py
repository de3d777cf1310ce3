"""NDCG@k, trec_eval-exact: on a list of grades and on qrels + runs.

DCG = Σ gain(rel_i) / log2(i + 1), positions from 1; linear gain (``rel``) by default,
exponential (``2**rel - 1``) on request. :func:`evaluate` follows trec_eval's ``ndcg_cut``:
ranking by score descending then chunk id descending (byte order), unjudged chunks count 0,
IDCG from every judged chunk of the query (or, with ``ideal="run"``, from the retrieved list
re-sorted). Queries of the run whose IDCG is 0 are left out of the mean and counted.

Usage::

    from labeler.scoring import results as scoring
    scoring.ndcg_at_k([3, 2, 3, 0, 1], k=5)                     # 0.972364
    res = scoring.evaluate("human.qrels", "bm25.run", k=[5, 10])
    res.mean("bm25", 10); res.summary; res.to_dict()
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa

from labeler import fmt, io
from labeler._arrow import arrow_strings
from labeler.scoring.kernels import (SUMMARY_COLUMNS, missing_queries, ndcg_per_query, ndcg_summary,
                                     summarise, value_blocks, value_table)

__all__ = ["PER_QUERY_COLUMNS", "SUMMARY_COLUMNS", "ScoreResult", "dcg", "evaluate",
           "evaluate_files", "frames_of", "ndcg_at_k", "score"]
from labeler.scoring.ndcg import (KernelOut, NeedsIO, QrelsArrays, RunArrays, discounts, gain_of,
                                  kernel)
from labeler.errors import ConfigError
from labeler.scoring.measures import Measure, parse_measure, parse_measures
from labeler.schema import GAINS, IDEALS

Gain: TypeAlias = str
"""``"linear"`` or ``"exponential"`` (checked when called)."""
Ideal: TypeAlias = str
"""``"qrels"`` or ``"run"`` (checked when called)."""
PER_QUERY_COLUMNS = ["system", "query_id", "k", "ndcg", "dcg", "idcg", "judged_at_k"]


# --------------------------------------------------------------------------- lists of grades

def dcg(rels: Sequence[float], k: int | None = None, gain: Gain = "linear") -> float:
    """Discounted cumulative gain of grades in rank order, cut at ``k`` (all if ``None``).

    Usage: ``scoring.dcg([3, 0, 2])`` → ``4.0``.
    """
    _check_gain(gain)
    values = np.asarray(list(rels), dtype=np.float64)
    if k is not None:
        values = values[:_check_k(k)]
    if values.size == 0:
        return 0.0
    return float(np.sum(gain_of(values, gain) / discounts(values.size)))


def ndcg_at_k(ranked_rels: Sequence[float], k: int, gain: Gain = "linear",
              ideal_rels: Sequence[float] | None = None) -> float:
    """NDCG@k of grades in rank order; IDCG 0 gives 0.0.

    The ideal is ``ranked_rels`` sorted descending, unless ``ideal_rels`` (e.g. every judged
    grade of the query, trec_eval's convention) is given.

    Usage: ``scoring.ndcg_at_k([1, 3, 1, 0, 0], 5, ideal_rels=[3, 1, 1, 0, 0])`` → 0.821314.
    """
    k = _check_k(k)
    pool = list(ranked_rels if ideal_rels is None else ideal_rels)
    ideal = dcg(sorted(pool, reverse=True), k, gain)
    if ideal == 0:
        return 0.0
    return dcg(ranked_rels, k, gain) / ideal


# --------------------------------------------------------------------------- result

@dataclass(frozen=True)
class ScoreResult:
    """NDCG@k (and any other measures) of one or more runs: DataFrames and renderers.

    - ``per_query``/``summary``: NDCG@k of each ``--k`` (the ``ndcg@k`` keys).
    - ``values``: every figure per query, long: ``system, query_id, measure, value, empty,
      in_run`` — ``measure`` is the JSON key (``ndcg@10``, ``P(rel=2)@10``), ``empty`` marks a
      query with no relevant chunk at the measure's level, ``in_run`` is False for a query of
      the qrels the run lacks (``complete``).
    - ``measure_summary``: ``system, measure, mean, median, n_queries, n_empty`` of the
      extra measures.

    Usage: ``res.mean("bm25", 10)``, ``res.mean("bm25", measure="AP")``, ``res.to_dict()``,
    ``res.to_trec()``, ``res.to_markdown()``.
    """

    per_query: pd.DataFrame
    summary: pd.DataFrame
    ks: list[int]
    gain: str = "linear"
    ideal: str = "qrels"
    include_empty: bool = False
    systems: list[str] = field(default_factory=list)
    measures: list[Measure] = field(default_factory=list)
    values: pd.DataFrame = field(default_factory=pd.DataFrame)
    measure_summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    complete: bool = False

    def _repr_html_(self) -> str:
        from labeler.report.notebook import score_html

        return score_html(self)

    def mean(self, system: str, k: int | None = None,
             measure: str | Measure | None = None) -> float:
        """Mean NDCG@k of ``system`` (``k`` defaults to the first k scored), or the mean of
        ``measure`` (e.g. ``"P@10"``)."""
        if measure is not None:
            return float(self._measure_row(system, measure)["mean"])
        return float(self._summary_row(system, k)["mean"])

    def median(self, system: str, k: int | None = None,
               measure: str | Measure | None = None) -> float:
        """Median NDCG@k of ``system``, or the median of ``measure``."""
        if measure is not None:
            return float(self._measure_row(system, measure)["median"])
        return float(self._summary_row(system, k)["median"])

    def _summary_row(self, system: str, k: int | None) -> pd.Series:
        k = self.ks[0] if k is None else int(k)
        rows = self.summary[(self.summary["system"] == system) & (self.summary["k"] == k)]
        if rows.empty:
            raise KeyError(f"no score for system {system!r} at k={k}; have systems "
                           f"{self.systems} and k {self.ks}")
        return rows.iloc[0]

    def _measure_row(self, system: str, measure: str | Measure) -> pd.Series:
        key = str(parse_measure(measure))
        ms = self.measure_summary
        rows = ms[(ms["system"] == system) & (ms["measure"] == key)] if len(ms) else ms
        if rows.empty:
            raise KeyError(f"no {key} for system {system!r}; have systems {self.systems} "
                           f"and measures {[str(m) for m in self.measures]}")
        return rows.iloc[0]

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object: ``{"k": [...], "runs": {tag: {"ndcg@k": {...},
        "<measure>": {...}}}}``; each measure has ``ci``, the 95% t-interval of its mean, clipped
        to [0, 1] where every measure lies (null below two queries)."""
        from labeler.statistics.inference import mean_ci

        runs: dict[str, Any] = {s: {} for s in self.systems}
        pq = self.per_query
        system, k_col = pq["system"].to_numpy(), pq["k"].to_numpy()
        ndcg, query = pq["ndcg"].to_numpy(), pq["query_id"].to_numpy()
        for row in self.summary.itertuples(index=False):
            kept = (system == row.system) & (k_col == row.k) & ~np.isnan(ndcg)
            runs.setdefault(str(row.system), {})[f"ndcg@{int(row.k)}"] = {
                "mean": _num(row.mean),
                "median": _num(row.median),
                "n_queries": int(row.n_queries),
                "per_query": dict(zip(query[kept].tolist(), ndcg[kept].tolist())),
                "ci": _interval(mean_ci(ndcg[kept], bounds=(0.0, 1.0))),
                "n_empty": int(row.n_empty),
                "n_not_in_qrels": int(row.n_not_in_qrels),
                "judged_share": _num(row.judged_share),
            }
        if self.measures:
            kept_values = self.values[self.values["measure"].isin(
                [m.key for m in self.measures]) & self.counted()]
            groups = {key: frame for key, frame in kept_values.groupby(["system", "measure"],
                                                                       sort=False)}
            for row in self.measure_summary.itertuples(index=False):
                frame = groups.get((row.system, row.measure))
                per_query = ({} if frame is None else
                             dict(zip(frame["query_id"].tolist(), frame["value"].tolist())))
                runs.setdefault(str(row.system), {})[str(row.measure)] = {
                    "mean": _num(row.mean), "median": _num(row.median),
                    "n_queries": int(row.n_queries), "per_query": per_query,
                    "ci": _interval(mean_ci(np.fromiter(per_query.values(), float,
                                                        len(per_query)), bounds=(0.0, 1.0))),
                    "n_empty": int(row.n_empty)}
        out: dict[str, Any] = {"k": list(self.ks), "runs": runs}
        if self.measures:
            out["measures"] = [m.key for m in self.measures]
        return out

    def to_pyterrier(self, perquery: bool = False) -> pd.DataFrame:
        """The figures as ``pt.Experiment`` gives them: one row per run (``name``, then one
        column per measure, its mean), or with ``perquery`` long rows ``name, qid, measure,
        value``.

        Usage: ``labeler.score(qrels, runs, measures=["AP"]).to_pyterrier()``
        """
        runs = self.to_dict()["runs"]
        if perquery:
            rows = [(name, q, key, v) for name, entry in runs.items()
                    for key, block in entry.items() for q, v in block["per_query"].items()]
            return pd.DataFrame(rows, columns=["name", "qid", "measure", "value"])
        return pd.DataFrame([{"name": name, **{key: block["mean"] for key, block in
                                               entry.items()}}
                             for name, entry in runs.items()])

    def counted(self) -> pd.Series:
        """Rows of ``values`` that enter means and per-query lists."""
        v = self.values
        keep = v["in_run"] | self.complete
        return keep & (~v["empty"] | self.include_empty)

    def to_trec(self, per_query: bool = False) -> str:
        """trec_eval's text output for each run (``runid``, ``num_q``, then each measure's
        mean over every query of the run that the qrels judge — trec_eval's mean — with
        ``-q``'s per-query lines first when ``per_query``)."""
        from labeler.report.trec_text import trec_eval_text
        return trec_eval_text(self, per_query)

    def to_markdown(self) -> str:
        """A readable Markdown table: one line per run and k (and per extra measure)."""
        lines = ["| run | k | mean NDCG@k | median | queries | IDCG 0 | judged share |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for row in self.summary.itertuples(index=False):
            lines.append(f"| {row.system} | {row.k} | {format_value(row.mean)} | "
                         f"{format_value(row.median)} | {row.n_queries} | {row.n_empty} | "
                         f"{format_value(row.judged_share)} |")
        if self.measures:
            lines += ["", "| run | measure | mean | median | queries | none relevant |",
                      "| --- | --- | ---: | ---: | ---: | ---: |"]
            for m in self.measure_summary.itertuples(index=False):
                lines.append(f"| {m.system} | {m.measure} | {format_value(m.mean)} | "
                             f"{format_value(m.median)} | {m.n_queries} | {m.n_empty} |")
        note = ("queries with no relevant chunk counted as 0" if self.include_empty
                else "queries with no relevant judged chunk left out of mean and median")
        if self.complete:
            note += "; queries of the qrels a run lacks count 0"
        lines.append("")
        lines.append(f"gain {self.gain}, ideal from the {self.ideal}; {note}.")
        return "\n".join(lines)


def frames_of(result: ScoreResult, measure: str | Measure | None, k: int
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, per_query) of ``measure`` shaped as NDCG@k's (``mean, median, n_queries``
    per run; ``ndcg`` per query holding the measure's values), the judged share of the top
    ``k`` kept; NDCG@k's own frames when ``measure`` is None.

    Usage: ``summary, per_query = frames_of(res, "AP", 10)``
    """
    if measure is None:
        return result.summary, result.per_query
    key = str(parse_measure(measure))
    ms = result.measure_summary
    ms = ms.loc[ms["measure"] == key, ["system", "mean", "median", "n_queries"]]
    base = result.summary.loc[result.summary["k"] == k].drop(columns=["mean", "median",
                                                                         "n_queries"])
    summary = base.merge(ms, on="system", how="left")
    v = result.values
    v = v.loc[result.counted() & (v["measure"] == key)]
    per_query = pd.DataFrame({"system": v["system"].to_numpy(),
                              "query_id": v["query_id"].to_numpy(), "k": k,
                              "ndcg": v["value"].to_numpy(dtype="float64")})
    return summary, per_query


def _num(x: Any) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def _interval(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [ci[0], ci[1]]


format_value = fmt.num


# --------------------------------------------------------------------------- evaluate

def evaluate(qrels: Any, run: Any, k: int | Sequence[int] = 10, gain: Gain = "linear",
             ideal: Ideal = "qrels", include_empty: bool = False,
             measures: Sequence[str | Measure] = (), complete: bool = False) -> ScoreResult:
    """NDCG@k of every run in ``run`` against ``qrels`` (trec_eval ``ndcg_cut``), and any
    ``measures`` named as ir_measures writes them (``"P(rel=2)@10"``, ``"AP"``, ...).

    ``qrels``/``run``: a DataFrame, a path or ``{qid: {docid: grade|score}}``; ``run`` may hold
    several systems (its ``system`` column). Grades may be any integer (gain g for g > 0).
    ``include_empty`` counts queries of the run that are judged but have no relevant chunk
    (trec_eval's mean); ``complete`` also counts, as 0, every query of the qrels a run lacks
    (trec_eval ``-c``). Inputs are not modified.

    Usage: ``res = scoring.evaluate(qrels_df, run_df, k=[5, 10], measures=["AP", "P@10"])``
    """
    ks, gain, ideal = _check_options(k, gain, ideal)
    wanted = parse_measures(measures)
    qa, check_q = _qrels_input(qrels)
    ra, check_r = _run_input(run)
    while True:
        try:
            out = kernel(ra, qa, ks, gain, ideal, check_run=check_r, check_qrels=check_q,
                         depth=_depth(wanted))
            break
        except NeedsIO as why:  # io cleans the ids, or finds (and names) a repeated key
            if why.which == "run":
                ra, check_r = _run_arrays(io.as_run(run)), False
            else:
                qa, check_q = _qrels_arrays(io.as_qrels(qrels, any_grade=True)), False
    return _result(out, ks, gain, ideal, bool(include_empty), wanted, bool(complete))


def evaluate_files(qrels: str | os.PathLike[str],
                   runs: Sequence[str | os.PathLike[str] | tuple[str, str | os.PathLike[str]]],
                   k: int | Sequence[int] = 10, gain: Gain = "linear", ideal: Ideal = "qrels",
                   include_empty: bool = False, fmt: str | None = None,
                   grade_map: Mapping[str, int] | None = None,
                   measures: Sequence[str | Measure] = (), complete: bool = False,
                   run_fmt: str | None = None, qrels_fmt: str | None = None) -> ScoreResult:
    """:func:`evaluate` on files (what ``labeler score`` runs): one qrels file, run files.

    A run is ``PATH``, ``"NAME=PATH"`` or ``(NAME, PATH)``; it is named NAME, else by its
    TREC tag, else its ``system`` column, else its file's stem. ``fmt`` forces the format
    of every file, ``run_fmt`` that of the runs, ``qrels_fmt`` that of the qrels.

    Usage: ``scoring.evaluate_files("human.qrels", ["bm25=a.run", "dense.run"], k=[5, 10])``
    """
    ks, gain, ideal = _check_options(k, gain, ideal)
    wanted = parse_measures(measures)
    q = io.read_qrels(qrels, qrels_fmt or fmt, grade_map, any_grade=True)
    r = io.read_runs(list(runs), run_fmt or fmt)
    out = kernel(_run_arrays(r), _qrels_arrays(q), ks, gain, ideal, depth=_depth(wanted))
    return _result(out, ks, gain, ideal, bool(include_empty), wanted, bool(complete))


def _depth(measures: list[Measure]) -> int | None:
    """How deep the rankings must be read for ``measures`` (0: the NDCG cut-offs only)."""
    if not measures:
        return 0
    if any(m.depth is None for m in measures):
        return None
    return max(int(m.depth or 0) for m in measures)


def _check_options(k: int | Sequence[int], gain: str, ideal: str
                   ) -> tuple[list[int], str, str]:
    _check_gain(gain)
    if ideal not in IDEALS:
        raise ConfigError(f"ideal must be one of {', '.join(IDEALS)}, got {ideal!r}")
    raw = [k] if isinstance(k, (int, np.integer)) else list(k)
    if not raw:
        raise ConfigError("give at least one cutoff k")
    ks: list[int] = []
    for value in raw:
        value = _check_k(value)
        if value not in ks:
            ks.append(value)
    return ks, gain, ideal


def _check_gain(gain: str) -> None:
    if gain not in GAINS:
        raise ConfigError(f"gain must be one of {', '.join(GAINS)}, got {gain!r}")


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    return int(k)


def _result(out: KernelOut, ks: list[int], gain: str, ideal: str, include_empty: bool,
            measures: list[Measure] | None = None, complete: bool = False) -> ScoreResult:
    measures = measures or []
    extra = missing_queries(out) if complete else None
    per_query = ndcg_per_query(out, ks, include_empty, extra, gain, ideal)
    blocks = value_blocks(out, ks, measures, extra, gain, ideal)
    return ScoreResult(per_query=per_query, summary=ndcg_summary(out, ks, per_query, extra),
                       ks=list(ks), gain=gain, ideal=ideal, include_empty=include_empty,
                       systems=list(out.system_names), measures=measures,
                       values=value_table(out, blocks, extra),
                       measure_summary=summarise(out, blocks, extra, measures, include_empty,
                                                 complete),
                       complete=complete)


def _run_arrays(run: pd.DataFrame) -> RunArrays:
    return RunArrays(system=arrow_strings(run["system"]), query=arrow_strings(run["query_id"]),
                     chunk=arrow_strings(run["chunk_id"]),
                     score=run["score"].to_numpy(dtype=np.float64))


def _qrels_arrays(qrels: pd.DataFrame) -> QrelsArrays:
    return QrelsArrays(query=arrow_strings(qrels["query_id"]),
                       chunk=arrow_strings(qrels["chunk_id"]),
                       grade=qrels["grade"].to_numpy(dtype=np.int64))


def _run_input(run: Any) -> tuple[RunArrays, bool]:
    """Arrays of a run, and whether duplicates are still to be checked.

    A DataFrame that ``io.as_run`` would keep unchanged (string ids without surrounding
    blanks, numeric scores) is used as it is; anything else goes through ``io.as_run``.
    """
    if isinstance(run, pd.DataFrame) and {"query_id", "chunk_id", "score"} <= set(run.columns):
        try:
            fast = _fast_run(run)
        except (pa.ArrowException, TypeError, ValueError):
            fast = None
        if fast is not None:
            return fast, True
    return _run_arrays(io.as_run(run)), False


def _fast_run(run: pd.DataFrame) -> RunArrays | None:
    if run["score"].dtype.kind not in "fiu":
        return None
    score = run["score"].to_numpy(dtype=np.float64)
    if np.isnan(score).any():
        return None
    query, chunk = arrow_strings(run["query_id"]), arrow_strings(run["chunk_id"])
    system: pa.Array | str = "run"
    if "system" in run.columns:
        system = arrow_strings(run["system"])
        if system.null_count:
            return None
    return RunArrays(system=system, query=query, chunk=chunk, score=score)


def _qrels_input(qrels: Any) -> tuple[QrelsArrays, bool]:
    """Arrays of qrels, and whether duplicates are still to be checked (see _run_input)."""
    if (isinstance(qrels, pd.DataFrame) and "status" not in qrels.columns
            and {"query_id", "chunk_id", "grade"} <= set(qrels.columns)
            and qrels["grade"].dtype.kind in "iu"):
        grade = qrels["grade"].to_numpy(dtype=np.int64)
        try:
            query, chunk = arrow_strings(qrels["query_id"]), arrow_strings(qrels["chunk_id"])
        except (pa.ArrowException, TypeError, ValueError):
            query = chunk = None
        if query is not None and chunk is not None and len(grade):
            return QrelsArrays(query=query, chunk=chunk, grade=grade), True
    return _qrels_arrays(io.as_qrels(qrels, any_grade=True)), False


def score(qrels: Any, runs: Any, *, k: int | Sequence[int] = 10, gain: Gain = "linear",
          ideal: Ideal = "qrels", include_empty: bool = False,
          measures: Sequence[str | Measure] = (), complete: bool = False) -> ScoreResult:
    """NDCG@k (and ``measures``) of every run against ``qrels``: :func:`evaluate` with
    keyword options; ``runs`` may also be ``{name: run}`` or a list of ``NAME=PATH``.

    Usage: ``labeler.score("human.qrels", {"bm25": "bm25.run"}, k=[5, 10], measures=["AP"])``
    """
    return evaluate(qrels, io.as_runs(runs) if isinstance(runs, (list, tuple, Mapping))
                    else runs, k, gain, ideal, include_empty, measures=measures,
                    complete=complete)
