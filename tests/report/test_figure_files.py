"""A report's figure files: the same figure gives the same bytes, run after run (the SVG's
element ids too), and saving a figure draws it once per format, with its constrained layout
(the costliest part of a small run's report is drawing its figures)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from marketsim.record.summary_model import Summary
from marketsim.report import plots, sweep_plot
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


@pytest.mark.parametrize("width", [3.0, 6.5, 14.0])
def test_sweep_title_wrapped_once_as_matplotlib_wraps_it(width: float) -> None:
    """The sweep figure's long title is wrapped once, when made, with the line breaks
    matplotlib's ``wrap=True`` finds again at every measurement of the text: the same
    picture (one line when it fits, a lone word too wide on its own line)."""
    text = ("Final error and labels needed to reach a target, against workers.price: mean over "
            "replicates with its 95 % interval; hollow k/n = only k of n replicates reached it "
            "(mean of those); Donaudampfschifffahrtsgesellschaftskapitänswitwenrentenkasse "
            "ok\nsecond paragraph, its own line")
    pictures = []
    for ours in (False, True):
        fig = Figure(figsize=(width, 2.0), dpi=120)
        if ours:
            sweep_plot.wrap_suptitle(fig, text, fontsize="medium")
        else:
            fig.suptitle(text, fontsize="medium", wrap=True)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})
        pictures.append(buf.getvalue())
        if ours:  # wrapped when made: more lines than the text's own two
            lines = fig.get_suptitle().split("\n")
            assert len(lines) > 2 and not fig.texts[0].get_wrap()
            long_word = "Donaudampfschifffahrtsgesellschaftskapitänswitwenrentenkasse"
            assert (long_word in lines) is (width == 3.0)  # too wide: alone on its line
    assert pictures[0] == pictures[1]
