"""The report's Markdown as HTML, for ``report.html``: the same lines ``report.md`` holds
(written by :mod:`~marketsim.report.results_text`, :mod:`~marketsim.report.cost_text`,
:mod:`~marketsim.report.comparison_text`...), so the page and the Markdown report can never
print a number two ways, and the glossary as a section of the page.

Rendered by markdown-it (CommonMark with tables) with raw HTML off, so any ``<`` in the text
is shown as written, and with links only to the web (http, https), mail or an anchor in the
page: a crafted ``[x](javascript:…)`` or ``data:`` link is text, and the page, mailed on its
own, holds no link to a file beside it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from markdown_it import MarkdownIt

from marketsim.report.glossary import anchor, glossary_text

#: The schemes a link on the page may use; anything else (``javascript:``, ``data:``, a file
#: path) is not a link.
SAFE_SCHEMES = ("http://", "https://", "mailto:")
#: The id of the page's glossary section, and the prefix of its entries' ids.
GLOSSARY_ID = "glossary"


def safe_link(url: str) -> bool:
    """Whether ``url`` may be a link or image on the page: a web or mail address, or an
    anchor of the page itself (``#…``)."""
    text = url.strip().lower()
    return text.startswith("#") or text.startswith(SAFE_SCHEMES)


@cache
def _markdown() -> MarkdownIt:
    """CommonMark with pipe tables, raw HTML off and only :func:`safe_link` links."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.validateLink = safe_link  # type: ignore[method-assign]
    return md


def markdown_html(lines: Sequence[str]) -> str:
    """The Markdown ``lines`` (one string per line, as the report sections return them) as
    HTML."""
    return _markdown().render("\n".join(lines))


def glossary_anchor(heading: str) -> str:
    """The page's id of the glossary entry ``heading``: ``glossary-paired-interval``."""
    return f"{GLOSSARY_ID}-{anchor(heading)}"


def glossary_html() -> str:
    """The glossary (``glossary.md``'s entries) as the page's last section: an ``h2`` with id
    :data:`GLOSSARY_ID`, each entry an ``h3`` with the id :func:`glossary_anchor` gives, so
    the report's term links are anchors of the page."""
    text = glossary_text()
    entries = text[text.index("\n## "):].replace("\n## ", "\n### ")
    md = _markdown()
    tokens = md.parse("## Glossary\n\nThe words this report uses, in the order a reader meets "
                      "them.\n" + entries)
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            title = tokens[i + 1].content
            token.attrSet("id", GLOSSARY_ID if token.tag == "h2" else glossary_anchor(title))
    return md.renderer.render(tokens, md.options, {})
