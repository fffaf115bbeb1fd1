"""Names are text (issue #38, point 10): a scenario's or arm's name is data a user typed, and
every output shows it as written — report.md and sweep.md (Markdown: no emphasis, link, raw
HTML or extra table column comes from a name), report.html (no element or attribute comes from
a name, no link other than the page's anchors and the web), the plotly chart, the PNG figures
(matplotlib reads ``$…$``), curves.csv, sweep.csv, summary.json, the notebook widget's caption
and the terminal dashboard (rich markup).

A study with hostile names is compared with the same study (same seed, same numbers) with
plain names: the structure of every page must be the same, and the names must be in its text."""

from __future__ import annotations

import csv
import html
import io
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from rich.console import Console

import marketsim
from marketsim.report import plots, sweep
from marketsim.report.dashboard import LiveDashboard
from marketsim.report.formatting import clean_name, md_literal, table
from marketsim.report.html import write_html_report
from marketsim.report.sweep import SweepPoint, write_sweep_report
from tests.helpers import example_counts

HOSTILE = [
    "x *y* z",
    "[click](javascript:alert(1))",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "a|b|c",
    "`tick` \"dq\" 'sq'",
    "line\nbreak # head",
    "[bold]rich[/bold] é 漢 🙂",
    "$\\frac{$ _u &amp; %{x}",
    "<javascript:alert(2)>",
    "_hidden",
    "back\\slash\\",
    "1. list",
    "> quote ![i](x.png)",
]
SCENARIO_NAME = "<b>S</b> *s* [s](javascript:x) | `c` $x$"
PLAIN = [f"plain{i}" for i in range(len(HOSTILE))]


def _document(name: str, arms: list[str]) -> dict[str, Any]:
    return {"scenario": {"name": name, "seed": 3, "replicates": 2},
            "tasks": {"count": 30}, "workers": {"count": 6},
            "budget": {"edges": 120, "batch": 30},
            "arms": [{"name": n, "policy": ("uniform", "entropy-greedy")[i % 2]}
                     for i, n in enumerate(arms)]}


def _study(folder: Path, name: str, arms: list[str]) -> marketsim.StudyResult:
    """The study run into ``folder`` with report.md, report.html and a one-point sweep."""
    result = marketsim.run(marketsim.scenario_from_dict(_document(name, arms)), out=folder,
                           progress=False)
    write_html_report(folder)
    write_sweep_report(folder / "sweep", ["budget.batch"], [
        SweepPoint("points/p000", (("budget.batch", 30),), result.summary)])
    return result


def _unsaved(_fig: Any, png: Path, svg: Path) -> None:
    """Figure files without their pictures: the plain study is the reference for the pages'
    structure (which links its figures), and saving the figures was half of this module's
    time. The hostile study's are drawn and saved."""
    png.write_bytes(b"")
    svg.write_bytes(b"")


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    pytest.importorskip("plotly")
    pytest.importorskip("jinja2")
    tmp = tmp_path_factory.mktemp("names")
    hostile = _study(tmp / "hostile", SCENARIO_NAME, HOSTILE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "write_png_svg", _unsaved)
        patch.setattr(sweep, "write_png_svg", _unsaved)
        plain = _study(tmp / "plain", "plain", PLAIN)
    return {"hostile": (tmp / "hostile", hostile), "plain": (tmp / "plain", plain)}


def _checker() -> MarkdownIt:
    """A Markdown reader as GitHub's: raw HTML on, tables and strikethrough."""
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _structure(markdown: str) -> list[tuple[str, str]]:
    """Every Markdown token but text: (type, link target or image source)."""
    out = []
    for token in _checker().parse(markdown):
        for t in [token, *(token.children or [])]:
            if t.type not in ("text", "inline"):
                out.append((t.type, str(t.attrGet("href") or t.attrGet("src") or "")))
    return out


