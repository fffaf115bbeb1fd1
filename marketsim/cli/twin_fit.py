"""``marketsim calibrate``'s goodness of fit: the real labels' statistics against its twin's,
as the rows it prints and saves in ``<out>.fit.json``, and the arrival process's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.aggregation.arrival_fit import POOR_FIT_CV, ArrivalFit, gap_stats
from marketsim.aggregation.crowd_stats import CrowdStats


@dataclass(frozen=True)
class FitRow:
    """One goodness-of-fit row: a statistic, its value on the real labels and on the twin's
    (as printed; ``<out>.fit.json`` holds each row as an object of these three keys)."""

    statistic: str
    real: str
    simulated: str


def spread_stats(counts: np.ndarray) -> dict[str, float]:
    """Mean, standard deviation and range of per-task (or per-worker) label counts."""
    return {"mean": float(np.mean(counts)), "sd": float(np.std(counts)),
            "min": float(np.min(counts)), "max": float(np.max(counts))}


def spread_record(real: CrowdStats, twin: CrowdStats) -> dict[str, dict[str, float]]:
    """Labels per task, real and simulated, as numbers (``<out>.fit.json``'s
    ``labels_per_task``: the "as collected" arm gives each task the file's count)."""
    return {"real": spread_stats(real.labels_per_task),
            "simulated": spread_stats(twin.labels_per_task)}


def fit_rows(real: CrowdStats, twin: CrowdStats, real_error: float, twin_error: float,
             twin_error_note: str = "1 replicate", on_truth: bool = False) -> list[FitRow]:
    """Goodness of fit: one row per statistic, real against simulated (the twin's error
    described by ``twin_error_note``; ``on_truth``: the accuracy and the mostly-wrong share
    measured on the tasks a partial truth covers, weighted to their class mix)."""
    mixed = ", weighted to their class mix" if on_truth else ""

    def spread(x: np.ndarray) -> str:
        s = spread_stats(x)
        return f"{s['mean']:.2f} (sd {s['sd']:.2f}, {s['min']:.0f}-{s['max']:.0f})"

    both = ~np.isnan(real.worker_accuracy) & ~np.isnan(twin.worker_accuracy)
    gap = np.abs(real.worker_accuracy[both] - twin.worker_accuracy[both])
    weights = real.labels_per_worker[both]
    constant = np.ptp(real.labels_per_worker) == 0 or np.ptp(twin.labels_per_worker) == 0
    corr = "n/a (constant)" if constant else \
        f"{np.corrcoef(real.labels_per_worker, twin.labels_per_worker)[0, 1]:.4f}"
    return [FitRow(**row) for row in [
        {"statistic": ("accuracy (labels of the tasks with a truth" + mixed + ")") if on_truth
         else "accuracy (all labels)", "real": f"{real.accuracy:.4f}",
         "simulated": f"{twin.accuracy:.4f}"},
        {"statistic": "per-worker accuracy, mean |real - simulated| (label-weighted"
         + ("; real against Dawid-Skene's answers where no truth is" if on_truth else "") + ")",
         "real": "", "simulated": f"{np.average(gap, weights=weights):.4f}"},
        {"statistic": "labels per task", "real": spread(real.labels_per_task),
         "simulated": spread(twin.labels_per_task)},
        {"statistic": "labels per worker", "real": spread(real.labels_per_worker),
         "simulated": spread(twin.labels_per_worker)},
        {"statistic": "labels per worker, correlation real/simulated", "real": "",
         "simulated": corr},
        {"statistic": "agreement rate (label pairs on a task)", "real": f"{real.agreement:.4f}",
         "simulated": f"{twin.agreement:.4f}"},
        {"statistic": "tasks on which most labels are wrong (shared errors"
         + (" among those with a truth" + mixed if on_truth else "") + ")",
         "real": f"{real.mostly_wrong:.4f}", "simulated": f"{twin.mostly_wrong:.4f}"},
        {"statistic": "Dawid-Skene error rate",
         "real": "n/a (no truth)" if np.isnan(real_error) else f"{100 * real_error:.2f}%",
         "simulated": f"{100 * twin_error:.2f}% ({twin_error_note})"},
    ]]


def time_rows(fit: ArrivalFit, real_times: np.ndarray, sim_times: np.ndarray
              ) -> tuple[list[FitRow], dict[str, Any]]:
    """Goodness of fit of the arrival process (rows) and its record for ``<out>.fit.json``.

    The twin's initial graph is in place at time 0 (``at_zero`` labels): its gaps are those
    from time 0 on, and its span is compared with the real time the labels after the first
    ``at_zero`` took."""
    unit = fit.unit
    at_zero = int(np.count_nonzero(sim_times == 0.0))
    sim = gap_stats(sim_times[max(at_zero - 1, 0):])
    t = np.sort(real_times)
    real_after = float(t[-1] - t[min(max(at_zero - 1, 0), t.size - 1)])
    sim_span = float(sim_times[-1]) if sim_times.size else 0.0
    g = fit.gaps
    rows = [FitRow(**row) for row in [
        {"statistic": f"gap between labels, mean ({unit}s)", "real": f"{g.mean:.6g}",
         "simulated": f"{sim.mean:.6g}"},
        {"statistic": "gap between labels, coefficient of variation (Poisson: 1)",
         "real": f"{g.cv:.3f}", "simulated": f"{sim.cv:.3f}"},
        {"statistic": f"time for the labels after the first {at_zero} ({unit}s)",
         "real": f"{real_after:.6g}", "simulated": f"{sim_span:.6g} (from time 0)"},
    ]]
    record = {
        "column": fit.column, "kind": fit.kind, "unit": unit, "rate": fit.rate,
        "labels": g.n_labels, "span": g.span, "gap_mean": g.mean, "gap_cv": g.cv,
        "poor_fit": fit.poor, "poor_fit_cv": POOR_FIT_CV,
        "simulated": {"labels_at_time_0": at_zero, "gap_mean": sim.mean, "gap_cv": sim.cv,
                      "span": sim_span, "real_time_after_those": real_after},
    }
    return rows, record


def poor_fit_warning(fit: ArrivalFit) -> str:
    """What the output says when the real gaps are too bursty for a Poisson process."""
    return (f"warning: the real gaps between labels have coefficient of variation "
            f"{fit.gaps.cv:.2f} (a Poisson process has 1; above {POOR_FIT_CV:g} is a poor "
            "fit): this crowd comes in bursts, the twin arrives steadily at the same long-run "
            "rate, so its times to a target are a steady crowd's")
