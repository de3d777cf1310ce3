"""`labeler sample --more M --from SHEET_OR_DESIGN`: the next M queries of an earlier random
sample's order, as a new sheet; the design file is updated.

Usage::

    labeler sample --unit query --labels labels.jsonl --n 10 --out sheets/to_annotate.csv
    labeler sample --more 15 --from sheets/to_annotate.csv      # -> sheets/to_annotate-2.csv
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from labeler.cli.options import InputFormats
from labeler.errors import ConfigError, InputError


def sample_more(ctx: click.Context, more: int | None, from_path: Path | None,
                labels_path: Path | None, out: Path | None, human_paths: tuple[Path, ...],
                texts: Mapping[str, Path | None], fmt: tuple[str, ...],
                show_llm_grade: bool) -> None:
    """Draw ``more`` further queries of the design at (or next to) ``from_path``."""
    from click.core import ParameterSource

    from labeler import io
    from labeler.cli.options import read_humans
    from labeler.cli.sheet_texts import _texts, _warn_ids_only
    from labeler.io.guard import check_outputs
    from labeler.reconciliation.agreement import read_human, read_llm
    from labeler.reconciliation.design import (design_path, from_design, more_queries,
                                               next_sheet, read_design, relative_name,
                                               write_design)
    from labeler.reconciliation.sample import annotation_sheet

    if more is None or from_path is None:
        raise ConfigError("--more and --from go together: how many more queries, and the "
                          "earlier sheet (or its design.json)")
    for flag, name in (("--n", "n"), ("--seed", "seed"), ("--by", "by")):
        if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
            raise ConfigError(f"{flag} does not go with --more: the earlier sample's design "
                              f"fixes the random order")
    if ctx.params.get("unit") == "pair" and \
            ctx.get_parameter_source("unit") == ParameterSource.COMMANDLINE:
        raise ConfigError("--more extends a sample of whole queries (--unit query)")
    dfile = design_path(from_path)
    design = read_design(dfile)
    check_design_sheets(design, dfile)
    if labels_path is None:
        if design.labels is None:
            raise ConfigError(f"the design {dfile} does not name its label records; give "
                              f"--labels")
        labels_path = (dfile.parent / design.labels)
    if not any(texts.values()) and design.texts:   # the first draw's texts, as recorded
        texts = {**texts, **{k: Path(from_design(v, dfile.parent))
                             for k, v in design.texts.items()}}
    if out is None:
        out = next_sheet(dfile, design.draws[0].sheet if design.draws else None,
                          len(design.draws) + 1)
    check_outputs({"--labels": labels_path, "--human": list(human_paths), "--from": from_path,
                   **{f"--{k}": v for k, v in texts.items()}}, {"--out": out})
    if out.resolve() == dfile.resolve():
        raise ConfigError(f"--out {out} is the design file; choose another path")
    formats = InputFormats(fmt, {"labels": labels_path, "human": list(human_paths), **texts})
    with formats:
        labels = read_llm(labels_path, fmt=formats["labels"])
        pairs = _texts(texts["pairs"], texts["queries"], texts["corpus"], labels, formats)
        human = (read_humans(read_human, human_paths, None, formats["human"])
                 if human_paths else None)
    if from_path.suffix.lower() != ".json" and from_path.is_file():
        _check_sheet(from_path, set(design.queries), dfile)
    got = more_queries(labels, design, m=more, pairs=pairs, human=human, source=dfile)
    _warn_ids_only(got.pairs)
    io.write_table(annotation_sheet(got.pairs, show_llm_grade), out)
    after = got.design
    after.draws[-1].sheet = relative_name(out, dfile.parent)
    write_design(after, dfile)
    click.echo(f"{len(got.pairs)} pairs of {more} more randomly drawn queries to label -> "
               f"{out}")
    click.echo(f"{after.drawn} of {len(after.permutation)} queries drawn so far, still a "
               f"simple random sample ({after.left} left) -> {dfile}")


def check_design_sheets(design: Any, design_file: Path) -> None:
    """A hand-edited ``design.json`` checked against the sheets it names before anything is
    drawn: its draws add up to ``drawn``, and no sheet holds a query beyond ``drawn`` (a
    rolled-back ``drawn`` would draw those queries again)."""
    if design.draws and sum(d.n for d in design.draws) != design.drawn:
        raise InputError(f"`drawn` is {design.drawn} but its draws add up to "
                         f"{sum(d.n for d in design.draws)}: the design was edited; restore "
                         "it or draw a new sample", path=design_file)
    drawn = set(design.queries)
    for draw in design.draws:
        sheet = design_file.parent / draw.sheet if draw.sheet else None
        if sheet is None or not sheet.is_file():
            continue
        ahead = sorted(_sheet_queries(sheet) - drawn)
        if ahead:
            raise InputError(f"its sheet {draw.sheet} holds {len(ahead)} queries beyond the "
                             f"{design.drawn} it says were drawn ({', '.join(ahead[:3])}): "
                             "was `drawn` rolled back? Drawing now would give them again",
                             path=design_file)


def _sheet_queries(sheet: Path) -> set[str]:
    """The query ids of a sheet (none when it is not a sheet this can read: then the design
    alone decides)."""
    from labeler import io

    try:
        return set(io.read_table(sheet)[0]["query_id"].astype(str))
    except (KeyError, InputError):
        return set()


def _check_sheet(sheet: Path, drawn: set[str], design_file: Path) -> None:
    """The sheet given with --from must hold queries the design has drawn."""
    stray = sorted(_sheet_queries(sheet) - drawn)
    if stray:
        raise InputError(f"the sheet has {len(stray)} queries its design {design_file} has not "
                         f"drawn ({', '.join(stray[:3])}): they do not belong together",
                         path=sheet)