def _texts(markdown: str) -> str:
    """The text a reader sees, inline by inline (one per line)."""
    lines = []
    for token in _checker().parse(markdown):
        if token.type == "inline":
            lines.append("".join(c.content for c in token.children or []
                                 if c.type in ("text", "code_inline")))
    return "\n".join(lines)


def test_markdown_reports_keep_their_structure_and_show_names_as_written(
        studies: dict[str, tuple[Path, Any]]) -> None:
    (bad, _), (good, _) = studies["hostile"], studies["plain"]
    for name in ("report.md", "sweep/sweep.md"):
        hostile = (bad / name).read_text(encoding="utf-8")
        plain = (good / name).read_text(encoding="utf-8")
        # no emphasis, link, image, raw HTML, heading, list or table cell comes from a name
        assert _structure(hostile) == _structure(plain), name
        shown = _texts(hostile)
        for arm in HOSTILE:
            assert clean_name(arm) in shown, (name, arm)
    assert clean_name(SCENARIO_NAME) in _texts((bad / "report.md").read_text(encoding="utf-8"))


class _Page(HTMLParser):
    """Every element of a page with its attributes, and its text outside scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)


def _page(path: Path) -> _Page:
    parser = _Page()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_html_page_holds_no_element_link_or_attribute_from_a_name(
        studies: dict[str, tuple[Path, Any]]) -> None:
    hostile = _page(studies["hostile"][0] / "report.html")
    plain = _page(studies["plain"][0] / "report.html")
    assert hostile.elements == plain.elements  # every tag and attribute, in order
    text = "".join(hostile.text)
    for arm in HOSTILE:
        assert clean_name(arm) in text, arm
    assert clean_name(SCENARIO_NAME) in text
    ids = {value for _, attrs in hostile.elements for key, value in attrs if key == "id"}
    links = [value or "" for _, attrs in hostile.elements for key, value in attrs
             if key in ("href", "src")]
    # the glossary is promised and linked: anchors of the page, never a file beside it
    assert "#glossary" in links and any(link.startswith("#glossary-") for link in links)
    for link in links:
        assert link.startswith("#") and link[1:] in ids, link


def test_chart_and_figures_show_names_as_written(
        studies: dict[str, tuple[Path, Any]]) -> None:
    import matplotlib.pyplot as plt

    from marketsim.record.metric import ERROR_RATE
    from marketsim.report.html_chart import error_chart

    _, result = studies["hostile"]
    fig = error_chart(result.summary.arms, metric=ERROR_RATE, title=SCENARIO_NAME,
                      n_tasks=30, targets=())
    legend = [t.name for t in fig.data if t.showlegend is not False]
    # plotly reads <b>, <a href> and entities in names: each is escaped, and shown as written
    assert [html.unescape(n) for n in legend] == [f"{clean_name(a)} (n=2)" for a in HOSTILE]
    assert all("<" not in n for n in legend)
    assert html.unescape(fig.layout.title.text) == clean_name(SCENARIO_NAME)
    assert all("%{meta}" in t.hovertemplate for t in fig.data if t.hovertemplate)
    try:
        ax = result.plot()
        labels = [t.get_text().lstrip("\u200b") for t in ax.get_legend().get_texts()]
        assert labels == [f"{clean_name(a)} (n=2)".replace("$", "\\$") for a in HOSTILE]
    finally:
        plt.close("all")
    assert (studies["hostile"][0] / "error_vs_budget.png").stat().st_size > 0


def test_csv_and_json_files_round_trip_every_name(
        studies: dict[str, tuple[Path, Any]]) -> None:
    folder, _ = studies["hostile"]
    with open(folder / "curves.csv", newline="", encoding="utf-8") as f:
        arms = list(dict.fromkeys(row["arm"] for row in csv.DictReader(f)))
    assert arms == HOSTILE
    with open(folder / "sweep" / "sweep.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["arm"] for r in rows] == HOSTILE
    assert {r["reference"] for r in rows} == {HOSTILE[0]}
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert list(summary["arms"]) == HOSTILE and summary["scenario"] == SCENARIO_NAME
    assert list(summary["comparisons"]["arms"]) == HOSTILE[1:]
    sweep = json.loads((folder / "sweep" / "sweep.json").read_text(encoding="utf-8"))
    assert [r["arm"] for r in sweep["rows"]] == HOSTILE


def test_terminal_dashboard_prints_rich_markup_in_names_literally(
        studies: dict[str, tuple[Path, Any]]) -> None:
    _, result = studies["hostile"]
    console = Console(record=True, width=220, height=60, force_terminal=True,
                      file=io.StringIO())
    dash = LiveDashboard(console, refresh_per_second=20)
    dash.start(result.scenario.outline, None)
    for count, unit in enumerate(result.units, start=1):
        dash.unit_done(unit, count, len(result.units))
    dash.stop(interrupted=False)
    console.print(dash.render())
    text = console.export_text()
    for arm in HOSTILE:
        assert clean_name(arm) in text, arm
    assert "[bold]rich[/bold]" in text


def test_widget_caption_shows_names_as_text() -> None:
    pytest.importorskip("ipywidgets")
    from marketsim.widgets import explore

    doc = _document(SCENARIO_NAME, HOSTILE[:4])
    explorer = explore(marketsim.scenario_from_dict(doc), key="budget.batch", values=[30],
                       replicates=1)
    caption = _Page()
    caption.feed(explorer.caption.value)
    assert [tag for tag, _ in caption.elements] == ["b"] * 4  # the caption's own bold only
    text = "".join(caption.text)
    for arm in HOSTILE[:4]:
        assert arm in text


NAMES = st.text(alphabet=st.sampled_from(list("ab *_`[]()<>!|&#\\$~-+.:1\n\"'é漢"))
                | st.characters(codec="utf-8"), min_size=1, max_size=24)


@pytest.mark.parametrize("examples", example_counts(60, 300))
def test_a_markdown_literal_is_shown_as_written_in_a_sentence_and_a_table(examples: int) -> None:
    """The category, fuzzed: whatever a name holds, inserted as the reports insert names (a
    heading, emphasis in a sentence, a list item, a table cell), the Markdown shows it as
    written and has the structure of a plain name's."""
    @settings(max_examples=examples, deadline=None)
    @given(NAMES)
    def check(name: str) -> None:
        _shown_as_written(name)

    check()


