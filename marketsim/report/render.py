"""Re-render a run folder from its ``curves.csv``: ``summary.json``, the error-versus-budget
plots and ``report.md``.

Works on a finished run and on an interrupted (partial) one. The setup is taken from
``run.json`` (the resolved scenario the run used), else from the ``scenario.toml`` copy, else
from an existing ``summary.json``, else from ``curves.csv`` alone. ``summary.json`` is rebuilt
with :func:`marketsim.record.summary.build_summary`, so it is the file the run wrote; its
``seconds`` (wall-clock run time summed over the run's invocations, which ``curves.csv`` does
not hold) is carried over from the existing ``summary.json``, or is ``null`` if there is none.
The command line checks ``curves.csv`` against the unit checkpoints first
(:func:`marketsim.study.run_folder.check_curves`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from marketsim.errors import InputError
from marketsim.record.curves import CurveRow, read_curves
from marketsim.record.files import write_json_atomic, write_text_atomic
from marketsim.record.metric import metric_of
from marketsim.record.run_model import RunRecord
from marketsim.record.summary import TARGETS, build_summary, targets_of
from marketsim.record.summary_model import Summary, read_summary, summary_json
from marketsim.record.units import UnitResult
from marketsim.report.figure_style import REPORT_STYLE, FigureStyle
from marketsim.report.glossary import link_terms, write_glossary
from marketsim.report.markdown import REPORT_NAME, report_markdown, shown_names
from marketsim.report.plots import X_AXES, PlotInfo, plot_error_vs_budget
from marketsim.scenario.run_migration import read_run
from marketsim.scenario.run_record import recorded_scenario
from marketsim.scenario.specs import Scenario


def _read_summary(run_dir: Path) -> Summary | None:
    """The folder's ``summary.json``, or None if it is missing or unreadable (an invalid one
    is an :class:`InputError` naming the file and the key)."""
    try:
        return read_summary(run_dir / "summary.json")
    except OSError:
        return None


def _read_run(run_dir: Path) -> RunRecord | None:
    """The folder's ``run.json``, or None if it is missing or unreadable (an invalid one is
    an :class:`InputError` naming the file and the key)."""
    try:
        return read_run(run_dir / "run.json")
    except OSError:
        return None


#: Reads a run folder's scenario when ``run.json`` is gone (the caller knows how: the report
#: layer never parses scenario files itself).
SetupFallback = Callable[[Path], Scenario | None]


def load_setup(
    run_dir: Path, summary: Summary | None, fallback: SetupFallback | None = None
) -> Scenario | None:
    """The run's resolved scenario, typed: from ``run.json`` (of any version) with the seed
    and replicates it ran with, else from ``fallback(run_dir)`` with those of ``summary``,
    else None (also when the recorded scenario no longer validates, e.g. a replay whose data
    are gone: the report then says only what ``curves.csv`` holds)."""
    meta = _read_run(run_dir)
    if meta is not None:
        try:
            recorded = recorded_scenario(meta)
        except InputError:
            return None
        return recorded.with_overrides(replicates=meta.replicates, seed=meta.seed)
    scenario = fallback(run_dir) if fallback is not None else None
    if scenario is not None and summary:  # the command-line overrides, if run.json is gone
        return scenario.with_overrides(replicates=summary.replicates, seed=summary.seed)
    return scenario


def _check_finite(rows: list[CurveRow], path: Path) -> None:
    for idx, r in enumerate(rows):
        if not (math.isfinite(r.error_rate) and math.isfinite(r.ability_error)
                and math.isfinite(r.sim_time)) or r.edges < 0 or r.replicate < 0:
            raise InputError(
                "bad value (error_rate, ability_error and sim_time must be finite numbers, "
                "edges and replicate >= 0)", source=str(path), where=str(idx + 2),
            )


def rebuild_summary(
    rows: list[CurveRow],
    setup: Scenario | None,
    previous: Summary | None,
    *,
    fallback_name: str,
    source: str,
) -> Summary:
    """``summary.json`` content from the curve rows, as the run wrote it."""
    csv_arms = list(dict.fromkeys(r.arm for r in rows))
    name: Any
    seed: Any
    replicates: Any
    if setup is not None:
        arm_names = [a.name for a in setup.arms]
        name, seed, replicates = setup.name, setup.seed, setup.replicates
    elif previous is not None:
        arm_names = list(previous.arms)
        name, seed, replicates = previous.scenario, previous.seed, previous.replicates
    else:
        arm_names, name, seed, replicates = [], None, None, None
    unknown = [a for a in csv_arms if a not in arm_names]
    if unknown and (setup or arm_names):
        raise InputError(f"curves.csv has arm {unknown[0]!r}, which the run's scenario does not "
                         f"have (arms: {', '.join(arm_names)})", source=source)
    arm_names = arm_names or csv_arms
    units: dict[tuple[int, int], list[CurveRow]] = defaultdict(list)
    index = {a: i for i, a in enumerate(arm_names)}
    for r in rows:
        units[(index[r.arm], r.replicate)].append(r)
    if not isinstance(replicates, int):
        replicates = max((len({rep for a, rep in units if a == i}) for i in index), default=0)
    results = [UnitResult(rep, arm, tuple(unit_rows), 0.0)
               for (arm, rep), unit_rows in units.items()]
    finished, total = len(results), replicates * len(arm_names)
    complete = finished >= total and (previous is None or previous.complete)
    summary = build_summary(
        name=name if isinstance(name, str) else fallback_name, seed=seed, replicates=replicates,
        arm_names=arm_names, results=results, seconds=None, complete=complete,
        targets=_targets(setup, previous),
        budget_edges=None if setup is None else setup.budget.edges,
    )
    # the run time and early stops as the run wrote them (curves.csv does not hold them)
    arms = {name: arm.model_copy(update={"stopped": previous.arms[name].stopped})
            if previous and name in previous.arms and previous.arms[name].stopped else arm
            for name, arm in summary.arms.items()}
    return summary.model_copy(update={"seconds": previous.seconds if previous else None,
                                      "arms": arms})


def render_report(
    run_dir: str | Path, fallback: SetupFallback | None = None, *, figures: bool = True
) -> Summary:
    """Rewrite ``summary.json`` and write ``error_vs_budget.png``/``.svg``, ``report.md`` (its
    terms linked to the glossary) and ``glossary.md`` in ``run_dir`` from its ``curves.csv``;
    return the summary. When money or simulated time tell
    more than the labels (``summary.cost_axes``), ``error_vs_money.*`` and
    ``error_vs_time.*`` too.

    ``figures=False`` (``--no-figures``) draws no figure, the costliest part of a small run's
    report: ``report.md`` then links none and says how to draw them, and figures an earlier
    render left in the folder are removed (they may show other curves).

    A missing folder or ``curves.csv``, or a malformed ``curves.csv``, raises
    :class:`~marketsim.errors.InputError`, and so does an invalid ``summary.json`` or
    ``run.json`` (naming the file and the key). Every file is written atomically.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("run folder not found", source=str(run_dir))
    curves = run_dir / "curves.csv"
    if not curves.is_file():
        raise InputError("no curves.csv here: not a marketsim run folder, or no results "
                         "written yet", source=str(run_dir))
    rows = read_curves(curves)
    _check_finite(rows, curves)
    previous = _read_summary(run_dir)
    setup = load_setup(run_dir, previous, fallback)
    summary = rebuild_summary(rows, setup, previous, fallback_name=run_dir.name,
                              source=str(curves))
    write_json_atomic(run_dir / "summary.json", summary_json(summary))
    plots = draw_plots(run_dir, summary, setup) if figures else remove_plots(run_dir)
    run_meta = _read_run(run_dir)
    write_glossary(run_dir)  # before the report, which lists it and links to it
    text = report_markdown(summary, setup, plots.pop("edges", None), run_dir=run_dir,
                           versions=run_meta.versions if run_meta else None, cost_plots=plots)
    # not flushed to the disk (like the figures): ``marketsim report`` writes it again
    write_text_atomic(run_dir / REPORT_NAME, link_terms(text, names=shown_names(summary)),
                      durable=False)
    return summary


