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

from marketsim.aggregation.registry import METHODS
from marketsim.policies.registry import POLICIES
from marketsim.record.metric import metric_of
from marketsim.record.summary_model import ArmComparison, ArmSummary, Summary
from marketsim.report.arm_text import arm_specs, methods_section, policies_section
from marketsim.report.comparison_text import comparisons_section, key_results
from marketsim.report.cost_text import (
    cost_differences,
    cost_plot_section,
    costs_section,
    gold_section,
    under_budget_section,
)
from marketsim.report.formatting import md_literal
from marketsim.report.glossary import GLOSSARY_NAME
from marketsim.report.plots import PNG_NAME, SVG_NAME, PlotInfo
from marketsim.report.results_text import (
    arms_section,
    checkpoints,
    checkpoints_section,
    no_plot_section,
    plot_section,
    score_section,
    targets_section,
)
from marketsim.report.setup_text import setup_section
from marketsim.scenario.specs import Scenario

REPORT_NAME = "report.md"


def report_markdown(
    summary: Summary,
    setup: Scenario | None,
    plot: PlotInfo | None,
    *,
    run_dir: Path | None = None,
    versions: Mapping[str, str] | None = None,
    cost_plots: Mapping[str, PlotInfo] | None = None,
) -> str:
    """The text of ``report.md``; ``cost_plots`` are the error plots against money and
    simulated time (by axis), drawn when those tell more than the labels; ``plot`` None: no
    figure was drawn (``--no-figures``), and the report says how to draw them."""
    metric = metric_of(summary)
    figures = (plot_section(plot, metric, fewest_replicates(summary)) if plot is not None
               else no_plot_section(metric, run_dir))
    figures += cost_plot_section(cost_plots or {}, metric)
    lines = report_lines(summary, setup, figures=figures, run_dir=run_dir)
    lines += files_section(summary, setup, run_dir, versions, cost_plots)
    return "\n".join(lines)


def fewest_replicates(summary: Summary) -> int:
    """The fewest replicates any arm finished: under two, no interval and no pair exists."""
    return min((a.replicates for a in summary.arms.values()), default=0)


def report_lines(
    summary: Summary,
    setup: Scenario | None,
    *,
    figures: list[str],
    run_dir: Path | None = None,
    glossary: str = GLOSSARY_NAME,
) -> list[str]:
    """The Markdown lines of the report from its title to the inference methods, with the
    ``figures`` lines (the plots and their captions) after the arms; ``report.md`` and
    ``report.html`` (which draws its own chart) both read these. ``glossary`` is where the
    glossary is: the folder's file (``report.md``) or the page's own section (``#glossary``).
    The scenario's and arms' names are Markdown literals in every line (:func:`as_text`)."""
    summary, setup = as_text(summary, setup)
    arms: Mapping[str, ArmSummary] = summary.arms
    names = list(arms)
    specs = arm_specs(setup)
    metric = metric_of(summary)
    lines = [f"# {summary.scenario}: which policy gets the error down fastest?", "",
             "The words this report uses are explained in "
             + (f"[{GLOSSARY_NAME}]({GLOSSARY_NAME})" if glossary == GLOSSARY_NAME else
                f"the [glossary]({glossary}) at the end of this page")
             + " (linked where they first appear).", ""]
    if not summary.complete:
        resume = f"python -m marketsim run --resume {run_dir}" if run_dir else "run --resume"
        lines += [
            f"> **Partial run.** Only {summary.units_finished} of "
            f"{summary.units_total} (replicate, arm) units finished; the numbers below "
            f"use the finished units only and may change. Finish it with `{resume}`.", "",
        ]
    if arms:
        lines += ["**In short** (the mean over replicates of the labels each replicate needed "
                  "for its error to reach a target and stay at or below it; a difference is "
                  "claimed only when its paired 95 % interval excludes zero; details below):",
                  "", *key_results(arms, specs, names, metric), ""]
    lines += setup_section(setup, summary)
    lines += arms_section(arms, names, specs, metric)
    lines += under_budget_section(arms, names)  # where and why runs stopped early
    lines += score_section(arms, names, metric)
    fewest = fewest_replicates(summary)
    lines += figures
    lines += checkpoints_section(arms, names, metric, fewest)
    lines += targets_section(arms, names, specs, metric, fewest)
    lines += costs_section(summary, names, specs, metric)
    lines += gold_section(arms, names)
    lines += comparisons_section(summary, names, metric, checkpoints(arms), fewest,
                                 cost_differences(summary, names, metric))
    lines += policies_section(names, specs)
    lines += methods_section(names, specs, metric, setup)
    return lines


def shown_names(summary: Summary) -> list[str]:
    """The scenario's and every arm's name as the report's Markdown spells them (what
    :func:`~marketsim.report.glossary.link_terms` leaves unlinked)."""
    return [md_literal(summary.scenario), *map(md_literal, summary.arms)]


