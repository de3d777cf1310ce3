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
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from labeler import fmt
from labeler._lean import allow_pandas, without_pandas
from labeler.errors import ConfigError
from labeler.schema import GAINS, IDEALS, Gain, Ideal
from labeler.scoring.arrays import KernelOut, discounts, gain_of
from labeler.scoring.figures import (MEASURE_SUMMARY_COLUMNS, PER_QUERY_COLUMNS,
                                     SUMMARY_COLUMNS, Figures, build_figures)
from labeler.scoring.inputs import (kernel_of_files, qrels_arrays, qrels_input, run_arrays,
                                    run_input, run_kernel)
from labeler.scoring.measures import Measure, parse_measure, parse_measures

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PER_QUERY_COLUMNS", "SUMMARY_COLUMNS", "ScoreResult", "dcg", "evaluate",
           "evaluate_files", "frames_of", "ndcg_at_k", "score"]

Engine = Literal["auto", "memory", "duckdb"]
"""Where :func:`score` computes: in memory, out of core with DuckDB, or ``auto`` (by size)."""


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

@dataclass(frozen=True, eq=False)
class ScoreResult:
    """NDCG@k (and any other measures) of one or more runs: DataFrames and renderers.

    - ``per_query``/``summary``: NDCG@k of each ``--k`` (the ``ndcg@k`` keys).
    - ``values``: every figure per query, long: ``system, query_id, measure, value, empty,
      in_run`` — ``measure`` is the JSON key (``ndcg@10``, ``P(rel=2)@10``), ``empty`` marks a
      query with no relevant chunk at the measure's level, ``in_run`` is False for a query of
      the qrels the run lacks (``complete``).
    - ``measure_summary``: ``system, measure, mean, median, n_queries, n_empty`` of the
      extra measures.

    The DataFrames are made on first use, from :attr:`figures` (flat arrays): the JSON, the
    trec_eval text and the tables need no pandas.

    Usage: ``res.mean("bm25", 10)``, ``res.mean("bm25", measure="AP")``, ``res.to_dict()``,
    ``res.to_trec()``, ``res.to_markdown()``.
    """

    figures: Figures
    ks: list[int]
    gain: str = "linear"
    ideal: str = "qrels"
    include_empty: bool = False
    measures: list[Measure] = field(default_factory=list)
    complete: bool = False
    show_k: bool = True
    """False when only ``measures`` were asked for (no ``k``): NDCG@10 stays in
    :attr:`summary`/:attr:`per_query` but is not printed, nor in ``to_dict``/``values``."""

    @property
    def systems(self) -> list[str]:
        """The runs, in order of first appearance."""
        return list(self.figures.systems)

    def __repr__(self) -> str:
        return (f"ScoreResult(systems={self.systems}, ks={self.ks}, "
                f"measures={[str(m) for m in self.measures]})")

    def _repr_html_(self) -> str:
        from labeler.report.notebook import score_html

        return score_html(self.summary)

    # ----------------------------------------------------------------------- frames

    @cached_property
    def per_query(self) -> pd.DataFrame:
        """NDCG@k per (system, query) and k: ``system, query_id, k, ndcg, dcg, idcg,
        judged_at_k`` (``ndcg`` NaN where the query is left out)."""
        with allow_pandas():
            return self.figures.per_query_table().to_pandas()

    @cached_property
    def summary(self) -> pd.DataFrame:
        """NDCG@k per run and k: mean, median, queries, IDCG 0, judged share."""
        with allow_pandas():
            import pandas as pd

        frame = pd.DataFrame(self.figures.summary_rows, columns=SUMMARY_COLUMNS)
        frame["system"] = frame["system"].astype("str")
        return frame

    @cached_property
    def values(self) -> pd.DataFrame:
        """Every figure per (system, query judged by the qrels), long (see the class)."""
        with allow_pandas():
            return self.figures.values_table().to_pandas()

    @cached_property
    def measure_summary(self) -> pd.DataFrame:
        """Mean, median and counts of each (system, measure) of :attr:`measures`."""
        with allow_pandas():
            import pandas as pd

        return pd.DataFrame(self.figures.measure_rows, columns=MEASURE_SUMMARY_COLUMNS)

    def counted(self) -> pd.Series:
        """Rows of ``values`` that enter means and per-query lists."""
        with allow_pandas():
            import pandas as pd

        return pd.Series(self.figures.counted(self.include_empty, self.complete),
                         index=self.values.index)

    # ----------------------------------------------------------------------- figures

    def mean(self, system: str, k: int | None = None,
             measure: str | Measure | None = None) -> float:
        """Mean NDCG@k of ``system`` (``k`` defaults to the first k scored), or the mean of
        ``measure`` (e.g. ``"P@10"``)."""
        if measure is not None:
            return float(self._measure_row(system, measure)[2])
        return float(self._summary_row(system, k)[2])

    def median(self, system: str, k: int | None = None,
               measure: str | Measure | None = None) -> float:
        """Median NDCG@k of ``system``, or the median of ``measure``."""
        if measure is not None:
            return float(self._measure_row(system, measure)[3])
        return float(self._summary_row(system, k)[3])

    def _summary_row(self, system: str, k: int | None) -> tuple[Any, ...]:
        k = (self.ks[0] if self.ks else None) if k is None else int(k)
        for row in self.figures.summary_rows:
            if row[0] == system and row[1] == k:
                return row
        raise KeyError(f"no score for system {system!r} at k={k}; have systems "
                       f"{self.systems} and k {self.ks}")

    def key_of(self, measure: str | Measure) -> str:
        """The name ``measure`` has in this result's tables: as it was asked (``P.10`` asked,
        ``P@10`` looked up: ``P.10``)."""
        wanted = parse_measure(measure)
        return next((m.key for m in self.measures if m == wanted), wanted.key)

    def _measure_row(self, system: str, measure: str | Measure) -> tuple[Any, ...]:
        key = self.key_of(measure)
        for row in self.figures.measure_rows:
            if row[0] == system and row[1] == key:
                return row
        raise KeyError(f"no {key} for system {system!r}; have systems {self.systems} "
                       f"and measures {[str(m) for m in self.measures]}")

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object: ``{"k": [...], "runs": {tag: {"ndcg@k": {...},
        "<measure>": {...}}}}``; each measure has ``ci``, the 95% t-interval of its mean, clipped
        to [0, 1] where every measure lies (null below two queries)."""
        from labeler.tdist import mean_ci

        f = self.figures
        runs: dict[str, Any] = {s: {} for s in self.systems}
        kept_pq = ~np.isnan(f.pq_ndcg)
        for row in (f.summary_rows if self.show_k else []):
            si, k = self.systems.index(row[0]), int(row[1])
            kept = np.flatnonzero(kept_pq & (f.pq_system == si) & (f.pq_k == k))
            values = f.pq_ndcg[kept]
            runs[str(row[0])][f"ndcg@{k}"] = {
                "mean": _num(row[2]), "median": _num(row[3]), "n_queries": int(row[4]),
                "per_query": _per_query(f.pq_query, kept, values),
                "ci": _interval(mean_ci(values, bounds=(0.0, 1.0))), "n_empty": int(row[5]),
                "n_not_in_qrels": int(row[7]), "judged_share": _num(row[6])}
        if self.measures:
            counted = f.counted(self.include_empty, self.complete)
            n_sys = max(len(self.systems), 1)
            cell = f.v_measure * n_sys + f.v_system
            rows = np.flatnonzero(counted)
            rows = rows[np.argsort(cell[rows], kind="stable")]
            sorted_cells = cell[rows]
            for row in f.measure_rows:
                si, mi = self.systems.index(row[0]), f.keys.index(row[1])
                lo, hi = np.searchsorted(sorted_cells, [mi * n_sys + si, mi * n_sys + si + 1])
                mine = rows[lo:hi]
                values = f.v_value[mine]
                runs[str(row[0])][str(row[1])] = {
                    "mean": _num(row[2]), "median": _num(row[3]), "n_queries": int(row[4]),
                    "per_query": _per_query(f.v_query, mine, values),
                    "ci": _interval(mean_ci(values, bounds=(0.0, 1.0))), "n_empty": int(row[5])}
        out: dict[str, Any] = {"k": list(self.ks) if self.show_k else [], "runs": runs}
        if self.measures:
            out["measures"] = [m.key for m in self.measures]
        return out

    def to_pyterrier(self, perquery: bool = False) -> pd.DataFrame:
        """The figures as ``pt.Experiment`` gives them: one row per run (``name``, then one
        column per measure, its mean), or with ``perquery`` long rows ``name, qid, measure,
        value``.

        Usage: ``labeler.score(qrels, runs, measures=["AP"]).to_pyterrier()``
        """
        with allow_pandas():
            import pandas as pd

        runs = self.to_dict()["runs"]

        def named(key: str) -> str:   # ir_measures' name, as pt.Experiment writes it
            return "nDCG@" + key[5:] if key.startswith("ndcg@") else key

        if perquery:
            rows = [(name, q, named(key), v) for name, entry in runs.items()
                    for key, block in entry.items() for q, v in block["per_query"].items()]
            return pd.DataFrame(rows, columns=["name", "qid", "measure", "value"])
        return pd.DataFrame([{"name": name, **{named(key): block["mean"] for key, block in
                                               entry.items()}}
                             for name, entry in runs.items()])

    def to_ir_measures(self, perquery: bool = False) -> dict[str, Any]:
        """Per run, ``{Measure: mean}`` as ``ir_measures.calc_aggregate`` gives it, or with
        ``perquery`` its ``iter_calc`` tuples (:mod:`labeler.scoring.export`)."""
        from labeler.scoring.export import to_ir_measures
        return to_ir_measures(self, perquery)

    def to_ranx(self, *, stat_test: str = "student", max_p: float = 0.01) -> Any:
        """A ``ranx.Report`` as ``ranx.compare`` makes it, from these figures (on the queries
        every run has a value for; :mod:`labeler.scoring.export`)."""
        from labeler.scoring.export import to_ranx
        return to_ranx(self, stat_test=stat_test, max_p=max_p)

    def to_trec(self, per_query: bool = False) -> str:
        """trec_eval's text output for each run (``runid``, ``num_q``, then each measure's
        mean over every query of the run that the qrels judge — trec_eval's mean — with
        ``-q``'s per-query lines first when ``per_query``)."""
        from labeler.report.trec_text import trec_eval_text
        return trec_eval_text(self.figures, self.trec_names(), self.complete, per_query)

    def trec_names(self) -> list[tuple[str, str]]:
        """(value key, name trec_eval prints) of each figure, in output order, each once."""
        trec_ndcg = self.gain == "linear" and self.ideal == "qrels"
        pairs = [(f"ndcg@{k}", f"ndcg_cut_{k}" if trec_ndcg else f"ndcg@{k}")
                 for k in (self.ks if self.show_k else [])]
        pairs += [(m.key, m.trec_name) for m in self.measures]
        out: list[tuple[str, str]] = []
        for key, name in pairs:
            if name not in {n for _, n in out}:
                out.append((key, name))
        return out

    def to_markdown(self) -> str:
        """A readable Markdown table: one line per run and k (and per extra measure)."""
        lines = ["| run | k | mean NDCG@k | median | queries | IDCG 0 | judged share |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for s, k, mean, median, n, n_empty, judged, _ in (self.figures.summary_rows
                                                          if self.show_k else []):
            lines.append(f"| {s} | {k} | {format_value(mean)} | {format_value(median)} | "
                         f"{n} | {n_empty} | {format_value(judged)} |")
        if self.measures:
            lines += ["", "| run | measure | mean | median | queries | none relevant |",
                      "| --- | --- | ---: | ---: | ---: | ---: |"]
            for s, key, mean, median, n, n_empty in self.figures.measure_rows:
                lines.append(f"| {s} | {key} | {format_value(mean)} | "
                             f"{format_value(median)} | {n} | {n_empty} |")
        note = ("queries with no relevant chunk counted as 0" if self.include_empty
                else "queries with no relevant judged chunk left out of mean and median")
        if self.complete:
            note += "; queries of the qrels a run lacks count 0"
        lines.append("")
        lines.append(f"gain {self.gain}, ideal from the {self.ideal}; {note}.")
        return "\n".join(lines)


