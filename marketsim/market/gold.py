"""Gold (control) questions: questions whose class the requester knows (issue #16).

Their classes are drawn once per replicate from the task class prior (a stream of their own,
shared by every arm), then, in a world with per-task effects, each question's own effects
(difficulty, look-alike class, task type) from the same stream and the same distributions as
the tasks' (:meth:`~marketsim.workers.base.WorkerModel.items`); workers answer them with the
world's worker model, as the questions they are — never as the real task of the same number.
Gold answers cost budget like any label but are kept apart from the task labels: they are never
results (the error rate is over the real tasks only). With ``gold.in_inference`` they enter the
EM fit as extra tasks whose posteriors are clamped to their known class
(:func:`marketsim.aggregation.base.clamp_known`), so they calibrate the workers who answered
them; estimators without EM ignore them.
"""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.scenario.market_specs import GoldSpec
from marketsim.workers.base import AnswerModel, Crowd, World


def draw_gold_truth(spec: GoldSpec, prior: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The classes of the ``spec.count`` gold questions, drawn from the class prior."""
    return rng.choice(len(prior), size=spec.count, p=prior).astype(np.int64)


class GoldQuestions:
    """The gold questions of one market, who answered which, and the answers."""

    @classmethod
    def draw(cls, crowd: Crowd, spec: GoldSpec, world: World, n_workers: int,
             world_rng: np.random.Generator, rng: np.random.Generator) -> GoldQuestions:
        """A replicate's gold questions: their classes, then their own per-task effects, from
        ``world_rng`` (shared by every arm), answered by ``world``'s worker model with answers
        and picks drawn from ``rng``."""
        truth = draw_gold_truth(spec, np.asarray(crowd.tasks.prior), world_rng)
        items = world.model.items(crowd, world, truth, world_rng)
        answers = world.model.answers(items, crowd.tasks.classes, rng)
        return cls(spec, truth, answers, n_workers, rng)

    def __init__(self, spec: GoldSpec, truth: np.ndarray, answers: AnswerModel,
                 n_workers: int, rng: np.random.Generator) -> None:
        self.spec = spec
        self.truth = truth
        self.answers = answers
        self.rng = rng
        #: Questions each worker answered or holds (a worker answers each at most once).
        self.taken: list[set[int]] = [set() for _ in range(n_workers)]
        self._questions: list[int] = []
        self._workers: list[int] = []
        self._labels: list[int] = []

    @property
    def n_answered(self) -> int:
        """Gold answers received so far."""
        return len(self._labels)

    def has_left(self, worker: int) -> bool:
        """Whether ``worker`` has a gold question they have not answered."""
        return len(self.taken[worker]) < self.spec.count

    def wants(self, worker: int) -> bool:
        """Whether this arrival of ``worker`` gets a gold question by ``gold.rate`` (one draw
        of the gold stream when the rate is positive and the worker has a question left)."""
        return (self.spec.rate > 0 and self.has_left(worker)
                and bool(self.rng.random() < self.spec.rate))

    def pick(self, worker: int) -> int:
        """A question ``worker`` has not answered, uniformly; it is then theirs.

        The ``r``-th free question (``r`` uniform) is found by stepping over the worker's taken
        ones: time in what they answered, not in ``gold.count``."""
        taken = self.taken[worker]
        question = int(self.rng.integers(self.spec.count - len(taken)))
        for held in sorted(taken):
            if held > question:
                break
            question += 1
        taken.add(question)
        return question

    def answer(self, question: int, worker: int) -> bool:
        """``worker`` answers ``question`` (the world's worker model); whether they were right."""
        label, _ = self.answers.answer(question, worker)
        self._questions.append(question)
        self._workers.append(worker)
        self._labels.append(label)
        return label == int(self.truth[question])

    def with_tasks(self, labels: LabelSet) -> tuple[LabelSet, np.ndarray]:
        """``labels`` followed by the gold answers as extra tasks, one per answered question
        (``n_tasks + i`` for the ``i``-th answered question in question order), and the known
        classes (-1 for the real tasks): the input of a gold-aware EM fit. Questions nobody
        answered are left out: they carry no evidence, and their number may be large."""
        n = labels.n_tasks
        answered, row = np.unique(np.asarray(self._questions, dtype=np.int64),
                                  return_inverse=True)
        known = np.concatenate([np.full(n, -1, dtype=np.int64), self.truth[answered]])
        combined = LabelSet(
            np.concatenate([labels.tasks, n + row.astype(np.int64)]),
            np.concatenate([labels.workers, np.asarray(self._workers, dtype=np.int64)]),
            np.concatenate([labels.labels, np.asarray(self._labels, dtype=np.int64)]),
            n + answered.size, labels.n_workers, labels.n_classes,
        )
        return combined, known
