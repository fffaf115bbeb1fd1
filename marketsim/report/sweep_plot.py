"""The sweep figure, ``labels_needed_vs_sweep.png``: against the first swept key, the final
error and the labels needed to reach each target, per arm, with the paired difference to the
reference arm (the first) in the row of panels below.

A column of panels per quantity (the final error, then one per target), two rows of panels
(values, then differences) per combination of the other swept values. Each arm keeps one colour,
marker and line style in every panel, the same as in the run's error-versus-budget plot
(:func:`~marketsim.report.plots.arm_style`). A point is the mean over replicates with its 95 %
interval as a bar; where only some replicates reached a target the point is drawn hollow at the
mean of those that did, with ``k/n`` beside it (that mean favours the replicates that were
quick, so it has no interval); where none did there is no point, and the line breaks there
instead of jumping the gap. A numeric swept value sits on a linear axis (a logarithmic one
when its values span a factor of 10 or more and exceed 1: counts, not fractions); anything
else (a model name, a list of prices) is a category in sweep order."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from marketsim.record.metric import ERROR_RATE, Metric
from marketsim.record.summary import TARGETS
from marketsim.report.figure_style import REPORT_STYLE, FigureStyle
from marketsim.report.formatting import plot_text
from marketsim.report.plots import arm_colour, arm_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PLOT_NAME = "labels_needed_vs_sweep"

#: What the value of a swept key counts, for the axis label (keys not listed get none).
UNITS = {
    "tasks.count": "tasks",
    "tasks.classes": "classes",
    "tasks.features.count": "features",
    "workers.count": "workers",
    "workers.arrivals.rate": "arrivals per unit of simulated time",
    "workers.service.mean": "units of simulated time",
    "budget.edges": "labels",
    "budget.batch": "labels per batch",
    "scenario.replicates": "replicates",
}


def axis_label(key: str) -> str:
    """The x-axis label of a swept key: the dotted key and its unit (``workers.count
    (workers)``)."""
    unit = UNITS.get(key)
    return f"{key} ({unit})" if unit else key


def hashable(value: Any) -> Any:
    """A swept value as a dictionary key: a list (``[1, 1.5]``) becomes a tuple."""
    return tuple(hashable(v) for v in value) if isinstance(value, list | tuple) else value


def tick_text(value: Any) -> str:
    """A swept value as a tick label: ``20``, ``0.25``, ``one-coin``, ``[1, 1.5]`` (a string
    as :func:`~marketsim.report.formatting.plot_text` shows it: as written)."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(tick_text(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else plot_text(value)


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _x_axis(ax: Any, positions: list[float], labels: list[str], log: bool) -> None:
    """Ticks at exactly the swept values, with a margin so end points are not on the frame."""
    lo, hi = min(positions), max(positions)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.25, hi * 1.25)
    else:
        pad = 0.06 * (hi - lo) if hi > lo else 0.5
        ax.set_xlim(lo - pad, hi + pad)
    ax.set_xticks(positions, labels)
    ax.minorticks_off()


def _get(row: dict[str, Any], key: str) -> float | None:
    value = row.get(key)
    return None if value is None or value == "" else float(value)


def reach_point(row: dict[str, Any], target: float,
                axis: str = "edges") -> tuple[float, float, float, int | None]:
    """(mean, low, high, reached) of the labels (``axis`` ``money``: money) to ``target`` at
    one grid point: the mean over replicates and its interval when every replicate reached it
    (``reached`` None; low = high = mean without an interval), else the mean over the
    ``reached`` replicates that did (low = high = that mean), NaN when none did. A row without
    interval columns has the mean curve's reading."""
    base = f"{axis}_to_{target:g}"
    if axis == "edges" and f"{base}_mean" not in row:
        mean = _get(row, base)
        return (math.nan,) * 3 + (None,) if mean is None else (mean, mean, mean, None)
    mean = _get(row, f"{base}_mean")
    if mean is not None:
        low, high = _get(row, f"{base}_low"), _get(row, f"{base}_high")
        return (mean, mean if low is None else low, mean if high is None else high, None)
    partial = _get(row, f"{base}_mean_of_reached")
    reached = row.get(f"edges_to_{target:g}_reached")
    if partial is None or not reached:
        return (math.nan,) * 3 + (None,)
    return (partial, partial, partial, int(reached))


def _value_point(row: dict[str, Any], prefix: str) -> tuple[float, float, float, int | None]:
    """(mean, low, high, None) of a plain mean-and-interval column group (NaN when absent)."""
    mean = _get(row, f"{prefix}_mean" if prefix.startswith("diff_") else prefix)
    if mean is None:
        return (math.nan,) * 3 + (None,)
    ends = ("low", "high") if prefix.startswith("diff_") else ("error_low", "error_high")
    stem = prefix if prefix.startswith("diff_") else "final"
    low, high = (_get(row, f"{stem}_{end}") for end in ends)
    return (mean, mean if low is None else low, mean if high is None else high, None)


