"""A score result in ir_measures' and ranx's own shapes.

- :func:`to_ir_measures`: per run, ``{Measure: mean}`` as ``ir_measures.calc_aggregate`` gives
  it, or with ``perquery`` the ``Metric(query_id, measure, value)`` tuples of
  ``ir_measures.iter_calc``; measures are ir_measures' objects (``nDCG@10``, ``P(rel=2)@10``).
- :func:`to_ranx`: a ``ranx.Report`` as ``ranx.compare`` makes it (means, ranx's paired tests
  and win/tie/loss counts), from labeler's per-query values: ``print(report)``,
  ``report.to_latex()``, ``report.to_dataframe()``. ranx compares runs on the same queries,
  so the report's figures are taken on the queries every run has a value for.

The figures are labeler's (the same queries counted as in ``to_dict()``); each library is
imported only here.

Usage::

    res = labeler.score(qrels, runs, measures=["AP"])
    res.to_ir_measures()["bm25"][nDCG @ 10]
    print(res.to_ranx(max_p=0.05))
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from labeler.errors import ConfigError
from labeler.scoring.measures import Measure


class ScoreResult(Protocol):
    """What is converted: a :class:`~labeler.scoring.results.ScoreResult`."""

    @property
    def ideal(self) -> str: ...

    @property
    def gain(self) -> str: ...

    @property
    def measures(self) -> list[Measure]: ...

    def to_dict(self) -> dict[str, Any]: ...

__all__ = ["ranx_metric", "to_ir_measures", "to_ranx"]

_RANX = {"nDCG": "ndcg", "P": "precision", "R": "recall", "RR": "mrr", "AP": "map",
         "Rprec": "r-precision", "Bpref": "bpref", "Success": "hit_rate"}
"""labeler's measure names → ranx's metric names (measures ranx lacks are left out)."""


def _ir_measures_name(result: ScoreResult, key: str) -> str:
    if not key.startswith("ndcg@"):
        return key   # already written as ir_measures writes it
    if result.ideal != "qrels":
        raise ConfigError("ir_measures has no NDCG whose ideal ranking comes from the run "
                          "(ideal='run'); score with the default ideal to convert")
    gain = "(dcg='exp-log2')" if result.gain == "exponential" else ""
    return f"nDCG{gain}@{key[5:]}"


def to_ir_measures(result: ScoreResult, perquery: bool = False) -> dict[str, Any]:
    """``{run: {Measure: mean}}``, or with ``perquery`` ``{run: [Metric(query_id, measure,
    value), ...]}`` (needs ir_measures).

    Usage: ``to_ir_measures(res)["bm25"][ir_measures.AP]``
    """
    import ir_measures

    runs = result.to_dict()["runs"]
    out: dict[str, Any] = {}
    for name, entry in runs.items():
        measures = {key: ir_measures.parse_measure(_ir_measures_name(result, key))
                    for key in entry}
        if perquery:
            out[name] = [ir_measures.Metric(str(q), measures[key], float(v))
                         for key, block in entry.items() for q, v in block["per_query"].items()]
        else:
            out[name] = {measures[key]: block["mean"] for key, block in entry.items()}
    return out


def ranx_metric(result: ScoreResult, key: str) -> str | None:
    """ranx's name of the figure ``key`` (``ndcg@10``, ``precision@10-l2``, ``map``), None
    where ranx has no such metric."""
    if key.startswith("ndcg@"):
        if result.ideal != "qrels":
            return None
        return ("ndcg_burges@" if result.gain == "exponential" else "ndcg@") + key[5:]
    measure = next((m for m in result.measures if m.key == key), None)
    if measure is None or measure.name not in _RANX:
        return None
    name = _RANX[measure.name] + (f"@{measure.cutoff}" if measure.cutoff is not None else "")
    return name + (f"-l{measure.rel}" if measure.rel != 1 else "")


def to_ranx(result: ScoreResult, *, stat_test: str = "student", max_p: float = 0.01,
            n_permutations: int = 1000, random_seed: int = 42, rounding_digits: int = 3
            ) -> Any:
    """A ``ranx.Report`` of the runs (needs ranx): for each figure ranx knows, the mean over
    the queries every run has a value for, ranx's paired test (``stat_test``: ``student``,
    ``fisher`` or ``tukey``) at ``max_p``, and win/tie/loss counts.

    Usage: ``print(to_ranx(res, max_p=0.05))``
    """
    from ranx.data_structures import Report
    from ranx.statistical_tests import compute_statistical_significance

    runs = result.to_dict()["runs"]
    names = list(runs)
    keys = [k for k in (runs[names[0]] if names else {}) if ranx_metric(result, k)]
    if not keys:
        raise ConfigError("none of the figures is a metric ranx has (ranx has NDCG, P, R, "
                          "RR, AP, R-prec, bpref and Success)")
    metrics = [str(ranx_metric(result, k)) for k in keys]
    scores: dict[str, dict[str, np.ndarray]] = {name: {} for name in names}
    for key, metric in zip(keys, metrics):
        shared = set.intersection(*(set(runs[n][key]["per_query"]) for n in names))
        queries = sorted(shared)
        for name in names:
            per_query = runs[name][key]["per_query"]
            scores[name][metric] = np.array([per_query[q] for q in queries], dtype="float64")
    comparisons = compute_statistical_significance(
        model_names=names, metric_scores=scores, stat_test=stat_test,
        n_permutations=n_permutations, max_p=max_p, random_seed=random_seed)
    win_tie_loss: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    for a in names:
        for b in names:
            if a != b:
                win_tie_loss[(a, b)] = {m: {"W": int(np.sum(scores[a][m] > scores[b][m])),
                                            "T": int(np.sum(scores[a][m] == scores[b][m])),
                                            "L": int(np.sum(scores[a][m] < scores[b][m]))}
                                        for m in metrics}
    results = {name: {m: float(np.mean(scores[name][m])) if len(scores[name][m]) else
                      float("nan") for m in metrics} for name in names}
    return Report(model_names=names, results=results, comparisons=comparisons, metrics=metrics,
                  max_p=max_p, win_tie_loss=win_tie_loss, rounding_digits=rounding_digits,
                  stat_test=stat_test)