def _shown_as_written(name: str) -> None:
    def doc(text: str) -> str:
        return "\n".join([f"# {text}: title", "", f"Against *{text}* and {text}.", "",
                          f"- *{text}*: stopped", "",
                          *table(["arm", "error"], [[text, "1 %"]])])

    shown = md_literal(name)
    assert _structure(doc(shown)) == _structure(doc("plain"))
    texts = _texts(doc(shown)).split("\n")
    want = clean_name(name)
    assert texts[:3] == [f"{want}: title", f"Against {want} and {want}.", f"{want}: stopped"]
    assert texts[-2] == want  # the table's one cell of the name


def test_validate_prints_a_name_on_its_own_line_without_terminal_codes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from marketsim.cli import main

    (tmp_path / "s.toml").write_text(
        '[scenario]\nname = "red\\u001b[31m\\nname: fake"\n[tasks]\ncount = 20\n'
        '[workers]\ncount = 4\n[budget]\nedges = 60\nbatch = 20\n'
        '[[arms]]\nname = "a\\nb"\npolicy = "uniform"\n', encoding="utf-8")
    assert main(["validate", str(tmp_path / "s.toml")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    named = [ln for ln in out.splitlines() if ln.startswith("name:")]
    assert len(named) == 1 and named[0].startswith("name: red\\x1b[31m\\nname: fake   seed:")
    assert "arm a\\nb: policy uniform" in out
