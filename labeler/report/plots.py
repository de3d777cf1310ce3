"""Plots of a human-vs-LLM comparison, as matplotlib figures or inline PNG data URIs.

Figures are built on :class:`matplotlib.figure.Figure` with the Agg canvas, never through
``pyplot``: no global backend is touched, at import or later, and nothing opens a window.
In a notebook a returned figure displays itself.

Usage::

    from labeler.report import plots
    fig = plots.ndcg_scatter(comparison.to_dict())
    uri = plots.to_data_uri(fig)          # "data:image/png;base64,..." for <img src>
"""

from __future__ import annotations

import base64
import io as _io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from labeler.report.shapes import HasDict


_BLUE = "#2c6fbb"
_ORANGE = "#d9822b"
_GREY = "#888888"
_MAX_LABEL = 28


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _label(text: Any) -> str:
    """Data text safe for matplotlib: no mathtext (``$``), no overlong labels."""
    s = " ".join(str(text).split())
    if len(s) > _MAX_LABEL:
        s = s[:_MAX_LABEL - 1] + "…"
    return s.replace("$", r"\$")


def scatter_points(data: Mapping[str, Any]) -> dict[str, Any]:
    """What the scatter plots, from a comparison's plain data (``to_dict()``): per run
    (``systems``) ``x`` with its interval ``x_ci`` and ``y`` with ``y_ci``, and ``ppi``.
    x is the mean under human labels — with PPI, the prediction-powered estimate of it —
    and y the mean under LLM labels over all the run's queries.

    Usage: ``scatter_points(comparison.to_dict())["x"]``
    """
    runs: Mapping[str, Mapping[str, Any]] = data.get("runs") or {}
    ppi = any(r.get("ppi") for r in runs.values())
    out: dict[str, Any] = {"systems": [], "x": [], "x_ci": [], "y": [], "y_ci": [], "ppi": ppi}
    for tag, r in runs.items():
        p = r.get("ppi") or {}
        x, x_ci = (p.get("estimate"), p.get("ci")) if ppi else (r.get("human"), r.get("human_ci"))
        if x is None or r.get("llm") is None:
            continue
        out["systems"].append(tag)
        out["x"].append(float(x))
        out["x_ci"].append(x_ci)
        out["y"].append(float(r["llm"]))
        out["y_ci"].append(r.get("llm_ci"))
    return out


def ndcg_scatter(comparison: HasDict | Mapping[str, Any]) -> Figure:
    """Each run's mean NDCG@k under human (x) and LLM (y) labels with its 95% interval under
    each label set as error bars, and the diagonal y = x. With PPI, x is the PPI estimate
    and its interval. Takes a comparison or its plain data (``to_dict()``)."""
    data = comparison if isinstance(comparison, Mapping) else comparison.to_dict()
    k = data.get("k")
    pts = scatter_points(data)
    fig = _figure(5.6, 4.8)
    ax = fig.add_subplot()
    x, y = np.asarray(pts["x"], dtype=float), np.asarray(pts["y"], dtype=float)
    xerr, yerr = _bars(x, pts["x_ci"]), _bars(y, pts["y_ci"])
    runs = {"system": pts["systems"]}
    lo = float(min((x - xerr[0]).min(), (y - yerr[0]).min())) if len(x) else 0.0
    hi = float(max((x + xerr[1]).max(), (y + yerr[1]).max())) if len(x) else 1.0
    pad = max(0.03, (hi - lo) * 0.08)
    lo, hi = max(0.0, lo - pad), hi + pad
    ax.plot([lo, hi], [lo, hi], color=_GREY, linestyle="--", linewidth=1,
            label="same under both (y = x)")
    if len(x):
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="none", ecolor=_BLUE, alpha=0.45,
                    elinewidth=1.2, capsize=3, zorder=2, label="95% interval over queries")
    ax.scatter(x, y, s=46, color=_BLUE, zorder=3, edgecolor="white", linewidth=0.8)
    named = _runs_to_name(list(runs["system"]), x, y)
    for tag, xi, yi in zip(runs["system"], x, y):
        if tag in named:
            ax.annotate(_label(tag), (xi, yi), xytext=(5, 4), textcoords="offset points",
                        fontsize=8, color="#333333")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal", adjustable="box")
    what = data.get("measure") or f"NDCG@{k}"
    if pts["ppi"]:
        ax.set_xlabel(f"mean {what}, human labels (PPI estimate)")
        ax.set_ylabel(f"mean {what}, LLM labels (all queries)")
        ax.set_title("Runs: PPI estimates vs LLM labels", fontsize=11)
    else:
        ax.set_xlabel(f"mean {what}, human labels")
        ax.set_ylabel(f"mean {what}, LLM labels")
        ax.set_title("Runs: human vs LLM labels", fontsize=11)
    ax.grid(alpha=0.25)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    if len(named) < len(x):
        ax.text(0.99, 0.01, f"named: the top {SCATTER_TOP} under each label set and the run "
                "the labels move most", ha="right", va="bottom", fontsize=7, color=_GREY,
                transform=ax.transAxes)
    if not len(x):
        ax.text(0.5, 0.5, "no run has a mean under both label sets", ha="center",
                va="center", transform=ax.transAxes, color=_GREY)
    return fig


