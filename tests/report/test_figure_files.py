"""A report's figure files: the same figure gives the same bytes, run after run (the SVG's
element ids too), and saving a figure draws it once per format, with its constrained layout
(the costliest part of a small run's report is drawing its figures)."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from marketsim.record.summary_model import Summary
from marketsim.report import plots
from marketsim.report.render import draw_plots


def point_summary(priced_sweep: Path) -> Summary:
    """The first sweep point's summary (money and simulated time differ from labels: three
    figures)."""
    text = (priced_sweep / "points" / "p000" / "summary.json").read_text()
    return Summary.model_validate_json(text)


def test_same_figures_same_bytes(priced_sweep: Path, tmp_path: Path) -> None:
    summary = point_summary(priced_sweep)
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        out.mkdir()
        draw_plots(out, summary, None)
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(f"{stem}.{ext}" for stem in
                           ("error_vs_budget", "error_vs_money", "error_vs_time")
                           for ext in ("png", "svg"))
    for name in names:  # matplotlib's SVG ids are salted at random unless told otherwise
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_each_format_is_drawn_once_with_its_layout(priced_sweep: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    summary = point_summary(priced_sweep)
    fig, *_ = plots.draw_error_vs_budget(summary.arms, scenario_name="s", n_tasks=40)
    default = fig.axes[0].get_position().bounds  # a subplot's place before any layout
    draws: list[str] = []
    real_draw = Figure.draw

    def counted(self: Figure, renderer: object) -> None:
        draws.append(type(renderer).__name__)
        real_draw(self, renderer)

    monkeypatch.setattr(Figure, "draw", counted)
    plots.write_png_svg(fig, tmp_path / "f.png", tmp_path / "f.svg")
    # savefig on a figure with a layout engine (even matplotlib's "none" placeholder) draws
    # it once more, without output, before the real draw
    assert draws == ["RendererAgg", "MixedModeRenderer"]  # the PNG, then the SVG
    assert fig.axes[0].get_position().bounds != default  # the constrained layout was applied
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "f.svg").read_bytes()[:1000]
