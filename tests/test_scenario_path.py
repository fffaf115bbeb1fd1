"""How far the scenario travels: the modules a study's ``Scenario`` passes through between
``marketsim.run`` and the market (issue #39: 18 modules, to come down to at most 10; 4 now).

How it is traced: a tiny study (two arms, one replicate, gold questions on one arm) runs with
``marketsim.run(..., jobs=1)`` under ``sys.setprofile`` (and ``threading.setprofile``, for the
inference threads), so every unit runs in this process. At each call of a function of
``marketsim`` the profiler reads the function's parameters as called (not ``self`` or ``cls``:
a spec's own methods *are* the scenario) and notes the function's module when a parameter is

- the ``Scenario`` object itself: the module is **on the scenario's path** (what the issue
  counts: the module receives the whole scenario, so it may read any key of it, and must be
  followed when a key changes);
- one of its tables (a :class:`~marketsim.tables.Table`: ``[workers]``, an arm, an arm's
  inference, ...): the module **receives a part**;
- a bundle of its tables (a :class:`~marketsim.workers.base.Crowd`: tasks, workers and budget,
  what a worker model reads; a :class:`~marketsim.market.setup.MarketSetup`: what one arm's
  market reads): the module **receives a bundle**. A bundle is built from the scenario in one
  place (``Scenario.crowd``, ``study.runner.market_setup``) and its tables are counted there,
  as parts; the modules it reaches must stay within the market and the worker models.

The limits are the counts reached; neither may grow. A module that needs only a part should
be given that part (or the values it reads), not the scenario: that moves it from the first
set to the second, or off both. A runtime trace, not an ``ast`` walk, since the scenario
travels through attributes and callbacks (``partial(run_unit, scenario)``, the world's worker
model, the observer) that a static walk of signatures would miss.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from types import FrameType
from typing import Any

import pytest

import marketsim
from marketsim.market.setup import MarketSetup
from marketsim.scenario.specs import Scenario
from marketsim.tables import Table
from marketsim.workers.base import Crowd

Found = dict[str, set[str]]

#: Modules that receive the whole Scenario on the way from marketsim.run to the market: 19 in
#: 2ff353b for this study (18 without its gold arm, the issue's count), 17 in 3fae506. Now the
#: entry point (``api``), the study's session, runner and run folder (which records the whole
#: scenario in ``run.json``): the market gets a ``MarketSetup``, the worker models a ``Crowd``,
#: the resource guard and the progress display a ``StudyOutline`` (its numbers).
SCENARIO_LIMIT = 4
#: Modules that receive the Scenario or one of its tables (24 in 2ff353b, 23 in 3fae506).
PART_LIMIT = 14
#: Where a bundle of the scenario's tables (a Crowd, a MarketSetup) may travel.
BUNDLE_PACKAGES = ("marketsim.market.", "marketsim.workers.")

TINY: dict[str, Any] = {
    "scenario": {"name": "path", "seed": 3, "replicates": 1},
    "tasks": {"count": 12, "classes": 2},
    "workers": {"count": 4},
    "budget": {"edges": 30, "batch": 6},
    "arms": [{"name": "uniform", "policy": "uniform"},
             {"name": "entropy", "policy": "entropy-greedy", "inference": "ds",
              "gold": {"count": 4, "rate": 0.2}}],
}


def trace_run(scenario: Scenario) -> tuple[Found, Found, Found]:
    """Run ``scenario`` traced; return, by module, the functions that received the whole
    scenario, those that received one of its tables and those that received a bundle of
    them."""
    whole: Found = defaultdict(set)
    parts: Found = defaultdict(set)
    bundles: Found = defaultdict(set)

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("marketsim"):
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        for index, name in enumerate(names):
            value = frame.f_locals.get(name)
            if index == 0 and name in ("self", "cls"):
                continue
            if isinstance(value, Table):
                found = whole if isinstance(value, Scenario) else parts
            elif isinstance(value, Crowd | MarketSetup):
                found = bundles
            else:
                continue
            found[module].add(f"{code.co_name}({name})")

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        marketsim.run(scenario, jobs=1, progress=False)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return whole, parts, bundles


@pytest.fixture(scope="module")
def traced() -> tuple[Found, Found, Found]:
    return trace_run(marketsim.scenario_from_dict(TINY))


def _listing(found: Found) -> str:
    return "\n".join(f"  {m}: {', '.join(sorted(f))}" for m, f in sorted(found.items()))


def test_the_scenario_passes_through_few_modules(traced: tuple[Found, Found, Found]) -> None:
    whole, _, _ = traced
    assert len(whole) <= SCENARIO_LIMIT, (
        f"{len(whole)} modules receive the whole Scenario (limit {SCENARIO_LIMIT}); give the "
        f"new one the part or the values it reads:\n{_listing(whole)}")
    assert {"marketsim.api", "marketsim.study.runner"} <= set(whole)
    assert not any(m.startswith(BUNDLE_PACKAGES) for m in whole), _listing(whole)


def test_bundles_of_tables_stay_in_the_market_and_the_worker_models(
        traced: tuple[Found, Found, Found]) -> None:
    _, _, bundles = traced
    assert {"marketsim.market.market", "marketsim.workers.classes"} <= set(bundles)
    outside = {m: f for m, f in bundles.items() if not m.startswith(BUNDLE_PACKAGES)}
    assert not outside, f"a Crowd or MarketSetup reached:\n{_listing(outside)}"


def test_parts_of_the_scenario_reach_few_modules(traced: tuple[Found, Found, Found]) -> None:
    whole, parts, _ = traced
    either = set(whole) | set(parts)
    assert len(either) <= PART_LIMIT, (
        f"{len(either)} modules receive the Scenario or one of its tables (limit "
        f"{PART_LIMIT}):\n{_listing(whole)}\n{_listing(parts)}")