SCATTER_TOP = 3
"""With more than 6 runs, the scatter names only the top runs under each label set and the
one whose mean the LLM labels move most (all names overlap otherwise)."""


def _runs_to_name(systems: list[str], x: np.ndarray, y: np.ndarray) -> set[str]:
    """The runs whose points get a name: all of up to 6, else the leaders and the outlier."""
    if len(systems) <= 6:
        return set(systems)
    keep = {systems[i] for i in np.argsort(-x, kind="stable")[:SCATTER_TOP]}
    keep |= {systems[i] for i in np.argsort(-y, kind="stable")[:SCATTER_TOP]}
    keep.add(systems[int(np.argmax(np.abs(y - x)))])
    return keep


def _bars(means: np.ndarray, cis: Sequence[Any]) -> np.ndarray:
    """Asymmetric error bars (2 × n: below, above) from each run's interval; 0 without one."""
    out = np.zeros((2, len(means)))
    for i, (mean, ci) in enumerate(zip(means, cis)):
        if ci is not None:
            out[:, i] = (max(mean - ci[0], 0.0), max(ci[1] - mean, 0.0))
    return out


BOX_RUNS = 20
"""The box plot of per-query deltas shows at most this many runs (those the LLM labels move
most, by mean |delta|); the histogram always holds every run."""


def delta_distribution(comparison: HasDict | Mapping[str, Any]) -> Figure:
    """Per-query deltas (LLM − human NDCG@k) of a comparison or its plain data
    (``to_dict()``): histogram of all, and a box per run.

    Usage: ``delta_distribution(comparison.to_dict())``
    """
    data = comparison if isinstance(comparison, Mapping) else comparison.to_dict()
    k = data["k"]
    by_run = {s: np.array([v["delta"] for v in qs.values() if v.get("delta") is not None],
                          dtype=float)
              for s, qs in (data.get("per_query") or {}).items()}
    by_run = {s: d for s, d in by_run.items() if len(d)}
    systems = list(by_run)
    n_all = len(systems)
    if n_all > BOX_RUNS:   # a box per run stays readable: the runs the labels move most
        moved = {s: float(np.abs(by_run[s]).mean()) for s in sorted(by_run)}
        keep = set(sorted(moved, key=lambda s: -moved[s])[:BOX_RUNS])
        systems = [s for s in systems if s in keep]
    fig = _figure(10.0, max(3.6, 1.2 + 0.32 * len(systems)))
    ax_hist, ax_box = fig.subplots(1, 2, width_ratios=[1.0, 1.2])
    deltas = np.concatenate(list(by_run.values())) if by_run else np.empty(0)
    if len(deltas):
        span = max(0.05, float(np.abs(deltas).max()))
        ax_hist.hist(deltas, bins=np.linspace(-span, span, 25), color=_BLUE, alpha=0.85,
                     edgecolor="white")
        groups = [by_run[s] for s in systems]
        style: dict[str, Any] = {
            "widths": 0.6, "patch_artist": True,
            "boxprops": {"facecolor": "#cfe0f3", "edgecolor": _BLUE},
            "medianprops": {"color": _ORANGE, "linewidth": 2},
            "flierprops": {"markersize": 3, "markeredgecolor": _GREY}}
        try:
            ax_box.boxplot(groups, orientation="horizontal", **style)
        except TypeError:  # matplotlib < 3.10
            ax_box.boxplot(groups, vert=False, **style)
        ax_box.set_yticks(range(1, len(systems) + 1), [_label(s) for s in systems],
                          fontsize=8)
        ax_box.invert_yaxis()
    else:
        for ax in (ax_hist, ax_box):
            ax.text(0.5, 0.5, "no query is scored under both label sets", ha="center",
                    va="center", transform=ax.transAxes, color=_GREY)
    for ax in (ax_hist, ax_box):
        ax.grid(alpha=0.25)
    ax_hist.axvline(0, color=_GREY, linestyle="--", linewidth=1)
    ax_box.axvline(0, color=_GREY, linestyle="--", linewidth=1)
    ax_hist.set_xlabel(f"NDCG@{k} delta per query (LLM − human)")
    ax_hist.set_ylabel("queries × runs")
    ax_hist.set_title("Per-query deltas, all runs", fontsize=11)
    ax_box.set_xlabel(f"NDCG@{k} delta per query (LLM − human)")
    ax_box.set_title("Per-query deltas by run" if n_all <= BOX_RUNS else
                     f"Per-query deltas: the {BOX_RUNS} of {n_all} runs moved most", fontsize=11)
    return fig


