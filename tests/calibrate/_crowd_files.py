"""The CSV files ``calibrate``'s tests hand it: a crowd's labels (``task,worker,label``, tasks
named ``t<i>`` and workers ``w<j>``) and, when given, its truth (``task,label``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_crowd(folder: Path, tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                truth: np.ndarray | None = None) -> tuple[Path, Path]:
    """``folder/crowd.csv`` of the labels and ``folder/truth.csv`` of ``truth`` (one row per
    task, in task order; not written when ``truth`` is None)."""
    crowd, gold = folder / "crowd.csv", folder / "truth.csv"
    crowd.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{x}\n" for t, w, x in zip(tasks, workers, labels, strict=True)))
    if truth is not None:
        gold.write_text("task,label\n" + "".join(f"t{t},{c}\n" for t, c in enumerate(truth)))
    return crowd, gold
