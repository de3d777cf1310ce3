"""The headline of a comparison in words: which run is best, how surely, and what the LLM
labels do to that — on the queries every run scores under both label sets, and saying how
many there are. A difference is called real only where its Holm-adjusted test says so;
"unresolved" is no evidence of a difference, which is not evidence of equality.

With ``--ppi`` the headline is PPI's (:func:`ppi_headline`): the best set, and what the LLM
labels alone do to it and to the differences PPI shows real.

Usage::

    from labeler.statistics.words import headline, ppi_headline
    headline(comparison.to_dict())
    ppi_headline(comparison.to_dict())
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any



def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _best(runs: Mapping[str, Mapping[str, Any]], label_set: str) -> str | None:
    """The run with the highest mean over the shared queries under ``label_set`` (ties: the
    first tag alphabetically)."""
    means = _finite_values({t: (r.get("shared") or {}).get(label_set) for t, r in runs.items()})
    return min(means, key=lambda t: (-means[t], t)) if means else None


def headline(data: Mapping[str, Any]) -> str:
    """One sentence: on the ``n`` queries every run scores under both label sets, which run
    has the highest mean under human labels, from how many runs it differs by a real
    (Holm-adjusted) difference, and what the LLM labels do to the order and the verdicts.
    From the comparison's plain data: ``runs`` (their ``shared`` means), ``pairs``,
    ``verdicts``, ``shared_queries`` and ``statistics.alpha``.

    Usage: ``headline(comparison.to_dict())`` → ``"On the 43 queries every run scores under
    both label sets, bert has the highest mean under human labels, ..."``
    """
    runs: Mapping[str, Mapping[str, Any]] = data.get("runs") or {}
    n = int(data.get("shared_queries") or 0)
    if len(runs) == 0:
        return "No run to compare."
    if n == 0:
        return ("No query is scored by every run under both label sets, so the runs are not "
                "ranked on common queries (use --complete to count a query a run lacks as 0); "
                "each pair below is tested on the queries both of its runs score.")
    scope = (f"On the {_plural(n, 'query', 'queries')} every run scores under both label "
             f"sets" if len(runs) > 1 else
             f"On the {_plural(n, 'query', 'queries')} both label sets score")
    best = _best(runs, "human")
    if best is None:
        return f"{scope}, no run has a mean under human labels."
    if len(runs) < 2:
        return f"{scope}: only one run ({best}), so there is no order to compare."
    alpha = float(data["statistics"]["alpha"])
    mine = [p for p in data.get("pairs") or () if best in (p["a"], p["b"])]
    ahead = 0
    for p in mine:
        h = p.get("human") or {}
        delta, p_adj = _finite(h.get("delta")), _finite(h.get("p_adjusted"))
        sign = 1.0 if p["a"] == best else -1.0
        ahead += (p_adj is not None and p_adj < alpha and delta is not None
                  and sign * delta > 0)
    tested = len(mine)
    if ahead:
        first = (f"{scope}, {best} has the highest mean under human labels and is ahead of "
                 f"{ahead} of the {_plural(tested, 'run', 'runs')} it was tested against by a "
                 f"real difference")
    else:
        first = (f"{scope}, {best} has the highest mean under human labels, but no difference "
                 f"between it and another run is real at this sample size (unresolved: no "
                 f"evidence of a difference, which is not evidence of none)")
    llm_best = _best(runs, "llm")
    second = ("the LLM labels keep it first" if llm_best == best else
              f"the LLM labels put {llm_best} first")
    c: Mapping[str, int] = data.get("verdicts") or {}
    wrong = []
    if c["llm-only"]:
        wrong.append("call " + _plural(c["llm-only"], "difference", "differences")
                     + " real that the human labels do not (llm-only)")
    if c["reversed"]:
        wrong.append("reverse " + _plural(c["reversed"], "real difference",
                                          "real differences"))
    if c["human-only"]:
        wrong.append("miss " + _plural(c["human-only"], "real difference",
                                       "real differences") + " (human-only)")
    if wrong:
        third = "but " + _join(wrong)
    elif c["confirmed"]:
        third = "and agree on " + ("the one real difference" if c["confirmed"] == 1
                                   else f"all {c['confirmed']} real differences")
    else:
        third = "and neither label set finds a real difference"
    return f"{first}; {second} {third}."


BEST_SET_HOW = "simultaneous 95% intervals of the prediction-powered pair differences"
"""How the best set is chosen, in the headline's words."""


