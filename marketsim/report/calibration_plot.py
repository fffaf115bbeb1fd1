"""The plot ``marketsim calibrate`` saves: the real crowd against its simulated twin, per worker
(accuracy, and labels given)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from marketsim.aggregation.crowd_stats import CrowdStats
from marketsim.record.files import write_bytes_atomic


def plot_fit(path: str | Path, real: CrowdStats, twin: CrowdStats, title: str) -> None:
    """Two panels, one point per worker: accuracy (real against simulated) and labels per
    worker; the diagonal is a perfect twin. Written atomically as PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.6))
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    size = np.sqrt(np.maximum(real.labels_per_worker, 1))
    left.scatter(real.worker_accuracy, twin.worker_accuracy, s=4 + 2 * size, alpha=0.6)
    left.plot([0, 1], [0, 1], color="grey", lw=0.8)
    left.set(xlabel="real accuracy", ylabel="simulated accuracy", xlim=(0, 1.02),
             ylim=(0, 1.02), title="per-worker accuracy (size: labels given)")
    top = max(int(real.labels_per_worker.max(initial=1)),
              int(twin.labels_per_worker.max(initial=1)))
    right.scatter(real.labels_per_worker, twin.labels_per_worker, s=10, alpha=0.6)
    right.plot([0, top], [0, top], color="grey", lw=0.8)
    right.set(xlabel="real labels", ylabel="simulated labels", title="labels per worker")
    fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    write_bytes_atomic(path, buf.getvalue())
