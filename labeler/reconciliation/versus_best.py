"""Is the best judge really better? The top judge against each other judge, on the same pairs.

For each other judge: the difference of Krippendorff's ordinal alpha (best minus other; and of
Cohen's quadratic kappa) on the pairs every judge and the humans graded, its 95% interval and
p-value from a paired bootstrap (the same resampled queries for both judges;
:mod:`labeler.statistics.versus`), and Holm's adjustment over the comparisons. A judge is
*worse* than the best when its Holm-adjusted p is below ``alpha`` (and the best's alpha is the
higher); the others are *not shown worse*, which is not evidence that they are as good.

Usage::

    from labeler.reconciliation.versus_best import versus_best
    rows = versus_best(grades, ["gpt4o", "llama"], bootstrap=1000, seed=0)
    rows[0]["delta_alpha"], rows[0]["p_adjusted"], rows[0]["worse"]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from labeler.statistics import bootstrap as boot
from labeler.statistics.pairs import holm
from labeler.statistics.versus import paired_difference

__all__ = ["DEFAULT_ALPHA", "method", "versus_best"]

DEFAULT_ALPHA = 0.05
_ALPHA, _KAPPA = "krippendorff_alpha_ordinal", "cohen_kappa_quadratic"


def versus_best(grades: pd.DataFrame, order: list[str], *, bootstrap: int, seed: int,
                unit: str = "query", alpha: float = DEFAULT_ALPHA) -> list[dict[str, Any]]:
    """One entry per judge after the first of ``order`` (the best):
    ``{"judge", "delta_alpha", "ci", "p", "p_adjusted", "worse", "kappa_quadratic": {"delta",
    "ci", "p", "p_adjusted"}}``; ``ci``, ``p`` and ``worse`` are None without a bootstrap.

    ``grades``: one row per common pair, ``query_id``, ``human`` and one column per judge
    (named as in ``order``). ``unit``: ``query`` (whole queries resampled, the default) or
    ``pair``; replicate b draws what the agreement intervals' replicate b draws (same seed).

    Usage: ``versus_best(grades, board.order, bootstrap=1000, seed=0)``
    """
    if len(order) < 2:
        return []
    h = grades["human"].to_numpy(dtype="int64")
    codes, _ = pd.factorize(grades["query_id"], sort=True)
    judged = {name: grades[name].to_numpy(dtype="int64") for name in order}
    tables = {name: boot.query_tables(h, g, codes) for name, g in judged.items()}
    counts = (boot.query_resample_counts(tables[order[0]].shape[0], bootstrap, seed)
              if bootstrap and unit == "query" else None)
    drawn = (boot.pair_resample_tables(h, judged[order[0]], bootstrap, seed)
             if bootstrap and unit == "pair" else None)
    raw = []
    for name in order[1:]:
        pair_tables = (None if drawn is None else
                       (drawn, boot.pair_resample_tables(h, judged[name], bootstrap, seed)))
        raw.append(paired_difference(tables[order[0]], tables[name], counts=counts,
                                     pair_tables=pair_tables))
    adjusted = {stat: holm([d[stat]["p"] for d in raw]) for stat in (_ALPHA, _KAPPA)}
    rows = []
    for i, (name, d) in enumerate(zip(order[1:], raw)):
        a, k, p_adj = d[_ALPHA], d[_KAPPA], adjusted[_ALPHA][i]
        rows.append({
            "judge": name, "delta_alpha": _finite(a["delta"]), "ci": a["ci"], "p": a["p"],
            "p_adjusted": p_adj,
            "worse": None if p_adj is None else bool(p_adj < alpha and a["delta"] > 0),
            "kappa_quadratic": {"delta": _finite(k["delta"]), "ci": k["ci"], "p": k["p"],
                                "p_adjusted": adjusted[_KAPPA][i]}})
    return rows


def method(*, bootstrap: int, seed: int, unit: str, alpha: float) -> dict[str, Any]:
    """What ``versus_best`` did, for the JSON: ``{"statistic", "bootstrap", "n_resamples",
    "seed", "unit", "alpha", "adjustment"}``."""
    return {"statistic": _ALPHA, "bootstrap": "paired, studentized", "n_resamples": bootstrap,
            "seed": seed, "unit": unit, "alpha": alpha, "adjustment": "holm"}


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
