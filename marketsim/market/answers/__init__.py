"""How workers answer, one module per worker model.

Each module holds its model's world draw (abilities, confusion matrices or annotator types), the
vectorised draw of the initial graph's answers, the per-label answer the market draws when a
worker submits (scalar code, in the exact order of random draws the curves depend on), and a
worker-model object (:class:`~marketsim.market.world.WorkerModel`) tying them together,
registered by name in :mod:`marketsim.market.worker_models`:

- :mod:`~marketsim.market.answers.one_coin`: ``workers.model = "one-coin"``;
- :mod:`~marketsim.market.answers.spammer_hammer`: ``"spammer-hammer"`` (one-coin answers);
- :mod:`~marketsim.market.answers.confusion`: ``"confusion"`` (full confusion matrices);
- :mod:`~marketsim.market.answers.communities`: ``"communities"`` (Venanzi et al.'s shared
  confusion bias);
- :mod:`~marketsim.market.answers.glad`: ``"glad"`` (task difficulty);
- :mod:`~marketsim.market.answers.gaussian_scores`: ``"gaussian-scores"`` (scores in [0, 1]);
- :mod:`~marketsim.market.answers.replay`: real-data replay (the answer in the file).

:mod:`~marketsim.market.answers.classes` is what the class-label models share;
:mod:`~marketsim.market.answers.task_effects` the look-alike tasks and difficulty the
confusion-matrix models may add.
"""

from __future__ import annotations

from typing import Protocol


class AnswerModel(Protocol):
    """A worker model's per-label answer: what the market records when a worker submits."""

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The class label ``worker`` gives ``task``, and its score (``None`` without scores)."""