def _draw_arm(ax: Any, xs: list[float], pts: list[tuple[float, float, float, int | None]],
              arm: str, index: int, of: int | None) -> int:
    """One arm's line (broken where a point is NaN), its interval bars, and its partial points
    hollow with ``k/n``; the number of points drawn."""
    style = arm_style(index)
    full = [i for i, p in enumerate(pts) if not math.isnan(p[0]) and p[3] is None]
    ax.plot(xs, [p[0] for p in pts], label=plot_text(arm), linewidth=1.6, markersize=6,
            markevery=full, markeredgewidth=1.3, zorder=3, **style)
    bars = [(x, p) for x, p in zip(xs, pts, strict=True) if p[2] > p[1]]
    if bars:
        ax.vlines([x for x, _ in bars], [p[1] for _, p in bars], [p[2] for _, p in bars],
                  colors=arm_colour(index), linewidth=1.2, alpha=0.8, zorder=2, label="_interval")
    partial = [(x, p) for x, p in zip(xs, pts, strict=True) if p[3] is not None]
    if partial:
        ax.plot([x for x, _ in partial], [p[0] for _, p in partial], linestyle="none",
                marker=style["marker"], markersize=7, markerfacecolor="white",
                markeredgecolor=arm_colour(index), markeredgewidth=1.5, zorder=4,
                label="_some replicates")
        for x, p in partial:
            ax.annotate(f"{p[3]}/{of if of is not None else '?'}", (x, p[0]),
                        textcoords="offset points", xytext=(5, 4), fontsize="x-small",
                        color=arm_colour(index))
    return sum(not math.isnan(p[0]) for p in pts)


def wrapped(text: str, width: float, measure: Callable[[str], float]) -> str:
    """``text`` with line breaks where matplotlib's ``wrap=True`` puts them: each line the
    longest run of words (split at spaces, after the text's own line breaks) whose width
    ``measure(line)`` is at most ``width``, a lone word too wide on its own line.

    matplotlib wraps again at every measurement of the text (the layout and each format's
    draw) and tries the words one by one; computed once, by bisection (a run's width grows
    with its words), the sweep figure's title cost a quarter of the figure's CPU time less."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        words = paragraph.split(" ")
        while len(words) > 1:
            lo, hi = 1, len(words)  # the first lo words fit (one always "fits"); hi + 1 do not
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if measure(" ".join(words[:mid])) > width:
                    hi = mid - 1
                else:
                    lo = mid
            lines.append(" ".join(words[:lo]))
            words = words[lo:]
        lines.extend(words)
    return "\n".join(lines)


def wrap_suptitle(fig: Figure, text: str, **kwargs: Any) -> None:
    """``fig.suptitle(text, **kwargs)`` wrapped to the figure's width, as ``wrap=True`` would
    (:func:`wrapped`), measured once at the figure's resolution."""
    from matplotlib import cbook
    from matplotlib.backends.backend_agg import RendererAgg

    title = fig.suptitle(text, **kwargs)
    renderer = RendererAgg(1, 1, fig.dpi)  # measures only: no canvas to speak of
    prop = title.get_fontproperties()

    def measure(line: str) -> float:
        width, _height, _descent = renderer.get_text_width_height_descent(
            line, prop, ismath=cbook.is_math_text(line))
        return math.ceil(width)  # as matplotlib's wrapping measures

    title.set_text(wrapped(text, fig.get_figwidth() * fig.dpi, measure))


