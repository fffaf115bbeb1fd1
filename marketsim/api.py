"""The Python API: load or build a scenario, run a study, read its results (``docs/api.md``).

>>> import marketsim                                                     # doctest: +SKIP
>>> sc = marketsim.load_scenario("scenarios/30_workers.toml")           # doctest: +SKIP
>>> result = marketsim.run(sc, replicates=2, jobs=2)                    # doctest: +SKIP
>>> result.curves.head()                                                # doctest: +SKIP

``run`` writes nothing unless ``out`` names a run folder; then the folder is exactly the one
``python -m marketsim run --out`` writes (the same code writes both, in
:mod:`marketsim.study.session`). pandas is optional (``pip install "marketsim[pandas]"``):
without it the DataFrame properties raise a one-line error and :meth:`StudyResult.records`
still gives the rows.
"""

from __future__ import annotations

import csv
import io
import itertools
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any

from marketsim.errors import InputError
from marketsim.record.curves import CURVE_COLUMNS, EXTRA_COLUMNS, CurveRow, csv_records
from marketsim.record.metric import metric_of
from marketsim.record.summary import targets_of
from marketsim.record.summary_model import ReachInterval, Summary
from marketsim.record.units import UnitResult, canonical_rows
from marketsim.report.html import report_html
from marketsim.report.plots import FIGSIZE, draw_error_axes
from marketsim.report.progress import QuietProgress, make_observer
from marketsim.report.render import render_report
from marketsim.report.sweep import SweepPoint, columns, sweep_rows
from marketsim.scenario.parser import load_scenario, scenario_from_dict
from marketsim.scenario.specs import Scenario
from marketsim.study.lock import folder_lock
from marketsim.study.resources import capped_jobs, check_memory
from marketsim.study.session import run_observed

__all__ = ["Scenario", "StudyResult", "compare", "load_scenario", "run", "scenario_from_dict",
           "sweep"]

#: ``progress`` callables are called as ``progress(unit, finished, total)``.
ProgressCallback = Callable[[UnitResult, int, int], Any]
PANDAS_HINT = 'pip install "marketsim[pandas]"'


class _CallbackProgress(QuietProgress):
    """A run observer that hands every finished unit to the caller's function."""

    def __init__(self, callback: ProgressCallback) -> None:
        self.callback = callback

    def unit_done(self, unit: UnitResult, finished: int, total: int) -> None:
        """Call the caller's function."""
        self.callback(unit, finished, total)


def _observer(progress: bool | ProgressCallback) -> Any:
    if callable(progress):
        return _CallbackProgress(progress)
    return make_observer(quiet=not progress)


