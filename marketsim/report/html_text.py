r"""The report's Markdown sections as HTML, for ``report.html``: the same lines ``report.md``
holds (written by :mod:`~marketsim.report.results_text`, :mod:`~marketsim.report.cost_text`,
:mod:`~marketsim.report.comparison_text`...), so the page and the Markdown report can never
print a number two ways.

Only the subset of Markdown those sections write is understood: headings, paragraphs, bullet
lists, block quotes, pipe tables (with ``\|`` escapes and ``---:`` alignment), and inline
code, bold, italics and links. Every piece of text is HTML-escaped first."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"(#{1,4}) (.*)")


def inline(text: str) -> str:
    """One line of Markdown text as HTML: escaped, with code spans, bold, italics and links.
    Code spans are kept verbatim (no bold or italics inside them)."""
    parts = _CODE.split(text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:  # inside a code span
            out.append(f"<code>{html.escape(part)}</code>")
            continue
        s = html.escape(part, quote=False)
        s = _LINK.sub(lambda m: f'<a href="{html.escape(m[2])}">{m[1]}</a>', s)
        s = _BOLD.sub(r"<strong>\1</strong>", s)
        out.append(_ITALIC.sub(r"<em>\1</em>", s))
    return "".join(out)


def _cells(line: str) -> list[str]:
    r"""The cells of a table row, split at unescaped ``|`` (``\|`` is a literal bar)."""
    body = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _table(lines: Sequence[str]) -> str:
    """A pipe table (head, separator, rows) as an HTML table with the column alignment."""
    head, sep, rows = _cells(lines[0]), _cells(lines[1]), [_cells(r) for r in lines[2:]]
    align = ["right" if s.endswith(":") else "left" for s in sep]

    def row(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(
            f'<{tag} style="text-align:{align[i] if i < len(align) else "left"}">'
            f"{inline(c)}</{tag}>" for i, c in enumerate(cells)) + "</tr>"

    body = "\n".join(row(r, "td") for r in rows)
    return f"<table>\n<thead>{row(head, 'th')}</thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _blocks(lines: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """Consecutive lines grouped into blocks: (kind, lines) with kind ``heading``, ``table``,
    ``list``, ``quote`` or ``para``."""
    kind_of = [("table" if ln.startswith("|") else "list" if ln.startswith("- ") else
                "quote" if ln.startswith("> ") else "heading" if _HEADING.fullmatch(ln) else
                "blank" if not ln.strip() else "para") for ln in lines]
    i = 0
    while i < len(lines):
        kind = kind_of[i]
        j = i + 1
        if kind != "heading":
            while j < len(lines) and kind_of[j] == kind:
                j += 1
        if kind != "blank":
            yield kind, list(lines[i:j])
        i = j


def markdown_html(lines: Sequence[str]) -> str:
    """The Markdown ``lines`` (one string per line, as the report sections return them) as
    HTML."""
    out = []
    for kind, block in _blocks(lines):
        if kind == "heading":
            m = _HEADING.fullmatch(block[0])
            assert m is not None
            level = len(m[1])
            out.append(f"<h{level}>{inline(m[2])}</h{level}>")
        elif kind == "table" and len(block) >= 2:
            out.append(_table(block))
        elif kind == "list":
            out.append("<ul>\n" + "\n".join(f"<li>{inline(ln[2:])}</li>" for ln in block)
                       + "\n</ul>")
        elif kind == "quote":
            out.append("<blockquote>" + " ".join(inline(ln[2:]) for ln in block)
                       + "</blockquote>")
        else:
            out.append("<p>" + " ".join(inline(ln) for ln in block) + "</p>")
    return "\n".join(out)
