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
from marketsim.scenario.specs import Scenario
from marketsim.scenario.sweep_keys import key_path, set_path


def point_label(point: tuple[tuple[str, Any], ...]) -> str:
    """``workers.count=10, workers.ability.alpha=2``."""
    return ", ".join(f"{k}={v}" for k, v in point)


def expand(scenario: Scenario) -> list[Scenario]:
    """All grid points of ``scenario``'s sweep (``[scenario]`` itself if there is none), each
    validated as a file would be, with the command line's seed and replicates."""
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
            sc = type(scenario).from_document(data, scenario.source,
                                              allow_imports=scenario.allow_imports)
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
