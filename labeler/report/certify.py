"""The certified leaderboard in words: terminal text, a Markdown and an HTML report section,
from the plain data of :meth:`labeler.reconciliation.certification.Certification.details`.

Usage::

    from labeler.report.certify import render_text, write_report
    print(render_text(certification.details()))
    write_report(certification.details(), "report/")
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from labeler.report.escape import md_escape, plain

TITLE = "Certified leaderboard"


def _cs(c: list[float]) -> str:
    return f"[{c[0]:.3f}, {c[1]:.3f}]"


def _verdict(p: Mapping[str, Any]) -> str:
    v = p["certified"]
    return (f"{p['a']} better" if v == "a-better" else f"{p['b']} better"
            if v == "b-better" else "not yet")


def headline(d: Mapping[str, Any]) -> str:
    """One sentence: what is proven after n of the N queries."""
    n, big_n, top = d["n"], d["N"], d["top"]
    order = top["order"]
    level = f"{1 - d['alpha']:.0%}"
    if top["certified"]:
        what = (f"{order[0]} is the best run" if top["k"] == 1 else
                f"the order of the best {top['k']} runs is {' > '.join(order)}")
        return (f"Certified after {n} of {big_n} queries: {what} (every sequence holds at "
                f"{level} however often you look).")
    nxt = d["next"]
    more = nxt["more_needed"]
    tail = (f" About {more} more of the design's queries would likely certify it." if more
            is not None else "")
    lead = (f"{order[0]} leads" if top["k"] == 1 else
            f"the best {top['k']} so far: {' > '.join(order)}")
    return f"Not certified yet after {n} of {big_n} queries: {lead}.{tail}"


def guarantee(d: Mapping[str, Any]) -> str:
    """What the intervals mean, in words."""
    level = f"{1 - d['alpha']:.0%}"
    return (f"Each interval is a {level} confidence sequence of the mean NDCG@{d.get('k', 10)} "
            f"over the design's {d['N']} queries under full human labelling: it holds at every "
            f"look, whenever you stop, for all runs and pairs at once (each at level "
            f"1 − {d.get('alpha_each', d['alpha']):.4g}). Estimates: mean LLM NDCG plus the mean "
            f"human − LLM difference on the labelled queries.")


def _rows(d: Mapping[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    runs = sorted(d["runs"].items(), key=lambda kv: (-kv[1]["estimate"], kv[0]))
    run_rows = [[t, f"{r['estimate']:.3f}", _cs(r["cs"])] for t, r in runs]
    known = d.get("known", {})
    pair_rows = [[f"{p['a']} − {p['b']}", f"{p['delta']:+.3f}", _cs(p["cs"]), _verdict(p),
                  str(known.get(f"{p['a']} − {p['b']}", 0))] for p in d["pairs"]]
    return run_rows, pair_rows


RUN_HEAD = ["run", "estimate", "sequence"]
PAIR_HEAD = ["pair", "difference", "sequence", "certified", "known zeros"]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    cells = [header, *[[plain(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in cells]


def _next_line(d: Mapping[str, Any]) -> str | None:
    q = d["next"]["queries"]
    if not q:
        return None
    shown = ", ".join(plain(x) for x in q[:10]) + (f", … {len(q) - 10} more" if len(q) > 10
                                                     else "")
    return f"Label next (the design's order): {shown}"


def render_text(d: Mapping[str, Any]) -> str:
    """The terminal view."""
    run_rows, pair_rows = _rows(d)
    lines = [plain(headline(d)), "", *_table(RUN_HEAD, run_rows)]
    if pair_rows:
        lines += ["", *_table(PAIR_HEAD, pair_rows)]
    nxt = _next_line(d)
    lines += ["", *([nxt] if nxt else []), guarantee(d), *[plain(n) for n in d.get("notes", [])]]
    return "\n".join(lines) + "\n"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]]


def render_markdown(d: Mapping[str, Any], level: int = 2) -> str:
    """The report section in Markdown (``level``: its heading level)."""
    run_rows, pair_rows = _rows(d)
    lines = [f"{'#' * level} {TITLE}", "", md_escape(headline(d)), "",
             *_md_table(RUN_HEAD, run_rows), ""]
    if pair_rows:
        lines += [*_md_table(PAIR_HEAD, pair_rows), ""]
    nxt = _next_line(d)
    lines += [*([md_escape(nxt), ""] if nxt else []), md_escape(guarantee(d)), ""]
    lines += [f"- {md_escape(n)}" for n in d.get("notes", [])]
    return "\n".join(lines).rstrip() + "\n"


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(d: Mapping[str, Any]) -> str:
    """The report section in HTML (every value escaped)."""
    run_rows, pair_rows = _rows(d)
    nxt = _next_line(d)
    parts = [f'<section class="certify"><h2>{TITLE}</h2>',
             f"<p><strong>{html.escape(headline(d))}</strong></p>",
             _html_table(RUN_HEAD, run_rows)]
    if pair_rows:
        parts.append(_html_table(PAIR_HEAD, pair_rows))
    if nxt:
        parts.append(f"<p>{html.escape(nxt)}</p>")
    parts.append(f"<p>{html.escape(guarantee(d))}</p>")
    parts += [f"<p>{html.escape(n)}</p>" for n in d.get("notes", [])]
    return "".join(parts) + "</section>"


def write_report(d: Mapping[str, Any], out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """``report.json``, ``report.md`` and ``report.html`` of the certified leaderboard in
    ``out_dir``, each written atomically."""
    from labeler import io
    from labeler.errors import InputError

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("the report directory is a file", path=out)
    paths = {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}
    page = ("<!doctype html><html><head><meta charset=\"utf-8\"><title>"
            f"{TITLE}</title></head><body>{render_html(d)}</body></html>\n")
    io.write_json(dict(d), paths["json"])
    io.write_text(f"# {TITLE}\n\n" + render_markdown(d, level=2).split("\n", 2)[2], paths["md"])
    io.write_text(page, paths["html"])
    return paths
