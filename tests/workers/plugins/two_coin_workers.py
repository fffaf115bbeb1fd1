"""A worker model from outside marketsim, for the plug-in tests (``workers.model =
"two_coin_workers:TwoCoinWorkers"`` with this folder on the path): a two-coin crowd on binary
tasks, every worker right with probability ``accuracy_0`` on a task of class 1 (the first) and
``accuracy_1`` on one of class 2."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from marketsim.options import F
from marketsim.tables import Table
from marketsim.workers.base import AbilityView, AnswerModel, Crowd, World
from marketsim.workers.classes import ClassWorkers


class TwoCoinOptions(Table):
    """``[workers.two_coin]``: the two accuracies, one per true class."""

    accuracy_0: float = F(0.9, "probability of the right answer on a task of class 1",
                          ge=0, le=1)
    accuracy_1: float = F(0.7, "probability of the right answer on a task of class 2",
                          ge=0, le=1)


class TwoCoinAnswers:
    """Per-label answers: the true class with its class's accuracy, else the other class."""

    def __init__(self, truth: np.ndarray, confusion: np.ndarray,
                 rng: np.random.Generator) -> None:
        self.truth, self.confusion, self.rng = truth, confusion, rng

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """``worker``'s label for ``task`` (no score)."""
        truth = int(self.truth[task])
        right = self.rng.random() < self.confusion[worker, truth, truth]
        return (truth if right else 1 - truth), None


class TwoCoinWorkers(ClassWorkers):
    """Two coins: one accuracy for each of the two classes, the same for every worker."""

    name: ClassVar[str] = "two-coin"
    summary: ClassVar[str] = "right with probability accuracy_0 on class 1, accuracy_1 on class 2"
    table: ClassVar[str | None] = "two_coin"
    Options: ClassVar[type[Table]] = TwoCoinOptions
    allows_dynamics: ClassVar[bool] = False

    def ability_unread(self) -> str | None:
        """Its accuracies are its own table's: ``[workers.ability]`` is not read."""
        return "does not apply with a two-coin crowd (see workers.two_coin)"

    def crowd_problem(self, n_classes: int, n_workers: int) -> tuple[str, str] | None:
        """Two coins are two classes."""
        if n_classes != 2:
            return "model", f"two-coin workers need binary tasks (tasks.classes = 2), got " \
                f"{n_classes}"
        return None

    def draw_confusion(self, crowd: Crowd, rng: np.random.Generator) -> np.ndarray:
        """Every worker's matrix ``[[a0, 1 - a0], [1 - a1, a1]]`` (nothing is drawn)."""
        a0, a1 = self.options.accuracy_0, self.options.accuracy_1
        matrix = np.array([[a0, 1.0 - a0], [1.0 - a1, a1]])
        return np.broadcast_to(matrix, (crowd.workers.count, 2, 2)).copy()

    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """Right with the true class's accuracy, else the other class (vectorised)."""
        right = rng.random(truth.shape[0]) < confusion[workers, truth, truth]
        return np.where(right, truth, 1 - truth).astype(np.int64)

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """Per-label two-coin answers."""
        return TwoCoinAnswers(world.truth, world.confusion, rng)

    def answer_words(self, classes: int, ability: AbilityView) -> str:
        """The two accuracies."""
        return (f"a two-coin worker gives the right class with probability "
                f"{self.options.accuracy_0:g} on a task of class 1 and "
                f"{self.options.accuracy_1:g} on one of class 2.")
