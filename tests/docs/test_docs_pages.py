"""The shape of the documentation's pages (issue #42). No hand-written page is over 400 lines: a
long page is split by topic into pages a reader can take in, each with its title, a line on
what it is for and links to its neighbours. Generated blocks between BEGIN/END markers count
too (a reader scrolls them as well), so a big generated table gets a page of its own."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MAX_LINES = 400


def pages() -> list[Path]:
    """Every Markdown page of the site's source (not a build's output)."""
    return sorted(page for page in DOCS.rglob("*.md")
                  if not {"_build", ".ipynb_checkpoints"} & set(page.relative_to(DOCS).parts))


def line_count(page: Path) -> int:
    return len(page.read_text(encoding="utf-8").splitlines())


def test_no_page_is_over_400_lines() -> None:
    too_long = {page.relative_to(DOCS).as_posix(): line_count(page) for page in pages()
                if line_count(page) > MAX_LINES}
    assert not too_long, f"pages over {MAX_LINES} lines (split them by topic): {too_long}"


def toctree_entries(page: Path) -> set[Path]:
    """The pages a Markdown page's ``{toctree}`` blocks list, as files, and theirs in turn."""
    text = page.read_text(encoding="utf-8")
    found: set[Path] = set()
    for block in text.split("```{toctree}")[1:]:
        for line in block.split("```", 1)[0].splitlines():
            entry = line.strip()
            if entry and not entry.startswith(":"):
                target = page.parent / f"{entry}.md"
                found |= {target} | toctree_entries(target)
    return found


def test_the_split_pages_are_short_landing_pages_listing_every_topic_page() -> None:
    """docs/models.md, infer.md and reproductions.md keep old links alive: each is a paragraph
    and a table of contents of exactly the pages that now hold its text."""
    for landing, folder in (("models.md", "models"), ("infer.md", "infer"),
                            ("reproductions.md", "reproductions")):
        assert line_count(DOCS / landing) <= 60, landing
        topic_pages = set((DOCS / "explanation" / folder).rglob("*.md"))
        assert len(topic_pages) >= 2, folder
        assert toctree_entries(DOCS / landing) == topic_pages, landing


def test_each_topic_page_says_what_it_is_for_and_links_up_and_to_its_neighbours() -> None:
    """A reader who lands on a topic page from a search sees where it sits: its title, one
    paragraph on what the page is for, then the page it is part of and the previous / next."""
    for folder in ("models", "infer", "reproductions"):
        for page in sorted((DOCS / "explanation" / folder).rglob("*.md")):
            paragraphs = page.read_text(encoding="utf-8").split("\n\n")
            name = page.relative_to(DOCS).as_posix()
            assert paragraphs[0].startswith("# ") and "\n" not in paragraphs[0], name
            assert paragraphs[1][0].isalnum() or paragraphs[1][0] == "`", name  # prose
            links = " ".join(paragraphs[2].split())
            assert links.startswith("Part of [") and "](" in links, name
            assert "previous: [" in links or "next: [" in links, name
