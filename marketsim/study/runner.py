"""Run a study: every (replicate, arm) unit, sequentially or in parallel worker processes.

Units are independent and seeded by their (replicate, arm) key, so the results do not depend on
``jobs`` or on the order units finish in; rows are sorted into a canonical order before writing.
"""

from __future__ import annotations

import os
import pickle
import re
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import numpy as np

from marketsim.errors import InputError, SimulationError
from marketsim.market.block_market import BlockMarket
from marketsim.market.graph import write_graphml
from marketsim.market.heap import is_big_market, map_big_arrays
from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.policy_guard import policy_failure
from marketsim.market.replay import replay_world
from marketsim.market.setup import MarketSetup
from marketsim.market.worker_models import draw_world
from marketsim.plugins import is_import_path
from marketsim.policies.base import AssignmentPolicy
from marketsim.record.curves import CurvePoint
from marketsim.record.units import UnitResult
from marketsim.scenario.replay import load_replay
from marketsim.scenario.specs import Scenario
from marketsim.study.backends import dask_units, local_units
from marketsim.study.seeds import initial_graph_rng, unit_streams, world_rng


def market_setup(scenario: Scenario) -> MarketSetup:
    """What the market of ``scenario`` (as one arm runs it: :meth:`Scenario.for_arm`) reads
    of it: the market is given these tables, not the scenario."""
    return MarketSetup(scenario.tasks, scenario.workers, scenario.budget, scenario.gold,
                       scenario.blocking, scenario.max_labels, scenario.source,
                       scenario.machines)


def run_unit(
    scenario: Scenario,
    replicate: int,
    arm: int,
    allow_imports: bool = False,
    on_refresh: Callable[[int, int, CurvePoint], None] | None = None,
    graph_dir: str | None = None,
) -> UnitResult:
    """Simulate one arm on one replicate's world; ``on_refresh(replicate, arm, point)`` is
    called at every refresh of the inference service (live progress). With
    ``output.graphml`` and a ``graph_dir``, replicate 0's graph is written there.

    A failing policy or a stuck market raises :class:`~marketsim.errors.SimulationError`
    naming the arm and replicate."""
    start = time.perf_counter()
    if is_big_market(scenario.max_labels):
        map_big_arrays()  # a big market's freed arrays go back to the system (issue #30)
    spec = scenario.arms[arm]
    replay = None
    if scenario.replay is not None:
        replay = load_replay(scenario.replay)
        world = replay_world(
            replay,
            spec.initial_graph(scenario.budget),
            scenario.tasks.classes,
            np.asarray(scenario.tasks.prior),
            initial_graph_rng(scenario.seed, replicate, spec.initial_graph(scenario.budget)),
        )
    else:
        world = draw_world(
            scenario.crowd,
            world_rng(scenario.seed, replicate),
            spec.initial_graph(scenario.budget),
            None if spec.initial is None
            else initial_graph_rng(scenario.seed, replicate, spec.initial),
        )
    try:
        engine = BlockMarket if scenario.scenario.engine == "blocks" else Market
        market = engine(
            market_setup(scenario.for_arm(spec)),
            world,
            _guarded_policy(scenario, arm, allow_imports),
            estimator_factory(scenario.crowd, spec.inference),
            unit_streams(scenario.seed, replicate, arm),
            warm_start=spec.inference.warm_starts,
            keep_graph=scenario.output.graph,
            replay=replay,
            on_refresh=None if on_refresh is None else partial(on_refresh, replicate, arm),
        )
        curve = market.run()
    except SimulationError as exc:
        raise exc.with_context(f"arm {spec.name!r}, replicate {replicate}") from None
    if scenario.output.graphml and graph_dir is not None and replicate == 0:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", spec.name).strip("-").lower() or f"arm{arm}"
        path = Path(graph_dir) / f"graph_{arm:02d}_{slug}.graphml"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".graphml.tmp")
        write_graphml(market.graph, tmp)
        os.replace(tmp, path)
    rows = tuple(p.at(spec.name, replicate) for p in curve)
    return UnitResult(replicate, arm, rows, time.perf_counter() - start, market.stop)


def _guarded_policy(scenario: Scenario, arm: int, allow_imports: bool) -> AssignmentPolicy:
    """The arm's policy; a plug-in constructor that raises or exits is a ``PolicyError``."""
    spec = scenario.arms[arm].policy
    name = spec.name
    try:
        return spec.build(allow_imports=allow_imports, source=scenario.source)
    except InputError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a plug-in may raise anything
        raise policy_failure(f"policy {name!r}", "__init__", exc) from None


