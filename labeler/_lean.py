"""Keep pandas out of a start-up that does not need it (``labeler score`` on plain files).

pyarrow tries to import pandas (~0.3 s) at its first conversion, to recognise pandas objects;
while pandas is not imported nothing can be a pandas object, so the attempt may fail, cheaply.
Inside :func:`without_pandas`, an import of pandas by pyarrow or by a module declared lean
(:func:`declare_lean`) fails with ``ImportError``; code there that needs pandas runs under
:func:`allow_pandas`. Any other module that imports pandas gets it, and the refusal ends.

The allow-list is explicit: a module (or a package, its name ending in ``.``) declares itself
lean where it is defined, and nothing else is ever refused.

Usage::

    from labeler._lean import allow_pandas, declare_lean, without_pandas
    declare_lean(__name__)                 # this module scores without pandas
    with without_pandas():
        table.column("score").to_numpy()   # pyarrow does not import pandas
        with allow_pandas():
            frame = read_odd_file(path)    # this part needs it
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["allow_pandas", "declare_lean", "is_lean", "without_pandas"]

_LEAN: set[str] = {"pyarrow", "pyarrow.", "labeler._arrow"}
"""pyarrow itself and labeler's Arrow helpers; modules add themselves with declare_lean."""


def declare_lean(*names: str) -> None:
    """Declare modules lean: inside :func:`without_pandas` their imports of pandas fail. A
    name ending in ``.`` declares a whole package (``"labeler.scoring."``).

    Usage: ``declare_lean(__name__)``
    """
    _LEAN.update(names)


def is_lean(module: str) -> bool:
    """Whether ``module`` was declared lean (itself, or a package it is in)."""
    return module in _LEAN or any(p.endswith(".") and module.startswith(p) for p in _LEAN)


class _NoPandas:
    """The meta-path finder of :func:`without_pandas`: refuses ``pandas`` to lean importers
    (the importer is the first frame outside the import machinery)."""

    def __init__(self) -> None:
        self.on = False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if not self.on or not (name == "pandas" or name.startswith("pandas.")):
            return None
        frame: Any = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
            frame = frame.f_back   # the import machinery's own frames
        importer = "" if frame is None else str(frame.f_globals.get("__name__", ""))
        if is_lean(importer):
            raise ImportError("pandas is not needed here (labeler's pandas-free path)")
        self.on = False   # a module that needs pandas: it is imported from now on
        return None


_BLOCK_PANDAS = _NoPandas()


def _pyarrow_looks_again() -> None:
    """pyarrow remembers a failed pandas import; one conversion makes it look again."""
    import pyarrow as pa

    pa.table({"_": pa.array([0])}).to_pandas()


@contextmanager
def without_pandas() -> Iterator[None]:
    """Use pyarrow and the lean modules without importing pandas, when nothing has imported
    it yet; code that needs pandas inside runs under :func:`allow_pandas` (or imports it
    from a module that is not lean, which lifts this).

    Usage: ``with without_pandas(): table.column("score").to_numpy()``
    """
    if "pandas" in sys.modules or _BLOCK_PANDAS.on:
        yield
        return
    sys.meta_path.insert(0, _BLOCK_PANDAS)
    _BLOCK_PANDAS.on = True
    try:
        yield
    finally:
        _BLOCK_PANDAS.on = False
        if _BLOCK_PANDAS in sys.meta_path:
            sys.meta_path.remove(_BLOCK_PANDAS)
        if "pandas" in sys.modules:
            _pyarrow_looks_again()


@contextmanager
def allow_pandas() -> Iterator[None]:
    """Lift :func:`without_pandas` for code that needs pandas, and let pyarrow see it.

    Usage: ``with allow_pandas(): df = io.read_run(path)``
    """
    blocked = _BLOCK_PANDAS.on
    _BLOCK_PANDAS.on = False
    try:
        if blocked:
            _pyarrow_looks_again()
        yield
    finally:
        if blocked and "pandas" not in sys.modules:
            _BLOCK_PANDAS.on = True
