"""``labeler._lean``: inside ``without_pandas`` only the modules declared lean are refused
pandas; every other importer gets it. Each case runs in a fresh interpreter (this one has
pandas loaded already)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SETUP = """
import sys, types
from labeler._lean import allow_pandas, declare_lean, is_lean, without_pandas

def module(name, lean):
    mod = types.ModuleType(name)
    exec("def load():\\n    import pandas\\n    return pandas.__name__", mod.__dict__)
    sys.modules[name] = mod
    if lean:
        declare_lean(name)
    return mod
"""


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", SETUP + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_a_lean_module_is_refused_pandas_and_allow_pandas_lifts_it() -> None:
    out = _run("""
        lean = module("myscorer", lean=True)
        with without_pandas():
            try:
                lean.load()
                print("imported")
            except ImportError:
                print("refused")
            print("pandas" in sys.modules)
            with allow_pandas():
                print(lean.load())
        print("pandas" in sys.modules)
    """)
    assert out == ["refused", "False", "pandas", "True"]


def test_any_other_module_gets_pandas_and_ends_the_refusal() -> None:
    out = _run("""
        lean, other = module("myscorer", lean=True), module("reader", lean=False)
        with without_pandas():
            print(other.load())
            print(lean.load())   # pandas is loaded now: nothing left to keep out
        print(lean.load())
    """)
    assert out == ["pandas", "pandas", "pandas"]


@pytest.mark.parametrize(("name", "lean"), [("labeler.scoring.results", True),
                                            ("labeler.scoring", False),
                                            ("labeler.cli.score_cmd", True),
                                            ("labeler.cli.label_cmd", False),
                                            ("pyarrow.lib", True), ("pyarrowx", False)])
def test_the_allow_list_is_what_modules_declared(name: str, lean: bool) -> None:
    out = _run(f"""
        import labeler.scoring, labeler.cli.score_cmd
        print(is_lean({name!r}))
    """)
    assert out == [str(lean)]
