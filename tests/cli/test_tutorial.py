"""docs/tutorial.ipynb runs from top to bottom without a cell error, within a minute."""

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
    # The kernel must import this checkout's marketsim, and draw without a display.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.setenv("MPLBACKEND", "agg")
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
    assert re.search(r"capped (vs|is \w+ than) uniform", text), text[-2000:]
    assert seconds < 120, f"the tutorial took {seconds:.0f}s (keep it under a minute)"
