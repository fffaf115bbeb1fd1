"""Interactive exploration in a notebook: a slider over one setting of a small scenario that
re-runs it and redraws its error plot when it moves (ipywidgets, the ``notebook`` extra).

    from marketsim.widgets import explore
    explore("scenarios/teaching/01_uniform_vs_adaptive.toml", key="budget.batch",
            values=[20, 40, 100, 400], replicates=2)

At about a second a run for a lesson-sized scenario this feels like an interactive model;
each value's result is kept, so going back to a value shown before is instant. The key is any
key :meth:`marketsim.Scenario.replace` takes (``"workers.count"``, ``"arms.adaptive.gold.rate"``).
"""

from __future__ import annotations

import html
import io
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from marketsim.api import StudyResult, load_scenario, run
from marketsim.errors import InputError
from marketsim.report.formatting import clean_name, fmt_error
from marketsim.report.plots import FIGSIZE
from marketsim.scenario.specs import Scenario

NOTEBOOK_HINT = 'pip install "marketsim[notebook]" (ipywidgets)'


def _ipywidgets() -> Any:
    """ipywidgets, imported here only: it is the optional ``notebook`` extra."""
    try:
        import ipywidgets  # optional third-party package (the "notebook" extra)
    except ImportError:
        raise ModuleNotFoundError(f"marketsim.widgets needs ipywidgets: {NOTEBOOK_HINT}") from None
    return ipywidgets


class Explorer:
    """The widget :func:`explore` returns: ``slider`` (a ``SelectionSlider`` over the values),
    ``image`` (the error plot as PNG), ``caption`` (each arm's final error) and ``result``
    (the :class:`~marketsim.StudyResult` on screen); ``widget`` is the box a notebook shows
    (the explorer displays itself as that box). The caption is HTML: names are escaped into
    it, so a name is shown as written."""

    def __init__(self, scenario: Scenario, key: str, values: Sequence[Any], *, x: str,
                 targets: bool, replicates: int | None, jobs: int) -> None:
        widgets = _ipywidgets()
        self.scenario, self.key, self.values = scenario, key, list(values)
        self.x, self.targets, self.replicates, self.jobs = x, targets, replicates, jobs
        self.results: dict[int, StudyResult] = {}
        self.slider = widgets.SelectionSlider(
            options=[(str(v), i) for i, v in enumerate(self.values)], value=0,
            description=key, continuous_update=False, style={"description_width": "initial"},
            layout=widgets.Layout(width="60%"))
        self.image = widgets.Image(format="png")
        self.caption = widgets.HTML()
        self.widget = widgets.VBox([self.slider, self.image, self.caption])
        self.slider.observe(lambda change: self.show(change["new"]), names="value")
        self.show(0)

    @property
    def result(self) -> StudyResult:
        """The study of the value the slider is on."""
        return self.results[self.slider.value]

    def show(self, index: int) -> StudyResult:
        """Run (once per value) the scenario with ``key`` set to ``values[index]`` and draw it."""
        if index not in self.results:
            scenario = self.scenario.replace({self.key: self.values[index]})
            self.results[index] = run(scenario, replicates=self.replicates, jobs=self.jobs,
                                      progress=False)
        result = self.results[index]
        self.image.value = _png(result, self.x, self.targets)
        self.caption.value = "final error: " + ", ".join(
            f"<b>{html.escape(clean_name(name))}</b> {fmt_error(arm.final_error_mean)}"
            for name, arm in result.summary.arms.items())
        return result

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a notebook front end
        from IPython.display import display

        display(self.widget)


def _png(result: StudyResult, x: str, targets: bool) -> bytes:
    """The study's error plot as PNG bytes (a bare Figure: no pyplot state is touched)."""
    from matplotlib.figure import Figure  # matplotlib is slow to import: only when drawing

    fig = Figure(figsize=FIGSIZE, dpi=100, layout="constrained")
    result.plot(fig.add_subplot(), x=x, targets=targets)
    buf = io.BytesIO()
    with warnings.catch_warnings():  # a name in a script the font lacks: boxes, no noise
        warnings.filterwarnings("ignore", r"Glyph \d+ .*missing from font", UserWarning)
        fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def explore(scenario: Scenario | str | Path, key: str, values: Sequence[Any], *,
            x: str = "labels", targets: bool = True, replicates: int | None = None,
            jobs: int = 1) -> Explorer:
    """A slider over ``values`` of the setting ``key`` (dotted, as ``Scenario.replace`` and
    ``[sweep]`` name it) that re-runs ``scenario`` (a Scenario or a TOML file) at the chosen
    value and redraws its error plot against ``x`` (``"labels"``, ``"money"`` or ``"time"``),
    with the target errors when ``targets``. ``replicates`` overrides the scenario's (fewer
    is faster). A scenario's own ``[sweep]`` is left out: the slider is the sweep. Display
    the returned :class:`Explorer` in a notebook cell."""
    if isinstance(scenario, str | Path):
        scenario = load_scenario(scenario)
    if not values:
        raise InputError(f"explore({key!r}): give at least one value")
    if scenario.sweep:  # the slider is the sweep: each value runs one study
        scenario = scenario.without_sweep()
    if x not in ("labels", "money", "time"):
        raise InputError(f"x must be 'labels', 'money' or 'time', got {x!r}")
    return Explorer(scenario, key, values, x=x, targets=targets, replicates=replicates,
                    jobs=jobs)
