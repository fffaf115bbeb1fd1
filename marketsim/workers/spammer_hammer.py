"""Spammer-hammer workers (``workers.model = "spammer-hammer"``): each worker is a hammer
(always right) with probability ``hammer_fraction``, else a spammer (uniform answers, accuracy
``1/K``). Both are one-coin workers, so their answers are drawn by
:class:`~marketsim.workers.one_coin.OneCoinAnswers`."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from marketsim.options import F
from marketsim.tables import Table
from marketsim.workers.base import AbilityView, Crowd
from marketsim.workers.draws import one_coin_confusion
from marketsim.workers.one_coin import OneCoinWorkers


class SpammerHammerSpec(Table):
    """``[workers.spammer_hammer]`` (`model = "spammer-hammer"` only)"""

    hammer_fraction: float = F(0.3, "each worker is perfect with this probability, else "
                               "uniformly random", ge=0, le=1)


def draw_spammer_hammer_confusion(spec: SpammerHammerSpec, crowd: Crowd,
                                  rng: np.random.Generator) -> np.ndarray:
    """One-coin confusion matrices of a spammer-hammer crowd (one uniform draw per worker)."""
    m, k = crowd.workers.count, crowd.tasks.classes
    hammer = rng.random(m) < spec.hammer_fraction
    ability = np.where(hammer, 1.0, 1.0 / k)
    return one_coin_confusion(ability, k)


class SpammerHammerWorkers(OneCoinWorkers):
    """The spammer-hammer worker model: one-coin workers who are perfect or random."""

    name: ClassVar[str] = "spammer-hammer"
    summary: ClassVar[str] = "a fraction of perfect workers, the rest answer uniformly at random"
    table: ClassVar[str | None] = "spammer_hammer"
    Options: ClassVar[type[Table]] = SpammerHammerSpec
    default: ClassVar[bool] = False

    def draw_confusion(self, crowd: Crowd, rng: np.random.Generator) -> np.ndarray:
        """Spammer-hammer matrices (:func:`draw_spammer_hammer_confusion`)."""
        return draw_spammer_hammer_confusion(self.options, crowd, rng)

    def answer_words(self, classes: int, ability: AbilityView) -> str:
        """Perfect or uniformly random workers."""
        share = self.options.hammer_fraction
        return (f"each worker is drawn once as a hammer, who always gives the true class, with "
                f"probability {share:g}, else a spammer, who answers uniformly at random.")