def sweep_figure(keys: list[str], rows: list[dict[str, Any]], metric: Metric = ERROR_RATE,
                 targets: Sequence[float] = TARGETS,
                 axes: Sequence[str] = ("edges",), style: FigureStyle = REPORT_STYLE) -> Figure:
    """The figure (see the module's docstring): a panel for the final error, then one per
    target and axis in ``axes`` (``edges``: labels; ``money``: money, for a market with
    prices); the difference row is drawn when some row has a paired difference to a
    reference arm. ``style`` sets its size and resolution (by default, grown with the number
    of panels); its font size applies when drawn inside ``style.fonts()``."""
    # matplotlib is optional and slow to import: only a run that draws a plot loads it.
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    x_key, other = keys[0], keys[1:]
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    x_keys = list(dict.fromkeys(hashable(r[x_key]) for r in rows))
    x_shown = {hashable(r[x_key]): r[x_key] for r in rows}
    numeric = _numeric(x_keys)
    positions = [float(v) if numeric else float(i) for i, v in enumerate(x_keys)]
    where = dict(zip(x_keys, positions, strict=True))
    log_x = (numeric and min(positions) > 0 and max(positions) > 1
             and max(positions) / min(positions) >= 10)
    span = (max(positions) - min(positions)) or 1.0

    def dodge(x: float, index: int) -> float:
        """Arms side by side around each swept value, so their error bars do not overlap."""
        step = index - (len(arms) - 1) / 2
        return x * 1.03 ** step if log_x else x + 0.012 * span * step

    reference = next((r.get("reference") for r in rows if r.get("reference")), None)
    has_diff = any(r.get("diff_final_error_mean") is not None for r in rows)
    combos = list(dict.fromkeys(tuple(hashable(r[k]) for k in other) for r in rows)) or [()]
    quantities: list[tuple[str, float | None]] = [("final", None), *(
        (axis, t) for axis in axes for t in targets)]
    n_rows = len(combos) * (2 if has_diff else 1)
    fig = Figure(figsize=style.figsize or (4.6 * len(quantities), 0.9 + 3.2 * n_rows),
                 dpi=style.dpi or 120, layout="constrained")
    grid = fig.subplots(n_rows, len(quantities), squeeze=False)
    fmt_value = FuncFormatter(lambda y, _pos: metric.fmt(y))
    for (c, combo), (col, (what, target)) in itertools.product(enumerate(combos),
                                                               enumerate(quantities)):
        mine = [r for r in rows if tuple(hashable(r[k]) for k in other) == combo]
        where_txt = ", ".join(f"{k} = {tick_text(v)}" for k, v in zip(other, combo,
                                                                      strict=True))
        for diff in ((False, True) if has_diff else (False,)):
            ax = grid[c * (2 if has_diff else 1) + int(diff)][col]
            drawn = 0
            for index, arm in enumerate(arms):
                if diff and arm == reference:
                    continue
                arm_rows = sorted((r for r in mine if r["arm"] == arm),
                                  key=lambda r: where[hashable(r[x_key])])
                if what == "final":
                    pts = [_value_point(r, "diff_final_error" if diff else "final_error")
                           for r in arm_rows]
                elif diff:
                    pts = [_value_point(r, f"diff_{what}_to_{target:g}") for r in arm_rows]
                else:
                    pts = [reach_point(r, target or 0.0, what) for r in arm_rows]
                xs = [dodge(where[hashable(r[x_key])], index) for r in arm_rows]
                of = arm_rows[0].get("replicates") if arm_rows else None
                drawn += _draw_arm(ax, xs, pts, arm, index, of)
            amount = "money" if what == "money" else "labels"
            title = (f"final {metric.short}" if what == "final"
                     else f"{amount} to reach {metric.target(target or 0.0)}")
            if diff:
                title = f"{title}: arm − {plot_text(reference)}"
                if drawn:
                    ax.axhline(0.0, color="0.4", linewidth=0.9, linestyle=":", zorder=1,
                               label="_zero")
            ax.set_title(title + (f"\n{where_txt}" if where_txt else ""), fontsize="medium")
            _x_axis(ax, positions, [tick_text(x_shown[v]) for v in x_keys], log_x)
            ax.set_xlabel(axis_label(x_key))
            if what == "final":
                ax.set_ylabel(f"paired difference of final {metric.short}s, 95 % interval"
                              if diff else f"final {metric.short} (mean, 95 % interval)")
                if metric.percent and diff:
                    ax.yaxis.set_major_formatter(FuncFormatter(
                        lambda y, _pos: f"{100 * y:+.3g} pt"))
                else:
                    ax.yaxis.set_major_formatter(fmt_value)
            else:
                ax.set_ylabel(f"paired difference in {amount}, 95 % interval" if diff else
                              f"{amount} needed (mean, 95 % interval)")
            ax.grid(alpha=0.3)
            if what != "final" and drawn:
                ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:,.0f}"))
            elif not drawn:
                ax.set_yticks([])
                ax.text(0.5, 0.5, ("no replicate where both arms reached it" if diff else
                                   "no arm reached it within the budget"),
                        transform=ax.transAxes, ha="center", va="center", color="0.4")
    amounts = " and ".join("money" if a == "money" else "labels" for a in axes)
    wrap_suptitle(
        fig,
        f"Final {metric.short} and {amounts} needed to reach a target, against {x_key}: mean "
        "over replicates with its 95 % interval; hollow k/n = only k of n replicates reached "
        "it (mean of those); no point = none did"
        + (f"; lower row: paired difference to {plot_text(reference)}" if has_diff else ""),
        fontsize="medium")
    if arms:
        handles, labels = grid[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, title="arm", loc="outside lower center",
                   ncols=min(len(arms), 4), fontsize="small")
    return fig
