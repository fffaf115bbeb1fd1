"""docs/tutorial.ipynb runs from top to bottom without a cell error, within a minute, and its
plots display inline (image/png outputs, as Jupyter shows them)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[2]


def test_tutorial_notebook_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.read(ROOT / "docs" / "tutorial.ipynb", as_version=4)
    # The kernel must import this checkout's marketsim, and draw as Jupyter does: with the
    # inline backend (no display needed), whatever MPLBACKEND the test run has.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # plt.show() after a plot shows it too (a cell of this test's, not of the tutorial)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\nresult.plot(x='time')\nplt.show()"))
    started = time.perf_counter()
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT / "docs")}})
    client.execute()  # raises CellExecutionError naming the failing cell
    seconds = time.perf_counter() - started
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                   for o in outputs)
    assert "DawidSkene: error" in text
    # every cell that draws shows its figure as an image, not as "<Figure size ...>" text
    drawing = [cell for cell in nb.cells if cell.cell_type == "code" and ".plot(" in cell.source]
    assert len(drawing) >= 3
    for cell in drawing:
        assert any("image/png" in o.get("data", {}) for o in cell.outputs), cell.source
    assert not [o for o in outputs if "<Figure size" in str(o.get("data", {}).get(
        "text/plain", "")) + str(o.get("text", "")) and "image/png" not in o.get("data", {})]
    assert re.search(r"capped (vs|is \w+ than) uniform", text), text[-2000:]
    assert seconds < 120, f"the tutorial took {seconds:.0f}s (keep it under a minute)"
