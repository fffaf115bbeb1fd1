"""The explanation's parts split by topic (issue #42): each page of a part is in its index's
table of contents, starts with its title, a line saying what it is for and links to the part's
overview and to its neighbours in that order, so a page added or moved cannot leave a reader
at a dead end or a stale "next"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

EXPLANATION = Path(__file__).resolve().parents[2] / "docs" / "explanation"
#: The parts whose pages follow this layout (session 20's split of policies, scenarios and
#: performance).
PARTS = ("policies", "scenarios", "performance")
TOCTREE = re.compile(r"^```\{toctree\}\n(.*?)^```", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\[([^\]]+)\]\(([^)#]+)\)")


def _order(part: Path) -> list[str]:
    """The part's pages in its index's toctree order, the index first."""
    tree = TOCTREE.search((part / "index.md").read_text(encoding="utf-8"))
    assert tree is not None, part
    entries = [line.strip() for line in tree.group(1).splitlines()
               if line.strip() and not line.startswith(":")]
    return ["index.md", *(f"{entry}.md" for entry in entries)]


def _head(page: Path) -> tuple[str, str, dict[str, str]]:
    """(title, purpose line, the links of the navigation line by their role)."""
    paragraphs = page.read_text(encoding="utf-8").split("\n\n")
    title, purpose, nav = paragraphs[0], paragraphs[1], " ".join(paragraphs[2].split())
    roles = {}
    for piece in nav.strip("*").split(" · "):
        role = piece.split(":")[0] if piece.startswith(("previous:", "next:")) else "part"
        found = LINK.search(piece)
        assert found is not None, (page, piece)
        roles[role] = found.group(2)
    return title, purpose, roles


@pytest.mark.parametrize("name", PARTS)
def test_every_page_of_the_part_is_listed_and_links_to_its_neighbours(name: str) -> None:
    part = EXPLANATION / name
    order = _order(part)
    assert sorted(order) == sorted(p.name for p in part.glob("*.md")), "a page not in the toctree"
    for number, page_name in enumerate(order):
        title, purpose, roles = _head(part / page_name)
        assert title.startswith("# ") and "\n" not in title, page_name
        assert purpose and not purpose.startswith(("#", "*", "-", "`")), page_name
        expected = {}
        if number > 1:
            expected["part"] = "index.md"
        if number > 0:
            expected["previous"] = order[number - 1]
        if number + 1 < len(order):
            expected["next"] = order[number + 1]
        assert roles == expected, page_name