def run(
    scenario: Scenario,
    *,
    replicates: int | None = None,
    seed: int | None = None,
    jobs: int = 1,
    out: str | Path | None = None,
    progress: bool | ProgressCallback = True,
    figures: bool = True,
) -> StudyResult:
    """Simulate every arm of ``scenario`` on ``replicates`` worlds (default: the scenario's)
    with ``jobs`` worker processes and return the :class:`StudyResult`.

    Nothing is written unless ``out`` names a run folder, which then gets exactly what
    ``python -m marketsim run --out`` writes (and a folder holding some of this study's
    units is resumed). ``progress``: ``False`` for silence, ``True`` for the command line's
    display on stderr (a live dashboard in a terminal, plain lines otherwise), or a function
    called as ``progress(unit, finished, total)`` after each (replicate, arm) unit.
    ``figures=False``: the run folder gets no PNG/SVG figure (``--no-figures``)."""
    if not isinstance(scenario, Scenario):
        raise InputError(f"run() needs a scenario from marketsim.load_scenario or "
                         f"marketsim.scenario_from_dict, got {type(scenario).__name__}")
    for key, value, low in (("replicates", replicates, 1), ("seed", seed, 0), ("jobs", jobs, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, Integral)
                                  or value < low):
            raise InputError(f"{key} must be an integer >= {low}, got {value!r}")
    # numpy's integers are integers too; the study gets Python ints
    replicates, seed = (None if v is None else int(v) for v in (replicates, seed))
    jobs = int(jobs)
    if scenario.sweep:
        raise InputError("has a [sweep]: marketsim.run runs one study; run the grid with "
                         "marketsim.sweep(scenario), one point with scenario.without_sweep()"
                         ".replace({key: value}), or the whole sweep with 'python -m "
                         "marketsim run'", source=scenario.source)
    scenario = scenario.with_overrides(replicates=replicates, seed=seed).resolve_imports(
        scenario.allow_imports)
    jobs, note = capped_jobs(jobs, scenario.replicates * len(scenario.arms))
    if note and progress is True:
        print(f"marketsim: note: {note}", file=sys.stderr)
    check_memory([scenario.outline], jobs)
    observer = _observer(progress)
    if out is None:
        summary, units = run_observed(scenario, None, observer, jobs=jobs)
        return StudyResult(scenario, summary, tuple(units), None)
    run_dir = Path(out)
    with folder_lock(run_dir):
        try:
            summary, units = run_observed(scenario, run_dir, observer, jobs=jobs,
                                          on_damaged=_warn_damaged)
        except KeyboardInterrupt:  # as the command line: the partial report, then stop
            render_report(run_dir, figures=figures)
            raise
        render_report(run_dir, figures=figures)
    return StudyResult(scenario, summary, tuple(units), run_dir)


def _warn_damaged(path: Path, reason: str) -> None:
    print(f"marketsim: warning: {path}: damaged checkpoint ({reason}); the unit is simulated "
          "again", file=sys.stderr)


def _pandas() -> Any:
    """pandas, imported here only: it is an optional extra, not a dependency of marketsim."""
    try:
        import pandas  # optional third-party package (the "pandas" extra)
    except ImportError:
        raise ModuleNotFoundError(f"this needs pandas: {PANDAS_HINT}") from None
    return pandas