def task_count(setup: Scenario | None) -> int | None:
    """``tasks.count`` of the run's scenario, when known (the plots' log-scale floor)."""
    return None if setup is None else setup.tasks.count


def draw_plots(out_dir: Path, summary: Summary, setup: Scenario | None,
               style: FigureStyle = REPORT_STYLE) -> dict[str, PlotInfo]:
    """Write the error plots of the report into ``out_dir`` in ``style``: against labels
    (``edges``), and against money and simulated time when ``summary.cost_axes`` has them."""
    return {
        x: plot_error_vs_budget(
            out_dir, summary.arms, scenario_name=summary.scenario,
            n_tasks=task_count(setup), partial=not summary.complete,
            metric=metric_of(summary), x=x, targets=targets_of(summary.arms), style=style,
        )
        for x in ("edges", *summary.cost_axes)
    }


def remove_plots(out_dir: Path) -> dict[str, PlotInfo]:
    """Remove the error plots an earlier render wrote into ``out_dir``; no plot is drawn."""
    for axis in X_AXES.values():
        for ext in ("png", "svg"):
            (out_dir / f"{axis.stem}.{ext}").unlink(missing_ok=True)
    return {}


def _targets(setup: Scenario | None, previous: Summary | None) -> tuple[float, ...]:
    """The target errors of the run: its scenario's ``[report] targets``, else those of the
    summary it wrote, else the standard ones."""
    if setup is not None and setup.targets:
        return setup.targets
    return targets_of(previous.arms) if previous is not None else TARGETS
