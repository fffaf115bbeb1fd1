"""Which answer model a market uses: the world's worker model, or a replayed file's answers."""

from __future__ import annotations

import numpy as np

from marketsim.market.answers import AnswerModel
from marketsim.market.answers.confusion import ConfusionAnswers
from marketsim.market.answers.gaussian_scores import ScoreAnswers
from marketsim.market.answers.one_coin import OneCoinAnswers
from marketsim.market.answers.replay import ReplayAnswers
from marketsim.market.world import World
from marketsim.scenario.replay import ReplayData


def answer_model(
    world: World, n_classes: int, rng: np.random.Generator, replay: ReplayData | None
) -> AnswerModel:
    """The per-label answers of the world's worker model (the file's answers in a replay)."""
    if replay is not None:
        return ReplayAnswers(replay)
    if world.continuous:
        assert world.means is not None and world.good is not None
        return ScoreAnswers(world.means, world.good, world.sigma, rng)
    if world.one_coin:
        return OneCoinAnswers(world.truth, world.confusion, n_classes, rng)
    return ConfusionAnswers(world.truth, world.confusion, rng)
