"""Slide-sized figures: ``marketsim report RUN_DIR --slides`` draws the report's figures again
at 16:9 (1920 × 1080 pixels) with larger type, into ``plots/slides/`` of the run folder — the
same drawing code and the same records as the report's own figures, in
:data:`~marketsim.report.figure_style.SLIDE_STYLE`."""

from __future__ import annotations

from pathlib import Path

from marketsim.errors import InputError
from marketsim.record.summary_model import read_summary
from marketsim.report.figure_style import SLIDE_STYLE, SLIDES_DIR
from marketsim.report.render import SetupFallback, draw_plots, load_setup
from marketsim.report.sweep import load_points, sweep_rows, write_sweep_figure
from marketsim.report.sweep_plot import PLOT_NAME
from marketsim.scenario.run_migration import read_run
from marketsim.scenario.run_record import recorded_scenario


def write_slides(run_dir: str | Path, fallback: SetupFallback | None = None) -> list[Path]:
    """Write the error plots of a run folder (from its ``summary.json``) slide-sized into its
    ``plots/slides/``; the PNGs written."""
    run_dir = Path(run_dir)
    try:
        summary = read_summary(run_dir / "summary.json")
    except OSError:
        raise InputError("no summary.json here: render the report first (python -m "
                         "marketsim report RUN_DIR)", source=str(run_dir)) from None
    out = run_dir / SLIDES_DIR
    out.mkdir(parents=True, exist_ok=True)
    plots = draw_plots(out, summary, load_setup(run_dir, summary, fallback), SLIDE_STYLE)
    return [p.png for p in plots.values()]


def write_sweep_slides(run_dir: str | Path) -> list[Path]:
    """Write the sweep figure of a sweep folder slide-sized into its ``plots/slides/``; the
    PNG written (none when the folder's ``run.json`` has no sweep or matplotlib is missing)."""
    run_dir = Path(run_dir)
    try:
        grid = recorded_scenario(read_run(run_dir / "run.json")).sweep
    except OSError:
        return []
    if not grid:
        return []
    points = load_points(run_dir)
    out = run_dir / SLIDES_DIR
    out.mkdir(parents=True, exist_ok=True)
    drawn = write_sweep_figure(out, [key for key, _ in grid], points, sweep_rows(points),
                               SLIDE_STYLE)
    return [out / f"{PLOT_NAME}.png"] if drawn else []
