"""The glossary a report links to: ``glossary.md`` (package data, one source; ``docs/glossary.md``
is the same file), copied into each run folder next to ``report.md``, and the linking of the
terms a report uses to its anchors.

A term is linked once per report, at its first use in running text (never inside a table,
heading, code span or existing link), so the report reads as before and the tables keep their
exact lines."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

from marketsim.record.files import write_text_atomic

GLOSSARY_NAME = "glossary.md"
SOURCE = Path(__file__).with_name(GLOSSARY_NAME)

#: (pattern of the term as reports write it, heading of its glossary entry), in the order the
#: linker tries them. Patterns match whole words, case-insensitively.
TERMS: tuple[tuple[str, str], ...] = (
    (r"paired (?:95 % )?(?:t-)?intervals?", "Paired interval"),
    (r"common random numbers", "Common random numbers"),
    (r"replicates?", "Replicate"),
    (r"arms?", "Arm"),
    (r"edges", "Labels and edges"),
    (r"spammer-hammer(?: model)?", "Spammer-hammer crowd"),
    (r"one-coin model", "One-coin model"),
    (r"EM", "EM"),
    (r"(?<!class )priors?", "Prior"),
    (r"posteriors?", "Posterior"),
    (r"inference service", "Batch and refresh"),
    (r"gold \(control\) questions|gold questions", "Gold questions"),
    (r"blocked", "Blocking"),
    (r"qualification tiers?", "Qualification tiers and prices"),
    (r"simulated time", "Money and simulated time"),
    (r"task error rate|error rate", "Error rate"),
    (r"mean curve", "Mean curve"),
    (r"end of each (?:replicate's )?run", "Final error"),
    (r"Student-t interval", "Confidence interval"),
    (r"labels? (?:needed )?to reach", "Labels to target"),
    (r"detect(?:ed|able)", "Detectable difference"),
    (r"checkpoints?", "Checkpoints"),
    (r"ended under budget", "Ended under budget"),
    (r"grid point", "Sweep"),
)


@cache
def glossary_text() -> str:
    """The glossary's markdown."""
    return SOURCE.read_text(encoding="utf-8")


def anchor(heading: str) -> str:
    """The anchor GitHub (and most markdown viewers) give a heading: lower case, punctuation
    other than hyphens dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of the level-2 headings of a markdown text."""
    return {anchor(m) for m in re.findall(r"^## (.+)$", text, flags=re.M)}


#: Parts of a line that are never linked: code spans, links and images.
#: (A backslash-escaped backtick or bracket, as in a name, begins neither.)
_PROTECTED = re.compile(r"(?<!\\)`[^`]*`|(?<!\\)!?\[[^\]]*\]\([^)]*\)")


def _protected(names: Iterable[str]) -> re.Pattern[str]:
    """:data:`_PROTECTED`, and every one of ``names`` (as the text shows them): a word inside
    an arm's or the scenario's name is part of that name, never a glossary link."""
    shown = sorted({n for n in names if n}, key=len, reverse=True)
    if not shown:
        return _PROTECTED
    # whole words only where a name begins or ends with one: a name "a" keeps its own "a"
    return re.compile(_PROTECTED.pattern + "|" + "|".join(
        rf"(?<!\w){re.escape(n)}(?!\w)" for n in shown))


def _link_first(line: str, pattern: re.Pattern[str], target: str,
                protected: re.Pattern[str] = _PROTECTED) -> tuple[str, bool]:
    """``line`` with the first match of ``pattern`` outside ``protected`` spans (code spans,
    links, names) linked to ``target``; whether one was."""
    pos = 0
    for guard in [*protected.finditer(line), None]:
        end = guard.start() if guard is not None else len(line)
        match = pattern.search(line, pos, end)
        if match:
            linked = f"[{match.group(0)}]({target})"
            return line[:match.start()] + linked + line[match.end():], True
        if guard is None:
            break
        pos = guard.end()
    return line, False


def link_terms(markdown: str, target: Callable[[str], str] | None = None,
               names: Iterable[str] = ()) -> str:
    """``markdown`` with the first use of each glossary term in running text linked to its
    entry: by default in the folder's ``glossary.md``, else at ``target(heading)`` (the
    page's own glossary section). Words inside ``names`` (the scenario's and the arms' names
    as the text spells them) are never linked: a name is shown as written."""
    protected = _protected(names)
    lines = markdown.split("\n")
    prose = [i for i, line in enumerate(lines)
             if line.strip() and not line.lstrip().startswith(("#", "|", "!", "```", ">"))]
    for term, heading in TERMS:
        link = f"{GLOSSARY_NAME}#{anchor(heading)}" if target is None else target(heading)
        pattern = re.compile(rf"(?<![\w\-\[]){term}(?![\w\-])", flags=re.I)
        for i in prose:
            lines[i], done = _link_first(lines[i], pattern, link, protected)
            if done:
                break
    return "\n".join(lines)


def unlink_terms(markdown: str) -> str:
    """``markdown`` without the glossary links :func:`link_terms` added (the plain words)."""
    return re.sub(rf"\[([^\]]*)\]\({re.escape(GLOSSARY_NAME)}#[^)]*\)", r"\1", markdown)


def write_glossary(folder: Path) -> None:
    """Copy the glossary into ``folder`` (a run folder, next to its report; not flushed to the
    disk: a copy of the package's, written again with every report)."""
    write_text_atomic(folder / GLOSSARY_NAME, glossary_text(), durable=False)