def units_of(scenario: Scenario) -> list[tuple[int, int]]:
    """All (replicate, arm) keys, replicate-major so early results cover every arm."""
    return [(r, a) for r in range(scenario.replicates) for a in range(len(scenario.arms))]


def costly_first(scenario: Scenario, keys: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``keys`` with the units of costly policies first (each policy class's ``unit_cost``
    hint; 1 for an import path the units import themselves), replicate-major among equals:
    parallel workers that take the longest units first finish together instead of leaving one
    process alone with a late costly unit."""
    cost = [1.0 if (cls := arm.policy.policy_type) is None else cls.unit_cost
            for arm in scenario.arms]
    return sorted(keys, key=lambda key: -cost[key[1]])


def require_picklable(scenario: Scenario, jobs: int) -> None:
    """Refuse in one line, before anything runs, an arm whose policy or estimator object
    cannot be sent to worker processes (objects come from Python: ``marketsim.run``)."""
    for arm in scenario.arms:
        for what, obj in (("policy", arm.policy.obj), ("estimator", arm.inference.estimator)):
            if obj is None:
                continue
            try:
                pickle.dumps(obj)
            except Exception:  # noqa: BLE001 - pickling may fail in many ways
                raise InputError(
                    f"arm {arm.name!r}: {what} object of class {type(obj).__qualname__} cannot "
                    f"be pickled, so it cannot run with jobs={jobs}; use jobs=1 or define the "
                    "class at module level") from None


def plugin_modules(scenario: Scenario) -> dict[str, str]:
    """The modules outside marketsim that the arms' policies and estimators come from (a
    ``module:Class`` policy, imported already or not, a ``module:Class`` inference method, or
    an object given in Python), each
    with what needs it: a scheduler or worker that runs the units must be able to import
    them. Classes defined in ``__main__`` travel by value, so they need no module."""
    modules: dict[str, str] = {}
    for arm in scenario.arms:
        if arm.policy.cls is None and is_import_path(arm.policy.name):  # imported by the unit
            modules.setdefault(arm.policy.name.partition(":")[0], f"arm {arm.name!r}: policy")
        policy = arm.policy.cls or type(arm.policy.obj)
        estimator = arm.inference.entry or type(arm.inference.estimator)
        for what, cls in (("policy", policy), ("estimator", estimator)):
            if cls is type(None):
                continue
            top = cls.__module__.partition(".")[0]
            if top not in ("marketsim", "__main__", "builtins"):
                modules.setdefault(cls.__module__, f"arm {arm.name!r}: {what}")
    return modules


def iter_units(
    scenario: Scenario,
    keys: list[tuple[int, int]],
    *,
    jobs: int = 1,
    backend: str = "local",
    scheduler: str | None = None,
    allow_imports: bool = False,
    on_refresh: Callable[[int, int, CurvePoint], None] | None = None,
    graph_dir: str | None = None,
) -> Iterator[UnitResult]:
    """Yield unit results as they finish (in any order when they run in parallel). Live
    refresh callbacks only reach the caller when units run in this process (``jobs == 1``).
    Policy and estimator objects must pickle to run in other processes."""
    if backend == "dask" or (jobs > 1 and len(keys) > 1):
        require_picklable(scenario, jobs)
        keys = costly_first(scenario, keys)
    run = partial(run_unit, scenario)
    common = {"allow_imports": allow_imports, "on_refresh": on_refresh, "graph_dir": graph_dir}
    if backend == "dask":
        yield from dask_units(run, keys, jobs, scheduler, plugin_modules(scenario), **common)
    else:
        yield from local_units(run, keys, jobs, **common)


def run_study(
    scenario: Scenario,
    *,
    jobs: int = 1,
    allow_imports: bool = False,
    backend: str = "local",
    scheduler: str | None = None,
    done: list[UnitResult] | None = None,
    on_unit: Callable[[UnitResult, int, int], None] | None = None,
    on_refresh: Callable[[int, int, CurvePoint], None] | None = None,
    graph_dir: str | None = None,
) -> list[UnitResult]:
    """Run every unit not already in ``done``; call ``on_unit(result, finished, total)``."""
    results = list(done or [])
    have = {(u.replicate, u.arm) for u in results}
    todo = [k for k in units_of(scenario) if k not in have]
    total = len(results) + len(todo)
    for unit in iter_units(
        scenario,
        todo,
        jobs=jobs,
        backend=backend,
        scheduler=scheduler,
        allow_imports=allow_imports,
        on_refresh=on_refresh,
        graph_dir=graph_dir,
    ):
        results.append(unit)
        if on_unit is not None:
            on_unit(unit, len(results), total)
    return results
