"""``report.html``: a run's report as one self-contained page to open in a browser — the
interactive error chart (:mod:`~marketsim.report.html_chart`) and every table and claim of
``report.md``, converted from the very lines ``report.md`` is written from
(:func:`~marketsim.report.markdown.report_lines`), so the page and the Markdown report read
the same ``summary.json`` and print every number the same way; its terms link to the glossary
at the end of the page.

Nothing is fetched when the page opens: plotly's JavaScript and the style sheet are inline. The
page is a Jinja2 template that escapes every value it is given; only the HTML that
markdown-it (raw HTML off, safe links only: :mod:`~marketsim.report.html_text`) and plotly
wrote is inserted as it is, so a scenario's or arm's name is text on the page, never markup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from marketsim.errors import InputError
from marketsim.record.files import write_text_atomic
from marketsim.record.metric import metric_of
from marketsim.record.summary import targets_of
from marketsim.record.summary_model import Summary, read_summary
from marketsim.report.formatting import clean_name
from marketsim.report.glossary import link_terms
from marketsim.report.html_chart import (
    CHART_ID,
    PLOTLY_HINT,
    SWITCH,
    chart_axes,
    error_chart,
    plotly_module,
)
from marketsim.report.html_text import GLOSSARY_ID, glossary_anchor, glossary_html, markdown_html
from marketsim.report.markdown import fewest_replicates, report_lines, shown_names
from marketsim.report.render import SetupFallback, load_setup, task_count
from marketsim.scenario.specs import Scenario

HTML_NAME = "report.html"

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a;
       max-width: 1200px; margin: 0 auto; padding: 1.5rem; line-height: 1.45; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem;
     border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; display: block;
        overflow-x: auto; }
th, td { border: 1px solid #d0d0d0; padding: .3rem .55rem; white-space: nowrap; }
th { background: #f2f4f7; } tbody tr:nth-child(even) { background: #fafbfc; }
code { background: #f2f4f7; padding: 0 .25rem; border-radius: 3px; font-size: .88em; }
blockquote { border-left: 4px solid #d55e00; margin: 1rem 0; padding: .3rem 1rem;
             background: #fff6f0; }
.caption { color: #444; font-size: .9rem; } footer { color: #666; font-size: .8rem;
           margin-top: 3rem; }
"""


#: The page. Autoescaped: ``title``, ``heading`` and ``caption`` are text; ``top``, ``chart``,
#: ``rest`` and ``glossary`` are HTML that markdown-it and plotly wrote (``Markup``).
_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}: marketsim report</title>
<style>{{ style }}</style>
</head>
<body>
{{ top }}
<h2>{{ heading }} against labels, money or time</h2>
<div class="chart">
{{ chart }}
</div>
<p class="caption">{{ caption }}</p>
{{ rest }}
{{ glossary }}
<footer>Written by <code>python -m marketsim report RUN_DIR --html</code> from this run's
<code>summary.json</code>; <code>report.md</code> holds the same numbers.</footer>
</body>
</html>
"""


def _jinja() -> tuple[Any, Any]:
    """Jinja2's autoescaping page template and ``Markup`` (the ``html`` extra), or an
    :class:`InputError` saying how to install it."""
    try:
        import jinja2  # optional third-party package (the "html" extra)
        from markupsafe import Markup  # installed with Jinja2
    except ImportError:
        raise InputError(PLOTLY_HINT) from None
    return jinja2.Environment(autoescape=True).from_string(_PAGE), Markup


def require_html_extra() -> None:
    """Fail (one line saying what to install) unless plotly and Jinja2 are both installed."""
    plotly_module()
    _jinja()


def _caption(summary: Summary, axes: list[str], floor_note: str) -> str:
    """What the chart shows and how to use it."""
    metric = metric_of(summary)
    band = ("its 95 % confidence band (Student-t, clipped at 0)"
            if fewest_replicates(summary) >= 2 else
            "no band (a confidence band needs at least two replicates)")
    switch = ", ".join(SWITCH[a] for a in axes)
    return (f"Mean {metric.label} over replicates (line) with {band}, on a log scale; "
            f"{floor_note} The buttons above the chart switch the x axis ({switch}: each "
            "arm's mean over replicates at every label count); hover a curve for its values; "
            "click an arm in the legend to hide or show it (double-click: only that arm).")


def report_html(summary: Summary, setup: Scenario | None, *,
                run_dir: Path | None = None) -> str:
    """The page: the report's title and key results, the chart, then every section of
    ``report.md`` except its figures and file list, then the glossary its terms link to."""
    page, html = _jinja()
    metric = metric_of(summary)
    n_tasks = task_count(setup) if metric.percent else None
    title = f"{summary.scenario}: {'task error' if metric.percent else metric.label}"
    fig = error_chart(summary.arms, metric=metric, n_tasks=n_tasks,
                      targets=targets_of(summary.arms),
                      title=title + ("" if summary.complete else " (partial run)"))
    chart = fig.to_html(full_html=False, include_plotlyjs=True, div_id=CHART_ID,
                        config={"displaylogo": False, "responsive": True})
    floor = ("errors below half of one task's error (0.5 / number of tasks), 0 included, "
             "are drawn at that floor (dotted line)." if n_tasks else
             "values below half the smallest positive mean are drawn at that floor (dotted "
             "line).")
    lines = report_lines(summary, setup, figures=[], run_dir=run_dir,
                         glossary=f"#{GLOSSARY_ID}")
    lines = link_terms("\n".join(lines), glossary_anchor_link,
                       names=shown_names(summary)).split("\n")
    split = next((i for i, ln in enumerate(lines) if ln.startswith("## ")), len(lines))
    return str(page.render(
        title=clean_name(summary.scenario), style=html(_STYLE),
        top=html(markdown_html(lines[:split])), heading=metric.heading, chart=html(chart),
        caption=_caption(summary, chart_axes(summary.arms), floor),
        rest=html(markdown_html(lines[split:])), glossary=html(glossary_html())))


def glossary_anchor_link(heading: str) -> str:
    """A term's link on the page: the anchor of its entry in the page's glossary."""
    return f"#{glossary_anchor(heading)}"


def write_html_report(run_dir: str | Path, fallback: SetupFallback | None = None) -> Path:
    """Write ``report.html`` into the run folder from its ``summary.json`` (and ``run.json``
    for the setup); its path. Without plotly or Jinja2, or without a ``summary.json``, an
    :class:`InputError` says what to do."""
    require_html_extra()  # fail before reading anything when the extra is missing
    run_dir = Path(run_dir)
    try:
        summary = read_summary(run_dir / "summary.json")
    except OSError:
        raise InputError("no summary.json here: render the report first (python -m "
                         "marketsim report RUN_DIR)", source=str(run_dir)) from None
    setup = load_setup(run_dir, summary, fallback)
    path = run_dir / HTML_NAME
    write_text_atomic(path, report_html(summary, setup, run_dir=run_dir))
    return path
