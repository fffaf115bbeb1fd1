"""Parameter sweeps: a ``[sweep]`` table expands a scenario into a grid of scenarios.

``workers.count = [10, 30, 100]`` and ``workers.ability.alpha = [2, 6]`` give six grid points;
each point is validated like any scenario (an error names the point and the key) and runs as an
ordinary study in its own sub-folder ``points/pNNN/`` of the run folder.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import replace
from typing import Any

from marketsim.errors import InputError
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario


def point_label(point: tuple[tuple[str, Any], ...]) -> str:
    """``workers.count=10, workers.ability.alpha=2``."""
    return ", ".join(f"{k}={v}" for k, v in point)


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise InputError(f"sweep.{key}: {part} is not a table")
        node = child
    node[parts[-1]] = value


def expand(scenario: Scenario) -> list[Scenario]:
    """All grid points of ``scenario``'s sweep (``[scenario]`` itself if there is none)."""
    if not scenario.sweep:
        return [scenario]
    keys = [k for k, _ in scenario.sweep]
    points = []
    for values in itertools.product(*(v for _, v in scenario.sweep)):
        point = tuple(zip(keys, values, strict=True))
        data = copy.deepcopy(dict(scenario.raw))
        data.pop("sweep", None)
        for key, value in point:
            _set_dotted(data, key, value)
        try:
            sc = parse_scenario(data, scenario.source, allow_imports=scenario.allow_imports)
        except InputError as exc:
            raise InputError(
                f"sweep point {point_label(point)}: {exc.detail}", source=scenario.source
            ) from None
        # Command-line overrides (seed, replicates) apply to every point.
        points.append(
            replace(
                sc,
                name=f"{scenario.name} [{point_label(point)}]",
                seed=scenario.seed if "scenario.seed" not in keys else sc.seed,
                replicates=scenario.replicates,
                sweep_point=point,
            )
        )
    return points
