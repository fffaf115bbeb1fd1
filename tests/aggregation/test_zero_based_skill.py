"""ZeroBasedSkill: the gradient steps, the learning-rate schedule, RTE, the estimator API."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation import MajorityVote, Wawa, ZeroBasedSkill, make_estimator
from tests.aggregation._vote_crowds import accuracy, planted, rank_agreement, rte

#: crowd-kit 1.4.2's ZeroBasedSkill on RTE, 92.12 % (benchmarks/crowdkit_votes.py), minus 0.5.
RTE_FLOOR = 92.12 - 0.5


def test_skills_recover_the_order_of_planted_accuracies() -> None:
    acc = np.linspace(0.45, 0.95, 12)
    data, _ = planted(list(acc), 600, 3, seed=1, density=0.6)
    est = ZeroBasedSkill().fit(data)
    assert rank_agreement(est.skills_, acc) > 0.9
    assert est.n_iter_ == 100


def test_one_full_step_from_equal_skills_is_wawa() -> None:
    """Equal starting skills vote as majority; a step of 1 sets skills to the agreement."""
    data, _ = planted([0.9, 0.7, 0.6, 0.5, 0.8], 200, 3, seed=2)
    np.testing.assert_allclose(ZeroBasedSkill(n_iter=1).fit(data).skills_,
                               Wawa().fit(data).skills_)


def test_learning_rate_schedule() -> None:
    """Two iterations with the rate halved at the second: s2 = s1 + 0.5 (a2 - s1)."""
    data, _ = planted([0.9, 0.4, 0.6, 0.55, 0.8], 200, 2, seed=4)
    one = ZeroBasedSkill(n_iter=1).fit(data).skills_
    two = ZeroBasedSkill(n_iter=2, lr_steps_to_reduce=2).fit(data)
    agree = ZeroBasedSkill(n_iter=1).fit(data)  # agreement with the vote weighted by `one`
    voted = agree.labels_
    hits = np.bincount(data.workers, weights=voted[data.tasks] == data.labels)
    a2 = hits / np.bincount(data.workers)
    np.testing.assert_allclose(two.skills_, one + 0.5 * (a2 - one))


def test_beats_majority_when_few_experts_face_many_noisy_workers() -> None:
    data, truth = planted([0.9] * 3 + [0.3] * 12, 400, 3, seed=0)
    mv = MajorityVote(random_state=0).fit(data).labels_
    zbs = ZeroBasedSkill().fit(data).labels_
    assert np.mean(zbs == truth) > np.mean(mv == truth) + 0.1


def test_rte_accuracy_at_least_crowdkit_minus_half_a_point() -> None:
    df, truth = rte()
    assert accuracy(ZeroBasedSkill().fit_predict(df), truth) >= RTE_FLOOR


def test_params_options_and_determinism() -> None:
    est = make_estimator("zbs", n_iter=7)
    assert isinstance(est, ZeroBasedSkill) and est.get_params()["n_iter"] == 7
    assert set(ZeroBasedSkill.Options.model_fields) <= set(est.get_params())
    est.set_params(lr_init=0.5)
    assert est.lr_init == 0.5
    with pytest.raises(ValueError, match="invalid parameter"):
        est.set_params(max_iter=3)
    data, _ = planted([0.8, 0.7, 0.6, 0.9], 50, 4, seed=3)
    np.testing.assert_array_equal(ZeroBasedSkill().fit(data).proba_,
                                  ZeroBasedSkill().fit(data).proba_)