@dataclass(frozen=True)
class StudyResult:
    """A finished study: the scenario it ran, ``summary.json`` as a typed
    :class:`~marketsim.record.summary_model.Summary` (``.model_dump(mode="json")`` for the
    file's dict), every (replicate, arm)
    unit, and the run folder (``None`` when nothing was written)."""

    scenario: Scenario
    summary: Summary
    units: tuple[UnitResult, ...] = field(repr=False)
    run_dir: Path | None = None

    def records(self, *, as_dicts: bool = False) -> list[CurveRow] | list[dict[str, Any]]:
        """The rows of ``curves.csv`` in its order, as ``CurveRow`` objects or (``as_dicts``)
        dicts keyed by its columns; no pandas needed."""
        rows = canonical_rows(list(self.units))
        if not as_dicts:
            return rows
        return [{"arm": r.arm, "replicate": r.replicate, "edges": r.edges,
                 **dict(zip(CURVE_COLUMNS[3:] + EXTRA_COLUMNS, r.metrics(), strict=True))}
                for r in rows]

    @property
    def curves(self) -> Any:
        """``curves.csv`` as a pandas DataFrame: one row per arm, replicate and checkpoint,
        the same columns, order, values and dtypes as ``pandas.read_csv`` of the file."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(CURVE_COLUMNS + EXTRA_COLUMNS)
        writer.writerows(csv_records(self.records()))  # type: ignore[arg-type]
        buf.seek(0)
        return _pandas().read_csv(buf)

    def _to_target(self, axis: str, column: str) -> Any:
        """DataFrame of each replicate's ``axis`` value at its target (see
        :attr:`labels_to_target`), with the arm's interval; ``column`` names the value."""
        records = []
        for name, arm in self.summary.arms.items():
            intervals = arm.to_reach_ci95(axis)
            for target, values in arm.to_reach_replicates(axis).items():
                ci = intervals.get(target)
                for rep, value in zip(arm.replicate_ids, values, strict=True):
                    records.append({"arm": name, "replicate": rep, "target": float(target),
                                    column: value, **_interval(ci)})
        pd = _pandas()
        frame = pd.DataFrame.from_records(records, columns=[
            "arm", "replicate", "target", column, "mean", "low", "high", "reached", "of"])
        frame[column] = frame[column].astype("Int64" if axis == "edges" else float)
        return frame.astype({"mean": float, "low": float, "high": float})

    @property
    def labels_to_target(self) -> Any:
        """DataFrame of each replicate's labels-to-target: ``arm, replicate, target, labels``
        (``<NA>`` when the replicate never reached the target error), with the arm's interval
        over replicates (``summary.arms[arm].edges_to_reach_ci95``): ``mean, low, high,
        reached, of``."""
        return self._to_target("edges", "labels")

    @property
    def money_to_target(self) -> Any:
        """DataFrame of the money each replicate had spent (gold included) when it reached each
        target: ``arm, replicate, target, money`` (NaN when not reached), with the arm's mean
        and interval (``mean, low, high, reached, of``) as :attr:`labels_to_target`. Empty
        when the market recorded no money (``curves.csv`` without a finite ``money``)."""
        return self._to_target("money", "money")

    @property
    def time_to_target(self) -> Any:
        """DataFrame of the simulated time at which each replicate reached each target:
        ``arm, replicate, target, time`` (NaN when not reached), with the arm's mean and
        interval (``mean, low, high, reached, of``) as :attr:`labels_to_target`."""
        return self._to_target("time", "time")

    @property
    def final_error(self) -> Any:
        """DataFrame, one row per arm, of the headline error at the end of each replicate's
        run (its last point: the budget, or where it stopped): ``arm, labels`` (the mean over
        replicates of the labels each had spent at its end), ``mean`` over replicates, its
        95 % Student-t interval ``low, high`` (NaN with one replicate) and ``replicates`` —
        ``summary.arms[arm].final_error`` and ``final_edges``, the figures report.md and
        sweep.csv print. This is the number to rank arms by (not
        ``curves.groupby("arm")["error_rate"].last()``, which is the last replicate's
        error)."""
        records = []
        for name, arm in self.summary.arms.items():
            error, labels = arm.final("error"), arm.final("edges")
            records.append({"arm": name, "labels": None if labels is None else labels.mean,
                            "mean": None if error is None else error.mean,
                            "low": None if error is None else error.low,
                            "high": None if error is None else error.high,
                            "replicates": arm.replicates})
        frame = _pandas().DataFrame.from_records(
            records, columns=["arm", "labels", "mean", "low", "high", "replicates"])
        return frame.astype({"labels": float, "mean": float, "low": float, "high": float})

    @property
    def target_summary(self) -> Any:
        """DataFrame, one row per arm and target error, of what it took to reach the target:
        ``reached`` of ``of`` replicates; ``labels`` (mean over replicates of each one's own
        labels-to-target) with its 95 % interval ``labels_low, labels_high``, and the same for
        ``money`` and simulated ``time`` — all NaN unless every replicate reached the target,
        since a mean over only the replicates that did would flatter the arm (the per-replicate
        values are in :attr:`labels_to_target`); ``mean_curve_labels``: the labels after which
        the arm's mean curve stays at or below the target (the report's "labels to" figure),
        ``<NA>`` if it never does."""
        records = []
        for name, arm in self.summary.arms.items():
            for key, curve in arm.edges_to_reach.items():
                row: dict[str, Any] = {"arm": name, "target": float(key)}
                ci = arm.to_reach_ci95("edges").get(key)
                row.update(reached=ci.reached if ci else 0, of=ci.of if ci else arm.replicates)
                for axis, column in (("edges", "labels"), ("money", "money"), ("time", "time")):
                    iv = arm.to_reach_ci95(axis).get(key)
                    full = iv is not None and iv.reached == iv.of
                    row[column] = iv.mean if full and iv else None
                    row[f"{column}_low"] = iv.low if full and iv else None
                    row[f"{column}_high"] = iv.high if full and iv else None
                row.update(mean_curve_labels=curve)
                records.append(row)
        columns = ["arm", "target", "reached", "of", *(f"{c}{end}" for c in (
            "labels", "money", "time") for end in ("", "_low", "_high")), "mean_curve_labels"]
        frame = _pandas().DataFrame.from_records(records, columns=columns)
        return frame.astype({"mean_curve_labels": "Int64", **{c: float for c in columns[4:-1]}})

    @property
    def comparisons(self) -> Any:
        """DataFrame of ``summary.comparisons``: every arm against the reference arm (the
        first), paired by replicate, at each checkpoint (``edges``) and on labels-to-target
        (``target``): ``arm, reference, edges, target, difference, low, high, p_value,
        replicates, detected, replicates_needed, verdict``. Empty with one arm."""
        cmp = self.summary.comparisons
        records = []
        for name, arm in cmp.arms.items():
            for point in arm.checkpoints:
                records.append({"arm": name, "reference": cmp.reference, **point.model_dump(),
                                "target": None})
            for target, entry in arm.to_reach("edges").items():
                records.append({"arm": name, "reference": cmp.reference, "edges": None,
                                "target": float(target), **entry.model_dump()})
        columns = ["arm", "reference", "edges", "target", "difference", "low", "high",
                   "p_value", "replicates", "detected", "replicates_needed", "verdict"]
        frame = _pandas().DataFrame.from_records(records, columns=columns)
        return frame.astype({"edges": "Int64", "target": float, "difference": float, "low": float,
                             "high": float, "p_value": float})

    def plot(self, ax: Any = None, *, x: str = "labels", targets: bool = False) -> Any:
        """The report's error plot (mean and 95 % band per arm, log scale) against ``x``:
        ``"labels"`` spent, ``"money"`` spent or simulated ``"time"``; ``targets=True`` draws
        the target errors (the scenario's ``[report] targets``, else 5 % and 1 %) as dashed
        lines. Drawn on ``ax`` when given, else on a new pyplot
        figure, so a notebook shows it inline and ``plt.show()`` shows it in a script; returns
        the matplotlib ``Axes`` (``.figure`` to save it). Nothing is saved."""
        return _plot(self.summary, self.scenario.name, self.scenario.tasks.count, ax, x=x,
                     targets=targets)

    def to_html(self, path: str | Path) -> Path:
        """Write the report as one self-contained page to ``path`` (what ``marketsim report
        RUN_DIR --html`` writes: the interactive chart and the report's tables); needs plotly
        (``pip install "marketsim[html]"``). Returns the path."""
        setup = self.scenario.with_overrides(replicates=self.summary.replicates,
                                             seed=self.summary.seed)
        page = report_html(self.summary, setup, run_dir=self.run_dir)
        Path(path).write_text(page, encoding="utf-8")
        return Path(path)