def as_text(summary: Summary, setup: Scenario | None) -> tuple[Summary, Scenario | None]:
    """``summary`` and ``setup`` with the scenario's and every arm's name as Markdown text
    (:func:`~marketsim.report.formatting.md_literal`): names are data a user typed, so every
    section that inserts one (a heading, a sentence, a table cell) shows it as written and a
    crafted name never becomes a link, emphasis or a new table column."""
    arms = {md_literal(name): arm for name, arm in summary.arms.items()}
    comp = summary.comparisons
    comp = comp.model_copy(update={
        "reference": None if comp.reference is None else md_literal(comp.reference),
        "arms": {md_literal(name): _entry_text(entry) for name, entry in comp.arms.items()}})
    shown = summary.model_copy(update={"scenario": md_literal(summary.scenario), "arms": arms,
                                       "comparisons": comp})
    if setup is None:
        return shown, None
    header = setup.scenario.model_copy(update={"name": md_literal(setup.name)})
    arms_shown = tuple(a.model_copy(update={"name": md_literal(a.name)}) for a in setup.arms)
    return shown, setup.model_copy(update={"scenario": header, "arms": arms_shown})


def _entry_text(entry: ArmComparison) -> ArmComparison:
    """``entry`` with every verdict (a plain sentence that names both arms) as Markdown
    text."""
    def said(point: Any) -> Any:
        return point.model_copy(update={"verdict": md_literal(point.verdict)})

    reach = {f"{axis}_to_reach": {k: said(v) for k, v in found.items()}
             for axis in ("edges", "money", "time") if (found := entry.to_reach(axis))}
    return entry.model_copy(update={"checkpoints": [said(c) for c in entry.checkpoints],
                                    **reach})


def files_section(
    summary: Summary,
    setup: Scenario | None,
    run_dir: Path | None,
    versions: Mapping[str, str] | None,
    cost_plots: Mapping[str, PlotInfo] | None = None,
) -> list[str]:
    """"Files and reproduction": what the folder holds, run time, how to re-run and re-render.
    Only files the folder holds are named (a study built in Python has no ``scenario.toml``)."""
    lines = ["## Files and reproduction", ""]
    seconds = summary.seconds
    extra = [n for p in (cost_plots or {}).values() for n in (p.png.name, p.svg.name)]
    files = ["curves.csv", "summary.json", PNG_NAME, SVG_NAME, *extra, "scenario.toml",
             "run.json", GLOSSARY_NAME]
    if run_dir is not None:
        files = [name for name in files if (run_dir / name).is_file()]
    lines += [
        "- " + ", ".join(f"`{name}`" for name in files)
        + " in this folder; see `reports/README.md` for what they hold.",
        "- run time: " + (f"{seconds:.1f} s" if isinstance(seconds, int | float) else "unknown"),
        _rerun(summary, setup, run_dir is None or "scenario.toml" in files),
        "- re-render this report: `python -m marketsim report "
        f"{run_dir if run_dir is not None else 'RUN_DIR'}`",
    ]
    if versions:
        keep = ("marketsim", "python", "numpy", "scipy", "matplotlib")
        lines.append("- versions: " + ", ".join(f"{k} {versions[k]}" for k in keep
                                                 if k in versions))
    lines.append("")
    return lines


def _rerun(summary: Summary, setup: Scenario | None, has_copy: bool) -> str:
    """How to run the study again: from the folder's ``scenario.toml`` copy; for a study built
    in Python (no copy), from the document ``run.json`` records, or, when arms hold Python
    objects no file can hold, by running the same scenario object again."""
    seed, replicates = summary.seed, summary.replicates
    if setup is not None and setup.sweep_point:
        return ("- this folder is one grid point of a sweep; re-run the sweep from its "
                "top-level folder's `scenario.toml`")
    arms = setup.arms if setup is not None else ()
    objects = sorted({name for arm in arms for name in (arm.policy.name, arm.inference.method)
                      if ":" not in name and name not in POLICIES and name not in METHODS})
    if objects:
        return ("- re-run: this study was built in Python with arms holding Python objects "
                f"({', '.join(objects)}), which no file can hold, so this folder has no "
                "`scenario.toml`; run the same scenario again with `marketsim.run(scenario, "
                f"seed={seed}, replicates={replicates})`")
    # a policy or inference method given as 'module:Class' runs only with --allow-imports
    plugin = any(":" in arm.policy.name or ":" in arm.inference.method for arm in arms)
    if not has_copy:
        imports = ", allow_imports=True" if plugin else ""
        return ("- re-run: this study was built in Python, so this folder has no "
                "`scenario.toml`; `run.json` records the scenario it ran (in Python, from this "
                "folder, with `json` and `pathlib.Path` imported): `marketsim.run(marketsim."
                "scenario_from_dict(json.loads(Path('run.json').read_text())['document']"
                f"{imports}), seed={seed}, replicates={replicates})`")
    data = setup.replay.data_dir if setup is not None and setup.replay is not None else None
    return (f"- re-run (from this folder): `python -m marketsim run scenario.toml --seed "
            f"{seed} --replicates {replicates}"
            f"{f' --data-dir {data}' if isinstance(data, str) else ''}"
            f"{' --allow-imports' if plugin else ''}`"
            + (" (the plug-in modules must be importable: on `PYTHONPATH`)" if plugin else ""))
