"""How workers answer, one module per worker model.

Each module holds its model's world draw (abilities, confusion matrices or annotator types), the
vectorised draw of the initial graph's answers, and the per-label answer the market draws when a
worker submits (scalar code, in the exact order of random draws the curves depend on):

- :mod:`~marketsim.market.answers.one_coin`: ``workers.model = "one-coin"``;
- :mod:`~marketsim.market.answers.spammer_hammer`: ``"spammer-hammer"`` (one-coin answers);
- :mod:`~marketsim.market.answers.confusion`: ``"confusion"`` (full confusion matrices);
- :mod:`~marketsim.market.answers.gaussian_scores`: ``"gaussian-scores"`` (continuous scores);
- :mod:`~marketsim.market.answers.replay`: real-data replay (the answer in the file).
"""

from __future__ import annotations

from typing import Protocol


class AnswerModel(Protocol):
    """A worker model's per-label answer: what the market records when a worker submits."""

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The class label ``worker`` gives ``task``, and its score (``None`` without scores)."""
