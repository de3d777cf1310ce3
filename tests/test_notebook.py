"""notebooks/tour.ipynb runs from top to bottom and shows its tables and plots."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "tour.ipynb"
QUICK_EXIT = {"shutdown_kernel": "immediate"}
"""Every output is in once the last cell ran: the kernel is stopped at once, not waited for."""


def _outputs(cell: dict) -> tuple[str, list[bytes]]:
    text, images = [], []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            text.append(out.get("text", ""))
        data = out.get("data", {})
        text.append(data.get("text/plain", ""))
        text.append(data.get("text/html", ""))
        if "image/png" in data:
            images.append(base64.b64decode(data["image/png"]))
    return "".join(t if isinstance(t, str) else "".join(t) for t in text), images


def test_tour_notebook_executes_with_plots(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the tour's report goes to a temp dir
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}},
                                     **QUICK_EXIT)
    client.execute()

    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not any(o.get("output_type") == "error" for o in c.outputs) for c in code)
    text = "\n".join(_outputs(c)[0] for c in code)
    images = [img for c in code for img in _outputs(c)[1]]
    assert "Kendall's tau" in text and "swap" in text
    assert "p_exp_bert" in text and "cohen_kappa" in text
    assert len(images) >= 3  # confusion matrix, scatter, per-query deltas
    assert all(img.startswith(b"\x89PNG") for img in images)
    reports = list(tmp_path.glob("labeler-tour-*/report.html"))
    assert len(reports) == 1 and "<img" in reports[0].read_text(encoding="utf-8")


def test_label_in_a_notebook_shows_progress_without_widgets(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")

    source = """
import pandas as pd
import labeler
from labeler.testing import FakeLLMServer
pairs = pd.DataFrame({"query_id": ["1", "1", "2"], "query": ["bm25", "bm25", "dense"],
                      "chunk_id": ["a", "b", "c"], "chunk": ["BM25 ranks", "other", "dense"]})
with FakeLLMServer() as srv:
    result = labeler.label(pairs, model="fake-judge", base_url=srv.base_url, no_cache=True)
result
"""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}},
                            **QUICK_EXIT).execute()
    outputs = nb.cells[0].outputs
    text, _ = _outputs(nb.cells[0])
    assert not any(o.get("output_type") == "error" for o in outputs)
    assert "labelling 3/3" in text and "done" in text        # the progress line, updated
    assert "ipywidgets" not in text and "IProgress" not in text
    assert "<table>" in text and "labelled 3 pairs" in text  # the result renders as a table
