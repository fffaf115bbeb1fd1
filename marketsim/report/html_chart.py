"""The interactive error chart of ``report.html``: the mean error of each arm with its 95 % band
(log scale) against labels, money or simulated time — a switch above the chart —, the value
of every point on hover, and an arm hidden or shown by a click on its legend entry.

Drawn with plotly (the optional ``html`` extra) from ``summary.json``'s arms, the same mean
curves, intervals and log-scale floor as the report's PNG figures
(:mod:`~marketsim.report.plots`), each arm in the same colour and line style."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from marketsim.errors import InputError
from marketsim.record.metric import Metric
from marketsim.record.summary_model import ArmSummary
from marketsim.report.formatting import clean_name, num
from marketsim.report.plots import X_AXES, arm_colour, error_floor

#: What ``--html`` says when plotly or Jinja2 (the page's template engine) is not installed.
PLOTLY_HINT = 'the HTML report needs plotly and Jinja2: pip install "marketsim[html]"'
#: The chart's element id in the page (fixed, so the page's bytes depend on the run only).
CHART_ID = "error-chart"
#: The switch's button labels, by ``summary.json`` axis name.
SWITCH = {"edges": "labels", "money": "money", "time": "time"}
#: plotly's dash names for the line styles of :func:`~marketsim.report.plots.arm_style`.
_DASHES = ("solid", "dash", "dashdot", "dot", "longdashdot", "longdash", "dot", "dashdot")


def plotly_module() -> Any:
    """``plotly.graph_objects``, or an :class:`InputError` saying how to install it."""
    try:
        import plotly.graph_objects as go  # optional third-party package (the "html" extra)
    except ImportError:
        raise InputError(PLOTLY_HINT) from None
    return go


def chart_axes(arms: Mapping[str, ArmSummary]) -> list[str]:
    """The x axes the switch offers: labels, money when every arm recorded it, simulated
    time."""
    money = bool(arms) and all(a.money is not None for a in arms.values())
    return ["edges", *(["money"] if money else []), "time"]


def _hover(arm: ArmSummary, metric: Metric, i: int) -> str:
    """The hover text of point ``i``: labels, money, time, the mean error and its interval."""
    low, high = arm.error_low[i], arm.error_high[i]
    band = ("" if low is None or high is None else
            f" [{metric.fmt(low).removesuffix(' %')}, {metric.fmt(high)}]")
    money = f"<br>money: {arm.money[i]:,.2f}" if arm.money is not None else ""
    return (f"labels: {num(arm.edges[i])}{money}<br>simulated time: {arm.sim_time[i]:,.1f}"
            f"<br>{metric.short}: {metric.fmt(arm.error[i])}{band}")


def chart_text(text: str) -> str:
    """A name as plotly text: plotly reads ``<b>``, ``<a href>`` and ``&…;`` in trace names,
    titles and hover labels as markup, so a name's ``&``, ``<`` and ``>`` are escaped (and
    control characters shown as escapes): the chart shows the name as written."""
    return html.escape(clean_name(text), quote=False)


def _x(arm: ArmSummary, axis: str) -> list[float]:
    return arm.axis_values(X_AXES[axis].key) or []


def error_chart(arms: Mapping[str, ArmSummary], *, metric: Metric, title: str,
                n_tasks: int | None, targets: Sequence[float]) -> Any:
    """The plotly figure: per arm a band trace and a mean-line trace sharing a legend entry;
    the switch restyles every trace's x values, so arms hidden from the legend stay hidden."""
    go = plotly_module()
    floor = error_floor(n_tasks if metric.percent else None, arms)
    axes = chart_axes(arms)
    fig = go.Figure()
    xs: dict[str, list[list[float]]] = {a: [] for a in axes}
    top = floor
    for idx, (name, arm) in enumerate(arms.items()):
        if not arm.edges:
            continue
        label = chart_text(name)
        mean = np.maximum(np.asarray(arm.error, dtype=float), floor)
        lo = np.maximum(np.asarray(arm.error_low, dtype=float), floor)
        hi = np.maximum(np.asarray(arm.error_high, dtype=float), floor)
        lo, hi = np.where(np.isnan(lo), mean, lo), np.where(np.isnan(hi), mean, hi)
        top = max(top, float(hi.max()))
        for axis in axes:
            x = _x(arm, axis)
            xs[axis] += [x + x[::-1], x]
        x0 = _x(arm, "edges")
        fig.add_trace(go.Scatter(
            x=x0 + x0[::-1], y=[*hi, *lo[::-1]], mode="lines", fill="toself",
            fillcolor=arm_colour(idx),
            opacity=0.18, line={"width": 0}, hoverinfo="skip", legendgroup=str(idx),
            showlegend=False, name=f"{label} band"))
        fig.add_trace(go.Scatter(
            x=x0, y=mean, mode="lines", name=f"{label} (n={arm.replicates})",
            legendgroup=str(idx), meta=label,
            line={"color": arm_colour(idx), "width": 2.2, "dash": _DASHES[idx % len(_DASHES)]},
            text=[_hover(arm, metric, i) for i in range(len(arm.edges))],
            # the name as a value (meta), never as part of the template: a "%{x}" in a name
            # is shown as written
            hovertemplate="%{text}<extra>%{meta}</extra>"))
    for t in targets:
        fig.add_hline(y=t, line={"color": "#404040", "width": 1, "dash": "dash"},
                      annotation_text=metric.target(t), annotation_position="top left")
    fig.add_hline(y=floor, line={"color": "#808080", "width": 1, "dash": "dot"})
    ticks = [10.0 ** k for k in range(int(np.floor(np.log10(floor))), 1)]
    fig.update_layout(
        title={"text": chart_text(title)}, template="plotly_white", height=560, hovermode="closest",
        legend={"title": {"text": "arm (replicates): click to hide or show"}},
        margin={"t": 120},
        xaxis={"title": {"text": X_AXES["edges"].label}, "separatethousands": True},
        yaxis={"type": "log", "title": {"text": f"{metric.label} (log scale)"},
               "range": [np.log10(floor * 0.8), np.log10(max(top * 1.25, floor * 10,
                                                           *targets))],
               "tickvals": ticks if metric.percent else None,
               "ticktext": [f"{100 * v:.3g} %" for v in ticks] if metric.percent else None},
        updatemenus=[{
            "type": "buttons", "direction": "right", "x": 1, "xanchor": "right", "y": 1.02,
            "yanchor": "bottom", "showactive": True, "active": 0,
            "buttons": [{"label": f"x: {SWITCH[a]}", "method": "update",
                         "args": [{"x": xs[a]}, {"xaxis.title.text": X_AXES[a].label,
                                                 "xaxis.autorange": True}]}
                        for a in axes]}])
    return fig
