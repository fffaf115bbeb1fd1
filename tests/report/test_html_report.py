"""``marketsim report RUN_DIR --html`` and ``--slides`` (issue #31, point 11): one self-contained
``report.html`` holding every arm and the very numbers of ``report.md``'s tables, opened in a
real headless Chromium from a ``file://`` URL with the network blocked; and the report's
figures again at 16:9 for slides."""

from __future__ import annotations

import io
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from marketsim.cli import main
from marketsim.report.html_text import markdown_html
from tests import browser
from tests.browser import browser_or_skip, offline_page

ROOT = Path(__file__).resolve().parents[2]
#: Prices per tier, so money differs from labels and the chart's money switch has something
#: to show.
SCENARIO = """
[scenario]
name = "html <check> & prices"
seed = 5
replicates = 3

[tasks]
count = 80
classes = 2
prior = [0.7, 0.3]

[workers]
count = 8

[workers.tiers]
cuts = [0.85]
noise = 0.05
prices = [1.0, 2.0]

[budget]
edges = 400
batch = 40

[[arms]]
name = "uniform"
policy = "uniform"
inference = "one-coin-shifted-beta"

[[arms]]
name = "entropy-greedy"
policy = "entropy-greedy"
inference = "one-coin-shifted-beta"

[[arms]]
name = "qasca, qualified only"
policy = { name = "qasca", min_tier = 1 }
inference = "one-coin-shifted-beta"
"""
ARMS = ("uniform", "entropy-greedy", "qasca, qualified only")

SWEEP = """
[scenario]
seed = 3
replicates = 2
[tasks]
count = 30
[workers]
count = 8
[budget]
edges = 120
batch = 20
[sweep]
"budget.batch" = [20, 40]
[[arms]]
name = "uniform"
policy = "uniform"
[[arms]]
name = "entropy-greedy"
policy = "entropy-greedy"
"""


@pytest.fixture(scope="module")
def html_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the priced scenario, its report rendered with ``--html --slides``."""
    pytest.importorskip("plotly", reason='the HTML report needs plotly: pip install '
                        '"marketsim[html]"')
    tmp = tmp_path_factory.mktemp("html")
    (tmp / "s.toml").write_text(SCENARIO)
    # the figures are drawn once, by the report (the run's would be drawn again)
    assert main(["run", str(tmp / "s.toml"), "--out", str(tmp / "run"), "--quiet",
                 "--no-figures"]) == 0
    assert main(["report", str(tmp / "run"), "--html", "--slides", "--quiet"]) == 0
    return tmp / "run"


class _Tables(HTMLParser):
    """The text of every table cell of an HTML page, table by table, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _markdown_tables(text: str) -> list[list[list[str]]]:
    """The cells of every pipe table of ``report.md`` as plain text (emphasis and code marks
    dropped, ``\\|`` unescaped), separator rows left out."""
    tables: list[list[list[str]]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            if not re.fullmatch(r"\|(\s*-+:?\s*\|)+", line):
                cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
                tables[-1].append([re.sub(r"\*\*|`|(?<![\w*])\*|\*(?![\w*])", "",
                                          c.strip()).replace("\\|", "|") for c in cells])
        previous = line
    return tables


def test_page_is_self_contained_and_shows_every_table_of_the_markdown_report(
        html_run: Path) -> None:
    """Every table of ``report.md`` is on the page cell for cell (the same numbers, printed
    the same way); nothing on the page is loaded from the network; every arm is named."""
    page = (html_run / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)  # every script inline
    assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']?https?://", page, re.I)
    assert not re.search(r"@import\s+(url\()?[\"']?https?://", page, re.I)
    assert "Plotly.newPlot" in page
    parser = _Tables()
    parser.feed(page)
    markdown = _markdown_tables((html_run / "report.md").read_text(encoding="utf-8"))
    assert len(markdown) >= 6  # arms, checkpoints, targets, costs, comparisons...
    assert parser.tables == markdown
    arms_table = markdown[0]
    assert [row[0] for row in arms_table[1:]] == list(ARMS)
    assert all(re.search(r"\d+\.\d\d % \[", row[-1]) for row in arms_table[1:])
    for name in ARMS:
        assert f'"{name} (n=3)"' in page  # the chart's legend entry
    # the scenario's name is escaped, never markup
    assert "html &lt;check&gt; &amp; prices" in page and "<check>" not in page


def test_page_is_the_same_bytes_when_written_again(html_run: Path) -> None:
    first = (html_run / "report.html").read_bytes()
    assert main(["report", str(html_run), "--html", "--quiet"]) == 0
    assert (html_run / "report.html").read_bytes() == first


def test_slide_figures_are_16_by_9(html_run: Path) -> None:
    """The report's three figures (labels, money, time) again at 1920 x 1080 pixels."""
    slides = html_run / "plots" / "slides"
    names = sorted(p.name for p in slides.glob("*.png"))
    assert names == ["error_vs_budget.png", "error_vs_money.png", "error_vs_time.png"]
    for name in names:
        with Image.open(slides / name) as img:
            assert img.size == (1920, 1080)
        with Image.open(html_run / name) as report_img:  # the report's own, unchanged size
            assert report_img.size == (1125, 720)


def test_markdown_html_escapes_names_and_keeps_escaped_bars() -> None:
    page = markdown_html(["| arm | error |", "|---|---:|",
                          "| <script>alert(1)</script> \\| b | **1.00 %** |", "",
                          "- *a* `x<y`"])
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; | b" in page
    assert '<td style="text-align:right"><strong>1.00 %</strong></td>' in page
    assert "<li><em>a</em> <code>x&lt;y</code></li>" in page


def test_without_plotly_html_exits_2_with_one_line_saying_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """plotly made unimportable in this process (None in ``sys.modules`` stops an import of
    it or of any of its modules, loaded already or not)."""
    monkeypatch.setitem(sys.modules, "plotly", None)
    capsys.readouterr()
    assert main(["report", str(tmp_path), "--html"]) == 2
    stderr = capsys.readouterr().err
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install "marketsim[html]"' in lines[0], stderr


def test_sweep_folder_gets_a_page_per_point_and_a_slide_sized_sweep_figure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("plotly")
    (tmp_path / "s.toml").write_text(SWEEP)
    run = tmp_path / "run"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(run), "--quiet",
                 "--no-figures"]) == 0  # the report draws them
    capsys.readouterr()
    assert main(["report", str(run), "--html", "--slides"]) == 0
    err = capsys.readouterr().err
    assert "one report.html per grid point" in err
    for point in ("p000", "p001"):
        assert "entropy-greedy" in (run / "points" / point / "report.html").read_text()
    with Image.open(run / "plots" / "slides" / "labels_needed_vs_sweep.png") as img:
        assert img.size == (1920, 1080)


