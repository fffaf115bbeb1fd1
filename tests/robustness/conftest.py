"""Shared pieces of the robustness suite: the outcome tally of the fuzzed loaders.

Every fuzz test records each generated case as ``(input class, outcome)`` through the
session-scoped ``tally`` fixture. At the end of the session the tally is printed as a table
(the one ``docs/robustness.md`` shows) and written to ``reports/robustness_counts.json``
(``reports/`` is git-ignored). The fuzz tests are derandomised, so a run reproduces the same
figures; set ``MARKETSIM_FUZZ_RANDOM=1`` to explore new examples instead. Each fuzz test runs a
tenth of its cases in the default test loop and all of them under ``-m slow`` (``fuzz_cases``).
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable
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


#: ``MARKETSIM_FUZZ_SCALE`` multiplies every fuzz test's cases (e.g. 10 for a deeper search).
SCALE = float(os.environ.get("MARKETSIM_FUZZ_SCALE", "1"))
#: Share of the cases the default test loop runs; the full run is marked ``slow``.
QUICK = 0.1


@pytest.fixture(params=[pytest.param(QUICK, id="quick"),
                        pytest.param(1.0, id="full", marks=pytest.mark.slow)])
def fuzz_cases(request: pytest.FixtureRequest) -> Callable[[int], int]:
    """Examples a fuzz test of ``n`` cases runs: every fuzz test runs twice, a tenth of its
    cases in the default loop (``quick``) and all of them in the slow step (``full``), both
    times ``MARKETSIM_FUZZ_SCALE``; derandomised, the quick run's cases come from the same
    sequence as the full run's."""
    share = request.param * SCALE
    return lambda n: max(1, round(n * share))


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
