"""Spammer-hammer workers (``workers.model = "spammer-hammer"``): each worker is a hammer
(always right) with probability ``hammer_fraction``, else a spammer (uniform answers, accuracy
``1/K``). Both are one-coin workers, so their answers are drawn by
:class:`~marketsim.market.answers.one_coin.OneCoinAnswers`."""

from __future__ import annotations

import numpy as np

from marketsim.market.answers.one_coin import OneCoinWorkers
from marketsim.market.world import one_coin_confusion
from marketsim.scenario.specs import Scenario


def draw_spammer_hammer_confusion(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """One-coin confusion matrices of a spammer-hammer crowd (one uniform draw per worker)."""
    m, k = scenario.workers.count, scenario.tasks.classes
    hammer = rng.random(m) < scenario.workers.spammer_hammer.hammer_fraction
    ability = np.where(hammer, 1.0, 1.0 / k)
    return one_coin_confusion(ability, k)


class SpammerHammerWorkers(OneCoinWorkers):
    """The spammer-hammer worker model: one-coin workers who are perfect or random."""

    def draw_confusion(self, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
        """Spammer-hammer matrices (:func:`draw_spammer_hammer_confusion`)."""
        return draw_spammer_hammer_confusion(scenario, rng)
