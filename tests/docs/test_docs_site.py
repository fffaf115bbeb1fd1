"""The documentation site (issue #42): built from ``docs/`` with Sphinx treating every warning
as an error, its four sections there, the generated reference covering every public name and
every subcommand, no broken internal link, and a search in a real headless Chromium opened
from disk.

The build takes about half a minute of CPU, so the tests that need it are slow (CI's second
step installs the ``docs`` extra first) and share one build per test process (the ``site``
fixture of ``conftest.py``); the link checker and the reference generator are
checked by fast tests below and in ``test_docs_reference.py``.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.browser import browser_or_skip, offline_page
from tests.docs import built_site

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: The four sections: (title in the navigation bar, their page).
SECTIONS = (("Tutorials", "tutorials/index.html"), ("How-to guides", "howto/index.html"),
            ("Explanation", "explanation/index.html"), ("Reference", "reference/index.html"))


class _Page(HTMLParser):
    """The ids, the links (``href``, ``src``) and the text of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value is None:
                continue
            if key == "id" or (key == "name" and tag == "a"):
                self.ids.add(value)
            if (key == "href" and tag in ("a", "link")) or (key == "src" and tag in
                                                            ("img", "script")):
                self.links.append(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def broken_links(site: Path) -> list[str]:
    """Every link of every page under ``site`` (outside ``_static``) to a local file that does
    not exist, or to an anchor its page does not have, as ``page: link``. Links with a scheme
    (``https:``, ``mailto:``) are not followed: the check is of the site, not the network."""
    pages = {path: _parse(path) for path in sorted(site.rglob("*.html"))
             if "_static" not in path.relative_to(site).parts}  # theme templates, not pages
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if not target.exists():
                broken.append(f"{path.relative_to(site)}: {link}")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)}: {link}")
    return broken


def test_link_checker_finds_a_missing_page_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="sub/page.html#here">ok</a> <a href="#top" id="top">self</a>'
        '<a href="https://example.org/x">out</a> <img src="missing.png">'
        '<a href="sub/page.html#gone">bad anchor</a> <a href="nowhere.html">no page</a>',
        encoding="utf-8")
    (tmp_path / "sub" / "page.html").write_text(
        '<h1 id="here">x</h1><a href="../index.html#top">back</a>', encoding="utf-8")
    assert broken_links(tmp_path) == ["index.html: missing.png",
                                      "index.html: sub/page.html#gone",
                                      "index.html: nowhere.html"]


def test_notebook_is_stored_with_its_outputs_and_figures() -> None:
    """The site shows the notebook from its stored outputs (a build never runs it): every code
    cell was run, in order, without an error, and every cell that draws holds its figure."""
    notebook = json.loads((DOCS / "tutorial.ipynb").read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert [cell["execution_count"] for cell in code] == list(range(1, len(code) + 1))
    outputs = [out for cell in code for out in cell["outputs"]]
    assert not [out for out in outputs if out["output_type"] == "error"]
    drawing = [cell for cell in code if ".plot(" in "".join(cell["source"])]
    assert drawing
    for cell in drawing:
        assert any("image/png" in out.get("data", {}) for out in cell["outputs"])


def test_site_tests_fail_on_ci_and_skip_elsewhere_without_the_docs_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(built_site, "SITE_PACKAGES", ("no_such_sphinx_package",))
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="no_such_sphinx_package"):
        built_site.sphinx_or_skip()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r'pip install -e "\.\[docs\]"'):
        built_site.sphinx_or_skip()


@pytest.mark.slow
def test_site_has_the_four_sections_in_its_navigation(site: Path) -> None:
    home = _parse(site / "index.html")
    text = " ".join(" ".join(home.text).split())
    for title, page in SECTIONS:
        assert title in text
        assert page in home.links
        assert (site / page).is_file()
    howto = _parse(site / "howto" / "index.html")
    for guide in ("calibrate", "compare-presets", "aggregate", "sweep", "dask", "resume",
                  "plugins", "html-report"):
        assert f"{guide}.html" in howto.links
    tutorials = _parse(site / "tutorials" / "index.html")
    assert "../tutorial.html" in tutorials.links  # the notebook, rendered with its figures
    notebook = _parse(site / "tutorial.html")
    assert sum(link.startswith("_images/") for link in notebook.links) >= 2
    assert sum(link.startswith("../lessons/0") for link in tutorials.links) >= 5


@pytest.mark.slow
def test_reference_covers_every_public_name_subcommand_and_scenario_table(site: Path) -> None:
    import marketsim
    import marketsim.aggregation
    from marketsim.cli import COMMAND_MODULES
    from marketsim.scenario.docs import TABLES, settings_tables

    api = _parse(site / "reference" / "python-api.html")
    for name in marketsim.__all__:
        if name != "__version__":
            assert f"marketsim.{name}" in api.ids, name
    for name in marketsim.aggregation.__all__:
        assert f"marketsim.aggregation.{name}" in api.ids, name
    cli = " ".join(_parse(site / "reference" / "cli.html").text)
    for command in COMMAND_MODULES:
        assert f"usage: marketsim {command}" in cli, command
    keys = " ".join(_parse(site / "reference" / "scenario-keys.html").text)
    for heading, _ in TABLES + settings_tables():
        assert heading in keys, heading
    outputs = " ".join(_parse(site / "reference" / "output-files.html").text)
    assert "summary.json" in outputs and "run.json" in outputs
    assert "edges_to_reach" in outputs and "record_version" in outputs


@pytest.mark.slow
def test_site_has_no_broken_internal_link(site: Path) -> None:
    assert broken_links(site) == []


@pytest.mark.slow
def test_search_for_dawid_in_headless_chromium_leads_to_a_page_about_it(site: Path) -> None:
    """Open the home page from disk, search "Dawid" with the search field, follow the first
    result; nothing outside the site is requested on the way."""
    browser_or_skip()
    errors: list[str] = []
    with offline_page() as (page, attempted):
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((site / "index.html").as_uri())
        page.get_by_role("button", name="Search").first.click()
        field = page.locator("input[name=q]:visible")
        field.fill("Dawid")
        field.press("Enter")
        page.wait_for_url("**/search.html?q=Dawid*")
        results = page.locator("#search-results ul.search li a")
        results.first.wait_for(timeout=30_000)
        count = results.count()
        results.first.click()
        page.wait_for_load_state()
        url, body = page.url, page.locator("main").inner_text()
    assert count >= 3
    assert url.startswith(site.as_uri() + "/") and "search.html" not in url
    assert "Dawid" in body
    assert attempted == [] and errors == []