def _plot(summary: Summary, name: str, n_tasks: int, ax: Any, *, x: str,
          targets: bool) -> Any:
    """:meth:`StudyResult.plot` of ``summary``'s arms, titled ``name``, with the log-scale
    floor of ``n_tasks`` tasks."""
    axis = {"labels": "edges", "money": "money", "time": "time"}.get(x)
    if axis is None:
        raise InputError(f"x must be 'labels', 'money' or 'time', got {x!r}")
    if axis == "money" and any(arm.money is None for arm in summary.arms.values()):
        raise InputError("this market records no money: plot against 'labels' or 'time'")
    if ax is None:
        import matplotlib.pyplot as plt  # pyplot: the figure a notebook displays inline

        _fig, ax = plt.subplots(figsize=FIGSIZE, layout="constrained")
    draw_error_axes(
        ax, summary.arms, scenario_name=name, n_tasks=n_tasks,
        partial=not summary.complete, metric=metric_of(summary), x=axis,
        targets=targets_of(summary.arms) if targets else ())
    return ax


def _interval(ci: ReachInterval | None) -> dict[str, Any]:
    """The interval columns of a to-target frame (all None without an interval)."""
    return {"mean": ci.mean if ci else None, "low": ci.low if ci else None,
            "high": ci.high if ci else None, "reached": ci.reached if ci else None,
            "of": ci.of if ci else None}


