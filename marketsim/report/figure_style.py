"""How big a report figure is drawn and with what font size: the report's own figures, or the
same figures for a slide (16:9, 1920 × 1080 pixels, larger type), from the same drawing code
(:mod:`~marketsim.report.plots`, :mod:`~marketsim.report.sweep_plot`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class FigureStyle:
    """A figure's size in inches and resolution (None: the figure's own), and the base font
    size in points (None: matplotlib's), which every relative size ("small", "large") scales."""

    figsize: tuple[float, float] | None = None
    dpi: int | None = None
    font_size: float | None = None

    @contextmanager
    def fonts(self) -> Iterator[None]:
        """Draw and save a figure inside this block to give it this style's font size (a
        relative size is resolved when a text is made, a tick label when it is drawn)."""
        if self.font_size is None:
            yield
            return
        import matplotlib  # slow to import: only the processes that draw a plot load it

        with matplotlib.rc_context({"font.size": self.font_size}):
            yield


#: The report's figures as they always were.
REPORT_STYLE = FigureStyle()
#: A slide: 16:9 at 13.33 × 7.5 inches and 144 dpi (1920 × 1080 pixels), 17-point type.
SLIDE_STYLE = FigureStyle(figsize=(40 / 3, 7.5), dpi=144, font_size=17.0)
#: Where ``marketsim report --slides`` writes the slide figures, inside the run folder.
SLIDES_DIR = "plots/slides"
