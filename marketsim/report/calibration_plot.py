"""The plot ``marketsim calibrate`` saves: the real crowd against its simulated twin, per worker
(accuracy, and labels given), and the design curve (error at k labels per task, real draws
against the twin's replicates, with their standard errors)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.aggregation.crowd_stats import CrowdStats
from marketsim.aggregation.curve_choice import CurveChoice
from marketsim.record.files import write_bytes_atomic


def plot_fit(path: str | Path, real: CrowdStats, twin: CrowdStats, title: str,
             curve: CurveChoice | None = None) -> None:
    """Two panels, one point per worker: accuracy (real against simulated) and labels per
    worker, the diagonal a perfect twin; with ``curve``, a third: the design curve. Written
    atomically as PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10 if curve is None else 15, 4.6))
    FigureCanvasAgg(fig)
    left, right, *rest = fig.subplots(1, 2 if curve is None else 3)
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
    if curve is not None:
        plot_curve(rest[0], curve)
    fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    write_bytes_atomic(path, buf.getvalue())


def plot_curve(ax: Any, curve: CurveChoice) -> None:
    """Error % at each design (k labels per task, then the full data), majority vote and
    Dawid–Skene, real (solid) against twin (dashed), with two standard errors as bars."""
    x = np.arange(len(curve.real.designs))
    for (real, real_se, twin, twin_se), colour, method in zip(
            ((curve.real.vote, curve.real.vote_se, curve.twin.vote, curve.twin.vote_se),
             (curve.real.ds, curve.real.ds_se, curve.twin.ds, curve.twin.ds_se)),
            ("tab:orange", "tab:blue"), ("majority vote", "Dawid-Skene"), strict=True):
        ax.errorbar(x, 100 * real, yerr=200 * real_se, color=colour, marker="o",
                    label=f"{method}, real")
        ax.errorbar(x + 0.08, 100 * twin, yerr=200 * twin_se, color=colour, marker="s",
                    linestyle="--", label=f"{method}, twin")
    ax.set_xticks(x, curve.real.designs)
    ax.set(xlabel="labels per task", ylabel=f"error % (against the {curve.real.against})",
           title="design curve (bars: 2 standard errors)")
    ax.legend(fontsize=8)