def _distinct_colours(png: bytes) -> int:
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3)
    return len(np.unique(pixels, axis=0))


@pytest.mark.slow
def test_page_opens_in_headless_chromium_offline_and_its_chart_works(html_run: Path) -> None:
    """Open report.html from a file:// URL with every other request aborted: no request is
    attempted, no console message or page error, every arm in the legend, hover shows a
    point's values, a legend click hides an arm, the money switch redraws the chart, and the
    screenshot is not blank."""
    browser_or_skip()
    messages: list[str] = []
    with offline_page() as (page, attempted):
        page.on("console", lambda m: messages.append(f"console {m.type}: {m.text}"))
        page.on("pageerror", lambda e: messages.append(f"page error: {e}"))
        page.goto((html_run / "report.html").as_uri())
        page.wait_for_selector("#error-chart .main-svg")
        legend = page.locator("#error-chart .legendtext").all_text_contents()
        assert legend == [f"{name} (n=3)" for name in ARMS]
        chart = page.locator("#error-chart")
        before = chart.screenshot()
        shot = page.screenshot(full_page=True)

        # hover the middle point of the first arm's curve: its values appear
        box = chart.bounding_box()
        assert box is not None
        x, y = page.evaluate("""() => {
            const gd = document.getElementById('error-chart'), fl = gd._fullLayout;
            const t = gd._fullData[1], i = Math.floor(t.x.length / 2);
            return [fl._size.l + fl.xaxis.c2p(t.x[i]), fl._size.t + fl.yaxis.c2p(t.y[i])];
        }""")
        page.mouse.move(box["x"] + x, box["y"] + y)
        page.wait_for_selector("#error-chart .hovertext")
        hover = page.locator("#error-chart .hovertext").first.text_content() or ""
        assert "labels:" in hover and "money:" in hover and "error:" in hover

        # a click on the legend hides an arm (its line and band)
        # (plotly waits out its double-click delay before acting on a click)
        page.locator("#error-chart .legendtext", has_text="entropy-greedy").click(
            force=True)
        page.wait_for_function("document.getElementById('error-chart')"
                               "._fullData[3].visible !== true", timeout=10_000)
        visible = page.evaluate(
            "document.getElementById('error-chart')._fullData.map(t => t.visible)")
        assert visible[2:4] == ["legendonly", "legendonly"]
        assert visible[0] is True and visible[4] is True

        # the switch: x against money
        x_labels = page.evaluate("Array.from(document.getElementById('error-chart')"
                                 "._fullData[1].x)")
        page.get_by_text("x: money").click()
        page.wait_for_function("document.getElementById('error-chart')"
                               ".layout.xaxis.title.text.startsWith('money')",
                               timeout=10_000)
        title = page.evaluate(
            "document.getElementById('error-chart').layout.xaxis.title.text")
        x_money = page.evaluate("Array.from(document.getElementById('error-chart')"
                                "._fullData[1].x)")
        after = chart.screenshot()
    assert attempted == []
    assert messages == []
    assert title == "money spent (mean over replicates)"
    assert len(x_money) == len(x_labels) and x_money != x_labels
    assert after != before
    assert _distinct_colours(shot) > 200  # a drawn page, not a blank one
    assert _distinct_colours(before) > 50


def test_browser_test_fails_on_ci_and_skips_elsewhere_when_chromium_is_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", Path("/nonexistent/chromium"))
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="Chromium at /nonexistent/chromium"):
        browser_or_skip()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="Chromium at /nonexistent/chromium"):
        browser_or_skip()


def test_api_to_html_writes_the_page_the_command_writes(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    import marketsim

    (tmp_path / "s.toml").write_text(SWEEP.replace('[sweep]\n"budget.batch" = [20, 40]\n', ""))
    # no figures: the page does not show them (and the command would draw them again)
    result = marketsim.run(marketsim.load_scenario(tmp_path / "s.toml"), out=tmp_path / "run",
                           progress=False, figures=False)
    page = result.to_html(tmp_path / "page.html")
    assert main(["report", str(tmp_path / "run"), "--html", "--quiet", "--no-figures"]) == 0
    assert page.read_bytes() == (tmp_path / "run" / "report.html").read_bytes()
