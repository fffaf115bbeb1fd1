"""Shared pieces of the robustness suite: the outcome tally of the fuzzed loaders.

Every fuzz test records each generated case as ``(input class, outcome)`` through the
session-scoped ``tally`` fixture. At the end of the session the tally is printed as a table
(the one ``docs/robustness.md`` shows) and written to ``reports/robustness_counts.json``
(``reports/`` is git-ignored). The fuzz tests are derandomised, so a run reproduces the same
figures; set ``MARKETSIM_FUZZ_RANDOM=1`` to explore new examples instead.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COUNTS_FILE = ROOT / "reports" / "robustness_counts.json"

#: loader -> input class -> outcome -> count, filled while the session runs.
_TALLY: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))


class Tally:
    """Records one outcome per generated case."""

    def record(self, loader: str, input_class: str, outcome: str) -> None:
        _TALLY[loader][input_class][outcome] += 1


@pytest.fixture(scope="session")
def tally() -> Tally:
    """The session's outcome tally (session-scoped, so hypothesis tests may use it)."""
    return Tally()


def _as_json() -> dict[str, dict[str, dict[str, int]]]:
    return {
        loader: {cls: dict(sorted(c.items())) for cls, c in classes.items()}
        for loader, classes in _TALLY.items()
    }


def table_lines(data: dict[str, dict[str, dict[str, int]]]) -> list[str]:
    """The tally as a Markdown table: loader, input class, cases, outcomes."""
    lines = ["| loader | input class | cases | outcome |", "|---|---|---:|---|"]
    for loader, classes in data.items():
        total = 0
        for cls, outcomes in classes.items():
            n = sum(outcomes.values())
            total += n
            text = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items(), key=lambda x: -x[1]))
            lines.append(f"| {loader} | {cls} | {n} | {text} |")
        lines.append(f"| **{loader}** | **all** | **{total}** | |")
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _TALLY:
        return
    terminalreporter.section("robustness: fuzzed cases and outcomes")
    for line in table_lines(_as_json()):
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"(written to {COUNTS_FILE.relative_to(ROOT)})")


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _TALLY:
        return
    payload = {
        "derandomized": not os.environ.get("MARKETSIM_FUZZ_RANDOM"),
        "loaders": _as_json(),
    }
    try:
        COUNTS_FILE.parent.mkdir(parents=True, exist_ok=True)
        COUNTS_FILE.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    except OSError:  # read-only checkout: the terminal table is enough
        pass