def ppi_headline(data: Mapping[str, Any]) -> str:
    """The headline with ``--ppi``, from the comparison's plain data (``runs`` with their
    ``ppi`` estimates and LLM means, ``pairs`` with their PPI verdicts, ``ranking`` with its
    ``best_set`` when it has one): on how many queries (and how many labelled by people),
    which run is best — the best set, named; without one, the highest estimate and the runs
    it is shown to beat — and what the LLM labels alone do to that and to the differences
    PPI shows real.

    Usage: ``ppi_headline(comparison.to_dict())`` → ``"On the 43 queries, 10 of them
    labelled by people at random, the best run is one of A and B (...); ..."``
    """
    runs: Mapping[str, Mapping[str, Any]] = data.get("runs") or {}
    est = _finite_values({t: (r.get("ppi") or {}).get("estimate") for t, r in runs.items()})
    if not runs:
        return "No run to compare."
    scope = _ppi_scope(runs)
    if not est:
        return f"{scope}, no run has a prediction-powered estimate."
    leader = min(est, key=lambda t: (-est[t], t))
    if len(runs) < 2:
        return f"{scope}: only one run ({leader}), so there is no order to compare."
    best: list[str] = list((data.get("ranking") or {}).get("best_set") or [])
    resolved = []  # (winner, loser) of every pair PPI resolves
    for p in data.get("pairs") or ():
        v = (p.get("ppi") or {}).get("verdict")
        if v in ("a-better", "b-better"):
            resolved.append((p["a"], p["b"]) if v == "a-better" else (p["b"], p["a"]))
    if best:
        names = sorted(best, key=lambda t: (-est.get(t, -1.0), t))
        first = (f"{scope}, {names[0]} is the best run (no other run is shown to beat it: "
                 f"{BEST_SET_HOW})" if len(names) == 1 else
                 f"{scope}, the best run is one of {_join(_few(names))} (no other run is "
                 f"shown to beat them: {BEST_SET_HOW})")
    else:
        ahead = sum(1 for w, _ in resolved if w == leader)
        others = len(runs) - 1
        of = ("the other run" if others == 1 else f"all {others} other runs" if ahead == others
              else f"{ahead} of the {others} other runs")
        first = (f"{scope}, {leader} has the highest prediction-powered estimate"
                 + (f" and is ahead of {of} by a real difference" if ahead else
                    ", but no difference between it and another run is real at this sample "
                    "size (no evidence of a difference, which is not evidence of none)"))
    llm = _finite_values({t: r.get("llm") for t, r in runs.items()})
    if llm:
        llm_first = min(llm, key=lambda t: (-llm[t], t))
        inside = bool(best) and llm_first in best
        second = (f"the LLM labels alone also put {llm_first} first" if (
            (best and len(best) == 1 and inside) or (not best and llm_first == leader)) else
            f"the LLM labels alone put {llm_first} first"
            + (" (one of them)" if inside else ""))
    else:
        second = "the LLM labels give no run a mean"
    reversed_ = sum(1 for w, lo in resolved if (_llm_difference(data, w, lo) or 0.0) < 0)
    if not resolved:
        third = "and PPI shows no difference between two runs real at this sample size"
    elif reversed_:
        what = _plural(len(resolved), "difference", "differences")
        third = ("and reverse " + (f"{reversed_} of the {what}" if reversed_ < len(resolved)
                                   else "the one difference" if reversed_ == 1
                                   else "both differences" if reversed_ == 2
                                   else f"all {reversed_} differences") + " PPI shows real")
    else:
        third = ("and agree with " + ("the one difference" if len(resolved) == 1 else
                                      f"all {len(resolved)} differences") + " PPI shows real")
    return f"{first}; {second} {third}."


def _llm_difference(data: Mapping[str, Any], first: str, second: str) -> float | None:
    """LLM NDCG of ``first`` minus ``second`` on the queries both score (0 where a run's LLM
    labels have no relevant chunk, as PPI counts it); the runs' LLM means without
    ``per_query``."""
    pq: Mapping[str, Mapping[str, Mapping[str, Any]]] = data.get("per_query") or {}
    if first in pq and second in pq:
        shared = set(pq[first]) & set(pq[second])
        diffs = [(pq[first][q].get("llm") or 0.0) - (pq[second][q].get("llm") or 0.0)
                 for q in shared]
        return sum(diffs) / len(diffs) if diffs else None
    runs = data.get("runs") or {}
    a, b = _finite((runs.get(first) or {}).get("llm")), _finite((runs.get(second) or {}).get("llm"))
    return None if a is None or b is None else a - b


def _ppi_scope(runs: Mapping[str, Mapping[str, Any]]) -> str:
    """``"On the 43 queries, 10 of them labelled by people at random"`` (ranges when the
    runs cover different queries)."""
    sizes = set()
    for r in runs.values():
        p = r.get("ppi") or {}
        if p.get("n_labelled") is not None and p.get("n_unlabelled") is not None:
            sizes.add((int(p["n_labelled"]), int(p["n_labelled"]) + int(p["n_unlabelled"])))
    if not sizes:
        return "On the queries the LLM labels cover"
    if len(sizes) == 1:
        (n, big_n), = sizes
        return (f"On the {_plural(big_n, 'query', 'queries')}, {n} of them labelled by people "
                f"at random")
    ns, big = sorted(n for n, _ in sizes), sorted(b for _, b in sizes)
    return (f"On each run's own queries ({big[0]}–{big[-1]}, of which {ns[0]}–{ns[-1]} "
            f"labelled by people at random)")


def _few(names: list[str], most: int = 8) -> list[str]:
    return names if len(names) <= most else [*names[:most], f"{len(names) - most} more"]


def _finite_values(values: Mapping[str, Any]) -> dict[str, float]:
    """The finite ones of ``values``, as floats."""
    out = {}
    for tag, v in values.items():
        f = _finite(v)
        if f is not None:
            out[tag] = f
    return out


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
