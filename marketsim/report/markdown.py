"""``report.md``: a run's results written for a student — the setup in words, the plot, the
error at a few budget checkpoints, the labels needed to reach 5 % and 1 % error and the saving
against the uniform policy, and what each policy and inference method does.

The sections come from :mod:`~marketsim.report.setup_text` (the setup),
:mod:`~marketsim.report.results_text` (claims, tables, plot caption) and
:mod:`~marketsim.report.arm_text` (policies and inference methods); this module puts them in
order and adds the files and reproduction notes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from marketsim.record.metric import metric_of
from marketsim.report.arm_text import arm_specs, methods_section, policies_section, policy_name
from marketsim.report.comparison_text import comparisons_section, key_results
from marketsim.report.cost_text import cost_plot_section, costs_section, gold_section
from marketsim.report.plots import PNG_NAME, SVG_NAME, PlotInfo
from marketsim.report.results_text import (
    arms_section,
    checkpoints,
    checkpoints_section,
    plot_section,
    score_section,
    targets_section,
)
from marketsim.report.setup_text import setup_section

REPORT_NAME = "report.md"


def report_markdown(
    summary: Mapping[str, Any],
    setup: Mapping[str, Any] | None,
    plot: PlotInfo,
    *,
    run_dir: Path | None = None,
    versions: Mapping[str, str] | None = None,
    cost_plots: Mapping[str, PlotInfo] | None = None,
) -> str:
    """The text of ``report.md``; ``cost_plots`` are the error plots against money and
    simulated time (by axis), drawn when those tell more than the labels."""
    arms: Mapping[str, Mapping[str, Any]] = summary.get("arms") or {}
    names = list(arms)
    specs = arm_specs(setup)
    metric = metric_of(summary)
    lines = [f"# {summary.get('scenario')}: which policy gets the error down fastest?", ""]
    if not summary.get("complete", True):
        resume = f"python -m marketsim run --resume {run_dir}" if run_dir else "run --resume"
        lines += [
            f"> **Partial run.** Only {summary.get('units_finished')} of "
            f"{summary.get('units_total')} (replicate, arm) units finished; the numbers below "
            f"use the finished units only and may change. Finish it with `{resume}`.", "",
        ]
    if arms:
        lines += ["**In short** (labels needed for the mean error to reach and stay below a "
                  "target; a difference is claimed only when its paired 95 % interval excludes "
                  "zero; details below):", "", *key_results(arms, specs, names, metric), ""]
    lines += setup_section(setup, summary)
    lines += arms_section(arms, names, specs, metric)
    lines += score_section(arms, names, metric)
    lines += plot_section(plot, metric)
    lines += cost_plot_section(cost_plots or {}, metric)
    lines += checkpoints_section(arms, names, metric)
    lines += targets_section(arms, names, specs, metric)
    lines += costs_section(summary, names, specs, metric)
    lines += gold_section(arms, names)
    lines += comparisons_section(summary, names, metric, checkpoints(arms))
    lines += policies_section(names, specs)
    lines += methods_section(names, specs, metric)
    lines += files_section(summary, setup, run_dir, versions, cost_plots)
    return "\n".join(lines)


def files_section(
    summary: Mapping[str, Any],
    setup: Mapping[str, Any] | None,
    run_dir: Path | None,
    versions: Mapping[str, str] | None,
    cost_plots: Mapping[str, PlotInfo] | None = None,
) -> list[str]:
    """"Files and reproduction": what the folder holds, run time, how to re-run and re-render."""
    lines = ["## Files and reproduction", ""]
    seconds = summary.get("seconds")
    point = (setup or {}).get("sweep_point")
    if point:
        rerun = ("- this folder is one grid point of a sweep; re-run the sweep from its "
                 "top-level folder's `scenario.toml`")
    else:
        # a policy given as 'module:Class' runs only with --allow-imports
        plugin = any(":" in (policy_name(spec) or "") for spec in arm_specs(setup).values())
        replay = (setup or {}).get("replay")
        data = replay.get("data_dir") if isinstance(replay, Mapping) else None
        rerun = (f"- re-run (from this folder): `python -m marketsim run scenario.toml --seed "
                 f"{summary.get('seed')} --replicates {summary.get('replicates')}"
                 f"{f' --data-dir {data}' if isinstance(data, str) else ''}"
                 f"{' --allow-imports' if plugin else ''}`"
                 + (" (the policy modules must be importable: on `PYTHONPATH`)" if plugin
                    else ""))
    extra = "".join(f"`{p.png.name}`, `{p.svg.name}`, " for p in (cost_plots or {}).values())
    lines += [
        f"- `curves.csv`, `summary.json`, `{PNG_NAME}`, `{SVG_NAME}`, {extra}`scenario.toml`, "
        "`run.json`"
        f" in this folder; see `reports/README.md` for what they hold.",
        "- run time: " + (f"{seconds:.1f} s" if isinstance(seconds, int | float) else "unknown"),
        rerun,
        "- re-render this report: `python -m marketsim report "
        f"{run_dir if run_dir is not None else 'RUN_DIR'}`",
    ]
    if versions:
        keep = ("marketsim", "python", "numpy", "scipy", "matplotlib")
        lines.append("- versions: " + ", ".join(f"{k} {versions[k]}" for k in keep
                                                 if k in versions))
    lines.append("")
    return lines
