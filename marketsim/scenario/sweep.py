"""Parameter sweeps: a ``[sweep]`` table expands a scenario into a grid of scenarios.

``workers.count = [10, 30, 100]`` and ``workers.ability.alpha = [2, 6]`` give six grid points;
an arm's keys are swept by name or index (``"arms.adaptive.policy.n_trees" = [5, 10]``,
``"arms[1].inference.max_iter" = [10, 50]``, see :mod:`marketsim.scenario.sweep_keys`). Each
point is validated like any scenario (an error names the point and the key) and runs as an
ordinary study in its own sub-folder ``points/pNNN/`` of the run folder.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from marketsim.errors import InputError
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.scenario.sweep_keys import Path, key_path


def point_label(point: tuple[tuple[str, Any], ...]) -> str:
    """``workers.count=10, workers.ability.alpha=2``."""
    return ", ".join(f"{k}={v}" for k, v in point)


#: An arm's key given as a plain string, and the table key that string stands for: sweeping
#: ``policy.n_trees`` of ``policy = "random-forest"`` needs ``{name = "random-forest"}``.
SHORT_FORMS = {"policy": "name", "inference": "method"}


def set_path(data: dict[str, Any], path: Path, value: Any) -> None:
    """Set ``value`` at ``path`` (from :func:`key_path`) in a decoded scenario document."""
    node: Any = data
    for part, below in zip(path[:-1], path[1:], strict=True):
        if isinstance(part, int):
            node = node[part]
            continue
        child = node.get(part)
        if isinstance(child, str) and part in SHORT_FORMS and not isinstance(below, int):
            child = {SHORT_FORMS[part]: child}
        elif child is None:
            child = {}
        node[part] = child
        node = child
    node[path[-1]] = value


def expand(scenario: Scenario) -> list[Scenario]:
    """All grid points of ``scenario``'s sweep (``[scenario]`` itself if there is none)."""
    if not scenario.sweep:
        return [scenario]
    keys = [k for k, _ in scenario.sweep]
    arm_names = [arm.name for arm in scenario.arms]
    paths = [key_path(k, arm_names, type(scenario), scenario.source) for k in keys]
    points = []
    for values in itertools.product(*(v for _, v in scenario.sweep)):
        point = tuple(zip(keys, values, strict=True))
        data = copy.deepcopy(dict(scenario.raw))
        data.pop("sweep", None)
        for path, (_, value) in zip(paths, point, strict=True):
            set_path(data, path, value)
        try:
            sc = parse_scenario(data, scenario.source, allow_imports=scenario.allow_imports)
        except InputError as exc:
            raise InputError(
                f"sweep point {point_label(point)}: {exc.detail}", source=scenario.source
            ) from None
        # Command-line overrides (seed, replicates) apply to every point.
        points.append(sc.evolve(
            name=f"{scenario.name} [{point_label(point)}]",
            seed=scenario.seed if "scenario.seed" not in keys else sc.seed,
            replicates=scenario.replicates, sweep_point=point))
    return points