def _per_query(queries: Any, rows: np.ndarray, values: np.ndarray) -> dict[str, float]:
    import pyarrow as pa

    return dict(zip(queries.take(pa.array(rows)).to_pylist(), values.tolist()))


def frames_of(result: ScoreResult, measure: str | Measure | None, k: int
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, per_query) of ``measure`` shaped as NDCG@k's (``mean, median, n_queries``
    per run; ``ndcg`` per query holding the measure's values), the judged share of the top
    ``k`` kept; NDCG@k's own frames when ``measure`` is None.

    Usage: ``summary, per_query = frames_of(res, "AP", 10)``
    """
    import pandas as pd

    if measure is None:
        return result.summary, result.per_query
    key = result.key_of(measure)
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

def evaluate(qrels: Any, run: Any, k: int | Sequence[int] | None = None,
             gain: Gain = "linear", ideal: Ideal = "qrels", include_empty: bool = False,
             measures: Sequence[str | Measure] = (), complete: bool = False) -> ScoreResult:
    """NDCG@k of every run in ``run`` against ``qrels`` (trec_eval ``ndcg_cut``), and any
    ``measures`` named as ir_measures writes them (``"P(rel=2)@10"``, ``"AP"``, ...).

    ``qrels``/``run``: a DataFrame, a path or ``{qid: {docid: grade|score}}``; ``run`` may hold
    several systems (its ``system`` column). Grades may be any integer (gain g for g > 0).
    ``k``: NDCG cut-offs (default 10, or none when ``measures`` are given: each figure once).
    ``include_empty`` counts queries of the run that are judged but have no relevant chunk
    (trec_eval's mean); ``complete`` also counts, as 0, every query of the qrels a run lacks
    (trec_eval ``-c``). Inputs are not modified.

    Usage: ``res = scoring.evaluate(qrels_df, run_df, k=[5, 10], measures=["AP", "P@10"])``
    """
    from labeler import io

    wanted = parse_measures(measures)
    ks, gain, ideal = _check_options(k, gain, ideal, bool(wanted))
    qa, check_q = qrels_input(qrels)
    ra, check_r = run_input(run)
    out = run_kernel(qa, check_q, ra, check_r,
                     lambda: qrels_arrays(io.as_qrels(qrels, any_grade=True)),
                     lambda: run_arrays(io.as_run(run)), ks, gain, ideal, _depth(wanted))
    return _result(out, ks, gain, ideal, bool(include_empty), wanted, bool(complete),
                   show_k=_show_k(k, ks, wanted))


def _show_k(k: Any, ks: Sequence[int], wanted: Sequence[Measure]) -> bool:
    """Whether the ``ndcg@K`` figures of ``ks`` are shown beside the asked measures: always
    with ``k`` given or no measure asked; by default (``ndcg@10``) unless a measure asked is
    that same NDCG@10, which is then shown once, under the name it was asked by."""
    if k is not None or not wanted:
        return True
    return any(Measure("nDCG", cut) not in wanted for cut in ks)


def evaluate_files(qrels: str | os.PathLike[str],
                   runs: Sequence[str | os.PathLike[str] | tuple[str, str | os.PathLike[str]]],
                   k: int | Sequence[int] | None = None, gain: Gain = "linear",
                   ideal: Ideal = "qrels", include_empty: bool = False,
                   fmt: str | None = None, grade_map: Mapping[str, int] | None = None,
                   measures: Sequence[str | Measure] = (), complete: bool = False,
                   run_fmt: str | None = None, qrels_fmt: str | None = None,
                   engine: str = "memory", memory_limit: str | None = None,
                   temp_dir: str | os.PathLike[str] | None = None) -> ScoreResult:
    """:func:`evaluate` on files (what ``labeler score`` runs): one qrels file, run files.

    A run is ``PATH``, ``"NAME=PATH"`` or ``(NAME, PATH)``; it is named NAME, else by its
    TREC tag, else its ``system`` column, else its file's stem. ``fmt`` forces the format
    of every file, ``run_fmt`` that of the runs, ``qrels_fmt`` that of the qrels. Plain TREC
    and Parquet files are read with Arrow (no pandas), any other through :mod:`labeler.io`.
    ``engine``: ``memory``; ``duckdb`` streams the runs out of core (extra ``labeler[duckdb]``;
    ``memory_limit`` such as ``"2GB"``, ``temp_dir`` where it spills), with the same values;
    ``auto`` picks ``duckdb`` when the runs are large for this machine's memory.

    Usage: ``scoring.evaluate_files("human.qrels", ["bm25=a.run", "dense.run"], k=[5, 10])``
    """
    wanted = parse_measures(measures)
    ks, gain, ideal = _check_options(k, gain, ideal, bool(wanted))
    if engine not in ("auto", "memory", "duckdb"):
        raise ConfigError(f"engine must be auto, memory or duckdb, got {engine!r}")
    if engine != "memory":
        from labeler.scoring.duckdb_engine import kernel_duckdb, wants_duckdb

        if engine == "duckdb" or wants_duckdb(list(runs), run_fmt or fmt):
            with allow_pandas():   # out of core: pandas' start-up does not count here
                out = kernel_duckdb(qrels, list(runs), ks, gain, ideal, _depth(wanted),
                                    qrels_fmt=qrels_fmt or fmt, run_fmt=run_fmt or fmt,
                                    grade_map=grade_map, memory_limit=memory_limit,
                                    temp_dir=temp_dir)
            return _result(out, ks, gain, ideal, bool(include_empty), wanted, bool(complete),
                           show_k=_show_k(k, ks, wanted))
    with without_pandas():   # plain files need no pandas (an odd one lifts this)
        out = kernel_of_files(qrels, list(runs), ks, gain, ideal, _depth(wanted),
                              qrels_fmt=qrels_fmt or fmt, run_fmt=run_fmt or fmt,
                              grade_map=grade_map)
        return _result(out, ks, gain, ideal, bool(include_empty), wanted,
                       bool(complete), show_k=_show_k(k, ks, wanted))


def _depth(measures: list[Measure]) -> int | None:
    """How deep the rankings must be read for ``measures`` (0: the NDCG cut-offs only)."""
    if not measures:
        return 0
    if any(m.depth is None for m in measures):
        return None
    return max(int(m.depth or 0) for m in measures)


def _check_options(k: int | Sequence[int] | None, gain: str, ideal: str,
                   measures: bool = False) -> tuple[list[int], Gain, Ideal]:
    """Cut-offs, gain and ideal checked; no ``k`` means NDCG@10."""
    _check_gain(gain)
    if ideal not in IDEALS:
        raise ConfigError(f"ideal must be one of {', '.join(IDEALS)}, got {ideal!r}")
    if k is None:
        k = [10]
    raw = [k] if isinstance(k, (int, np.integer)) else list(k)
    if not raw:
        raise ConfigError("give at least one cutoff k")
    ks: list[int] = []
    for value in raw:
        value = _check_k(value)
        if value not in ks:
            ks.append(value)
    return ks, cast(Gain, gain), cast(Ideal, ideal)


def _check_gain(gain: str) -> None:
    if gain not in GAINS:
        raise ConfigError(f"gain must be one of {', '.join(GAINS)}, got {gain!r}")


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    return int(k)


def _result(out: KernelOut, ks: list[int], gain: str, ideal: str, include_empty: bool,
            measures: list[Measure] | None = None, complete: bool = False,
            show_k: bool = True) -> ScoreResult:
    measures = measures or []
    figures = build_figures(out, ks, measures, include_empty, complete, gain, ideal,
                            ndcg_values=show_k)
    return ScoreResult(figures, list(ks), gain=gain, ideal=ideal, include_empty=include_empty,
                       measures=measures, complete=complete, show_k=show_k)


def score(qrels: Any, runs: Any, *, k: int | Sequence[int] | None = None, gain: Gain = "linear",
          ideal: Ideal = "qrels", include_empty: bool = False,
          measures: Sequence[str | Measure] = (), complete: bool = False,
          engine: Engine = "memory", memory_limit: str | None = None,
          temp_dir: str | os.PathLike[str] | None = None) -> ScoreResult:
    """NDCG@k (and ``measures``) of every run against ``qrels``: :func:`evaluate` with
    keyword options; ``runs`` may also be ``{name: run}`` or a list of ``NAME=PATH``.

    ``engine="duckdb"`` streams run files out of core (extra ``labeler[duckdb]``; ``qrels``
    and ``runs`` are then files: a path, paths or ``NAME=PATH``, or ``{name: path}``;
    ``memory_limit`` such as ``"2GB"``, ``temp_dir`` where it spills), with the same values;
    ``"auto"`` picks it when run files are large for this machine's memory, as
    ``labeler score --engine`` does.

    Usage: ``labeler.score("human.qrels", {"bm25": "bm25.run"}, k=[5, 10], measures=["AP"])``
    """
    from labeler import io

    if engine not in ("auto", "memory", "duckdb"):
        raise ConfigError(f"engine must be auto, memory or duckdb, got {engine!r}")
    files = _run_files(runs) if engine != "memory" and _is_path(qrels) else None
    if files is not None:
        return evaluate_files(qrels, files, k, gain, ideal, include_empty, measures=measures,
                              complete=complete, engine=engine, memory_limit=memory_limit,
                              temp_dir=temp_dir)
    if engine == "duckdb":
        raise ConfigError("engine duckdb reads files: give qrels and runs as paths (a path, "
                          "paths or NAME=PATH, or {name: path}), or use engine memory")
    return evaluate(qrels, io.as_runs(runs) if isinstance(runs, (list, tuple, Mapping))
                    else runs, k, gain, ideal, include_empty, measures=measures,
                    complete=complete)


def _is_path(obj: Any) -> bool:
    return isinstance(obj, (str, os.PathLike)) and not str(obj).startswith("irds:")


def _run_files(runs: Any) -> list[Any] | None:
    """``runs`` as :func:`evaluate_files` takes them, or None when they are not all files."""
    if isinstance(runs, Mapping):
        if runs and all(_is_path(v) for v in runs.values()):
            return [(str(name), path) for name, path in runs.items()]
        return None
    if _is_path(runs):
        return [runs]
    if isinstance(runs, (list, tuple)) and runs and all(_is_path(r) for r in runs):
        return list(runs)
    return None