def confusion_heatmap(matrix: Sequence[Sequence[int]], grades: Sequence[int] = (0, 1, 2, 3)
                      ) -> Figure:
    """The agreement confusion matrix: rows human grades, columns LLM grades, counts shown."""
    m = np.asarray(matrix, dtype=float)
    fig = _figure(4.6, 4.2)
    ax = fig.add_subplot()
    image = ax.imshow(m, cmap="Blues", vmin=0)
    fig.colorbar(image, ax=ax, shrink=0.8, label="pairs")
    top = m.max() if m.size else 0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(j, i, f"{int(m[i, j])}", ha="center", va="center", fontsize=10,
                    color="white" if top and m[i, j] > top * 0.55 else "#222222")
    ax.set_xticks(range(len(grades)), [str(g) for g in grades])
    ax.set_yticks(range(len(grades)), [str(g) for g in grades])
    ax.set_xlabel("LLM grade")
    ax.set_ylabel("human grade")
    ax.set_title("Human vs LLM grades", fontsize=11)
    return fig


def ideal_change(comparison: HasDict | Mapping[str, Any]) -> Figure:
    """Per query: human NDCG@k of the chunks ranked by LLM grade (1.0 = same ideal order),
    of a comparison or its plain data (``to_dict()``).

    Usage: ``ideal_change(comparison.to_dict())``
    """
    data = comparison if isinstance(comparison, Mapping) else comparison.to_dict()
    per_query = (data.get("ideal_ranking_change") or {}).get("per_query") or {}
    ideal = sorted(per_query.items(), key=lambda qv: (qv[1] is None, qv[1] or 0.0, qv[0]))
    fig = _figure(5.6, max(3.0, 1.1 + 0.22 * len(ideal)))
    ax = fig.add_subplot()
    ys = np.arange(len(ideal))
    ax.barh(ys, np.array([math.nan if v is None else v for _, v in ideal], dtype=float),
            color=_ORANGE, alpha=0.85)
    ax.set_yticks(ys, [_label(q) for q, _ in ideal], fontsize=7)
    ax.set_xlim(0, 1.02)
    ax.axvline(1.0, color=_GREY, linestyle="--", linewidth=1)
    ax.set_xlabel(f"NDCG@{data['k']} (human labels) of the LLM's ideal ranking")
    ax.set_title("How much the ideal ranking changes", fontsize=11)
    ax.grid(alpha=0.25, axis="x")
    if not len(ideal):
        ax.text(0.5, 0.5, "no query judged by both", ha="center", va="center",
                transform=ax.transAxes, color=_GREY)
    return fig


def to_png(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG bytes."""
    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def to_data_uri(fig: Figure, dpi: int = 110) -> str:
    """The figure as a ``data:image/png;base64,...`` URI (for a self-contained page)."""
    return "data:image/png;base64," + base64.b64encode(to_png(fig, dpi)).decode("ascii")
