"""The sweep report: labels needed to reach each target error, per arm, against the swept
parameters (``sweep.csv``, ``sweep.json`` and ``labels_needed_vs_sweep.png``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from marketsim.record.files import (
    write_bytes_atomic,
    write_csv_atomic,
    write_json_atomic,
    write_text_atomic,
)
from marketsim.record.metric import ERROR_RATE, Metric, metric_of
from marketsim.record.summary import TARGETS


def sweep_rows(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (grid point, arm) from the points' summaries."""
    rows = []
    for pt in points:
        for arm, s in pt["summary"]["arms"].items():
            row: dict[str, Any] = {"point": pt["folder"], **dict(pt["values"]), "arm": arm,
                                   "final_error_rate": s["final_error_rate"]}
            for t in TARGETS:
                row[f"edges_to_{t:g}"] = s["edges_to_reach"][f"{t:g}"]
            rows.append(row)
    return rows


def write_sweep_report(run_dir: Path, keys: list[str], points: list[dict[str, Any]]) -> None:
    """Write the sweep table, its JSON and the plot (if matplotlib is available)."""
    rows = sweep_rows(points)
    metric = metric_of(points[0]["summary"]) if points else ERROR_RATE
    header = ["point", *keys, "arm", "final_error_rate", *(f"edges_to_{t:g}" for t in TARGETS)]
    write_csv_atomic(
        run_dir / "sweep.csv", header,
        ([("" if r[h] is None else r[h]) for h in header] for r in rows),
    )
    write_json_atomic(run_dir / "sweep.json", {"keys": keys, "metric": metric.key, "rows": rows})
    write_text_atomic(run_dir / "sweep.md", sweep_markdown(keys, rows, metric))
    try:
        _plot(run_dir, keys, rows, metric)
    except ImportError:
        pass


def sweep_markdown(keys: list[str], rows: list[dict[str, Any]],
                   metric: Metric = ERROR_RATE) -> str:
    """A readable table: per grid point and arm, the labels needed to reach each target
    (targets and the final value are the run's headline error: error rate or RMSE)."""
    targets = [f"edges_to_{t:g}" for t in TARGETS]
    head = [*keys, "arm", f"final {metric.short}",
            *(f"labels to {metric.target_short(t)}" for t in TARGETS)]
    lines = [
        f"# Sweep: labels needed to reach a target {metric.short}",
        "",
        "Each grid point is a full study in `points/`; '—' means the target was not reached "
        "within the budget. The plot is `labels_needed_vs_sweep.png`.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        final = r["final_error_rate"]
        cells = [str(r[k]) for k in keys] + [r["arm"], "—" if final is None else f"{final:.4f}"]
        cells += ["—" if r[t] is None else f"{r[t]:,}" for t in targets]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "![labels needed](labels_needed_vs_sweep.png)", ""]
    return "\n".join(lines)


def _plot(run_dir: Path, keys: list[str], rows: list[dict[str, Any]],
          metric: Metric = ERROR_RATE) -> None:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x_key, other = keys[0], keys[1:]
    fig, axes = plt.subplots(1, len(TARGETS), figsize=(6 * len(TARGETS), 4.5), squeeze=False)
    markers = "osD^vP*X"
    for ax, target in zip(axes[0], TARGETS, strict=True):
        col = f"edges_to_{target:g}"
        series: dict[str, list[tuple[float, float]]] = {}
        for r in rows:
            label = r["arm"] + "".join(f", {k}={r[k]}" for k in other)
            if r[col] is not None:
                series.setdefault(label, []).append((float(r[x_key]), float(r[col])))
        for i, (label, pts) in enumerate(sorted(series.items())):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[i % len(markers)],
                    linestyle=("-", "--", ":", "-.")[i % 4], label=label)
        xs = [float(r[x_key]) for r in rows]
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 10:
            ax.set_xscale("log")
        ax.set_xlabel(x_key)
        ax.set_ylabel(f"labels needed to reach {metric.target(target)}")
        ax.set_title(f"target {metric.target(target)} (missing = not reached)")
        ax.grid(alpha=0.3)
        if series:
            ax.legend(fontsize=8)
    fig.tight_layout()
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=120)
        write_bytes_atomic(run_dir / f"labels_needed_vs_sweep.{ext}", buf.getvalue())
    plt.close(fig)
