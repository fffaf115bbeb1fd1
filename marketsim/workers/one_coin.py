"""One-coin workers (``workers.model = "one-coin"``): worker ``j`` is right with probability
``p_j ~ low + (1 - low) Beta(alpha, beta)``, else gives a uniformly chosen wrong class."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from marketsim.workers.base import AbilityView, AnswerModel, Crowd, World
from marketsim.workers.classes import ClassWorkers
from marketsim.workers.draws import one_coin_confusion
from marketsim.workers.dynamics import shifted
from marketsim.workers.words import ability_text


def draw_ability(crowd: Crowd, n: int, rng: np.random.Generator) -> np.ndarray:
    """``low + (1 - low) Beta(alpha, beta)`` abilities."""
    ab = crowd.workers.ability
    return ab.low + (1.0 - ab.low) * rng.beta(ab.alpha, ab.beta, size=n)


def draw_answers(
    truth: np.ndarray, ability: np.ndarray, n_classes: int, rng: np.random.Generator
) -> np.ndarray:
    """One-coin answers: the true class with probability ``ability``, else a uniform wrong one."""
    correct = rng.random(truth.shape[0]) < ability
    if n_classes == 2:
        wrong = 1 - truth
    else:
        wrong = (truth + rng.integers(1, n_classes, size=truth.shape[0])) % n_classes
    return np.where(correct, truth, wrong).astype(np.int64)


class OneCoinAnswers:
    """Per-label one-coin answers (also spammer-hammer's): right with the worker's diagonal
    probability, else a uniformly chosen wrong class (a second draw only when K > 2)."""

    def __init__(
        self, truth: np.ndarray, confusion: np.ndarray, n_classes: int, rng: np.random.Generator
    ) -> None:
        self.truth = truth
        self.confusion = confusion
        self.n_classes = n_classes
        self.rng = rng

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The worker's label for ``task`` (no score)."""
        truth = int(self.truth[task])
        label = truth
        if self.rng.random() >= self.confusion[worker, truth, truth]:
            k = self.n_classes
            label = 1 - truth if k == 2 else (truth + int(self.rng.integers(1, k))) % k
        return label, None

    def answer_block(self, tasks: np.ndarray, workers: np.ndarray) -> np.ndarray:
        """The labels of a block of hand-outs at once (the block engine; :func:`draw_answers`:
        one uniform per label, then the wrong classes when K > 2)."""
        truth = self.truth[tasks]
        return draw_answers(truth, self.confusion[workers, truth, truth], self.n_classes,
                            self.rng)

    def answer_shifted(self, task: int, worker: int, shift: float) -> tuple[int, float | None]:
        """The label with the logit of being right shifted by ``shift`` (the same draws as
        :meth:`answer`; ``[workers.dynamics]``)."""
        truth = int(self.truth[task])
        label = truth
        if self.rng.random() >= shifted(float(self.confusion[worker, truth, truth]), shift):
            k = self.n_classes
            label = 1 - truth if k == 2 else (truth + int(self.rng.integers(1, k))) % k
        return label, None


class OneCoinWorkers(ClassWorkers):
    """The one-coin worker model: shifted-Beta abilities, one-coin answers."""

    name: ClassVar[str] = "one-coin"
    summary: ClassVar[str] = ("right with probability p = low + (1-low) Beta(alpha, beta), else "
                              "a uniform wrong class")
    default: ClassVar[bool] = True
    answers_in_blocks: ClassVar[bool] = True

    def draw_confusion(self, crowd: Crowd, rng: np.random.Generator) -> np.ndarray:
        """One-coin matrices of ``low + (1 - low) Beta(alpha, beta)`` abilities."""
        ability = draw_ability(crowd, crowd.workers.count, rng)
        return one_coin_confusion(ability, crowd.tasks.classes)

    def initial_answers(self, truth: np.ndarray, confusion: np.ndarray, workers: np.ndarray,
                        n_classes: int, rng: np.random.Generator) -> np.ndarray:
        """One-coin answers with each worker's diagonal probability (:func:`draw_answers`)."""
        return draw_answers(truth, confusion[workers, truth, truth], n_classes, rng)

    def answers(self, world: World, n_classes: int, rng: np.random.Generator) -> AnswerModel:
        """Per-label one-coin answers (:class:`OneCoinAnswers`)."""
        return OneCoinAnswers(world.truth, world.confusion, n_classes, rng)

    def answer_words(self, classes: int, ability: AbilityView) -> str:
        """Right with probability p, else a uniformly chosen wrong class."""
        return (f"{ability_text(ability)}. A one-coin worker gives the true class with "
                "probability p and otherwise a wrong class at random.")
