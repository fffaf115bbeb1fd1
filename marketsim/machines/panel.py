"""A replicate's machine annotators drawn together: the humans' task difficulty they follow,
their families' shared latents, and what each machine knows of each task.

Drawn once per replicate from its own stream (common random numbers: every arm asks the same
machines the same tasks and gets the same answers at temperature 0), after the human world,
which it never changes: a scenario without machines draws nothing. The stream is split into
one child for the families (their latents, in the order of their names), one per machine (in
the scenario's order) and one for the calls (fresh draws at temperature > 0), so adding a
machine leaves the others' answers unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from marketsim.machines.base import MachineAnnotator, MachineTasks
from marketsim.workers.base import World


def normal_scores(difficulty: np.ndarray | None) -> np.ndarray | None:
    """``difficulty`` as standard normal scores of its ranks (ties broken by position), so any
    monotone scale of the humans' difficulty correlates with a machine's normal hardness by
    ρ; ``None`` when there is none or it is the same for every task."""
    if difficulty is None or difficulty.size == 0 or np.ptp(difficulty) == 0:
        return None
    ranks = np.empty(difficulty.size, dtype=np.float64)
    ranks[np.argsort(difficulty, kind="stable")] = np.arange(difficulty.size)
    return np.asarray(ndtri((ranks + 0.5) / difficulty.size))


def family_latents(names: Sequence[str | None], n_tasks: int, rng: np.random.Generator
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each family's shared (latent hardness, wrong-class uniform) per task, by name."""
    return {name: (rng.standard_normal(n_tasks), rng.random(n_tasks))
            for name in sorted({n for n in names if n is not None})}


@dataclass(frozen=True)
class MachinePanel:
    """The machines of one replicate and what each knows of the tasks; :meth:`ask` answers
    calls (vectorised), drawing afresh from ``calls`` only for a machine at temperature > 0."""

    machines: tuple[MachineAnnotator, ...]
    known: tuple[MachineTasks, ...]
    calls: np.random.Generator

    @property
    def names(self) -> tuple[str, ...]:
        """Each machine's ``name``, in the scenario's order (its labels' source)."""
        return tuple(m.options.name for m in self.machines)

    def ask(self, machine: int, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Machine ``machine``'s labels and confidences for one call per entry of ``tasks``."""
        return self.machines[machine].answer(self.known[machine], tasks, self.calls)


def draw_panel(machines: Sequence[MachineAnnotator], truth: np.ndarray, n_classes: int,
               human_difficulty: np.ndarray | None, rng: np.random.Generator) -> MachinePanel:
    """The machines facing tasks of classes ``truth`` whose humans' difficulty is
    ``human_difficulty`` (any monotone scale; ``None``: every task as hard)."""
    families_rng, *own, calls = rng.spawn(len(machines) + 2)
    human = normal_scores(human_difficulty)
    families = family_latents([m.family for m in machines], truth.size, families_rng)
    known = tuple(m.draw(truth, n_classes, human,
                         None if m.family is None else families[m.family], r)
                  for m, r in zip(machines, own, strict=True))
    return MachinePanel(tuple(machines), known, calls)


def world_panel(machines: Sequence[MachineAnnotator], world: World, n_classes: int,
                rng: np.random.Generator) -> MachinePanel:
    """The machines facing a replicate's ``world``: its true classes, and its humans' task
    difficulty as its worker model declares it (``WorkerModel.task_difficulty``)."""
    return draw_panel(machines, world.truth, n_classes, world.model.task_difficulty(world),
                      rng)