def compare(*results: StudyResult, names: Sequence[str] | None = None, ax: Any = None,
            x: str = "labels", targets: bool = False) -> Any:
    """Overlay the error curves of several runs (e.g. before and after changing one thing)
    on one plot: every arm of every run, named ``<run name>: <arm>`` (``names``: one per run,
    default each run's scenario name, numbered when they repeat); ``ax``, ``x`` and
    ``targets`` as :meth:`StudyResult.plot`. The log-scale floor (half of one task's error)
    is that of the run with the most tasks, so no run's curve is drawn above its own error.
    Returns the matplotlib ``Axes``."""
    if not results or not all(isinstance(r, StudyResult) for r in results):
        raise InputError("compare() needs StudyResults from marketsim.run")
    names = list(names) if names is not None else [r.scenario.name for r in results]
    if len(names) != len(results):
        raise InputError(f"compare() got {len(results)} results and {len(names)} names")
    if len({metric_of(r.summary).key for r in results}) > 1:
        raise InputError("compare() needs runs of one metric: error rates and RMSEs cannot "
                         "share an axis")
    if len(set(names)) < len(names):
        names = [f"{i + 1}. {n}" for i, n in enumerate(names)]
    arms = {f"{n}: {arm}": s for n, r in zip(names, results, strict=True)
            for arm, s in r.summary.arms.items()}
    merged = results[0].summary.model_copy(update={
        "arms": arms, "complete": all(r.summary.complete for r in results)})
    tasks = max(r.scenario.tasks.count for r in results)  # the lowest floor of all runs
    return _plot(merged, " vs ".join(names), tasks, ax, x=x, targets=targets)


def sweep(scenario: Scenario, grid: Mapping[str, Sequence[Any]] | None = None, *,
          replicates: int | None = None, seed: int | None = None, jobs: int = 1,
          progress: bool | ProgressCallback = False) -> Any:
    """Run ``scenario`` at every point of ``grid`` (dotted key -> values, as a ``[sweep]``
    table; the keys ``scenario.replace`` takes) and return the sweep table as a pandas
    DataFrame: one row per grid point and arm, the columns of ``sweep.csv`` (final error with
    its interval, labels, money and time to each target, paired differences to the first
    arm). Without ``grid``, the scenario's own ``[sweep]`` is the grid; a ``grid`` given
    replaces it. Nothing is written; every point runs on the same worlds (same seed)."""
    pd = _pandas()
    if not isinstance(scenario, Scenario):
        raise InputError(f"sweep() needs a scenario from marketsim.load_scenario or "
                         f"marketsim.scenario_from_dict, got {type(scenario).__name__}")
    if grid is None:
        grid = {key: list(values) for key, values in scenario.sweep}
    if not grid or any(isinstance(v, str) or not len(v) for v in grid.values()):
        raise InputError("sweep() needs {dotted key: non-empty list of values} (or a "
                         "scenario with a [sweep] table)")
    if scenario.sweep:  # the points are studies of the scenario without its own grid
        scenario = scenario.without_sweep()
    keys = list(grid)
    points: list[SweepPoint] = []
    for i, values in enumerate(itertools.product(*grid.values())):
        point = scenario.replace(dict(zip(keys, values, strict=True)))
        result = run(point, replicates=replicates, seed=seed, jobs=jobs, progress=progress)
        points.append(SweepPoint(f"p{i:03d}", tuple(zip(keys, values, strict=True)),
                                 result.summary))
    rows = sweep_rows(points)
    return pd.DataFrame(rows, columns=[c for c in columns(keys, targets_of(
        points[0].summary.arms)) if any(c in r for r in rows)])
