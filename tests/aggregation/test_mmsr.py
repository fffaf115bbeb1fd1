"""M-MSR: binary only, robust to a block of adversarial workers, RTE, seeds, the API."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from marketsim.aggregation import MMSR, MajorityVote, make_estimator
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.mmsr import reduced_means
from marketsim.data.labels import LabelSet
from tests.aggregation._vote_crowds import accuracy, planted, rank_agreement, rte

#: crowd-kit 1.4.2's MMSR on RTE, 85.75 % (benchmarks/crowdkit_votes.py), minus 0.5 points.
RTE_FLOOR = 85.75 - 0.5


def test_refuses_more_than_two_classes_in_one_line() -> None:
    data, _ = planted([0.8, 0.7, 0.9], 20, 3, seed=0)
    with pytest.raises(ValueError, match="binary tasks only") as refused:
        MMSR().fit(data)
    assert "\n" not in str(refused.value)
    assert MMSR.BINARY_ONLY


def test_skills_recover_the_order_of_planted_accuracies() -> None:
    acc = np.linspace(0.55, 0.95, 12)
    data, _ = planted(list(acc), 800, 2, seed=1, density=0.7)
    est = MMSR(random_state=0).fit(data)
    assert rank_agreement(est.skill_, acc) > 0.9
    assert est.converged_ and est.n_iter_ == len(est.loss_history_)
    np.testing.assert_allclose(est.skills_, np.log(est.skill_ / (1 - est.skill_)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_resists_a_block_of_adversarial_workers(seed: int) -> None:
    """Ten workers right 75 % of the time, six who are nearly always wrong."""
    data, truth = planted([0.75] * 10 + [0.05] * 6, 400, 2, seed=seed)
    mv = MajorityVote(random_state=0).fit(data).labels_
    est = MMSR(random_state=0).fit(data)
    assert np.mean(est.labels_ == truth) > np.mean(mv == truth) + 0.3
    assert np.all(est.skills_[10:] < 0) and np.all(est.skills_[:10] > 0)


def test_rte_accuracy_at_least_crowdkit_minus_half_a_point() -> None:
    df, truth = rte()
    assert accuracy(MMSR().fit_predict(df), truth) >= RTE_FLOOR


def test_same_seed_same_result() -> None:
    data, _ = planted([0.8, 0.7, 0.6, 0.9, 0.3], 60, 2, seed=3, density=0.7)
    a, b = MMSR(random_state=5).fit(data), MMSR(random_state=5).fit(data)
    np.testing.assert_array_equal(a.proba_, b.proba_)
    np.testing.assert_array_equal(a.skills_, b.skills_)
    np.testing.assert_allclose(a.proba_.sum(axis=1), 1.0)


def test_reduction_drops_f_extremes_on_each_side() -> None:
    """One column, values 1..6 around own value 3.5, F = 2: the mean of {3, 4}."""
    x = np.array([[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]])
    out = reduced_means(x, np.ones_like(x, dtype=bool), np.ones(6), np.array([3.5]), 2, 0.1)
    np.testing.assert_allclose(out, [3.5])
    # fewer than F values below own value 1.5: drop all of them (just 1), and 2 from the top
    out = reduced_means(x, np.ones_like(x, dtype=bool), np.ones(6), np.array([1.5]), 2, 0.1)
    np.testing.assert_allclose(out, [3.0])


def test_params_and_registry() -> None:
    est = make_estimator("mmsr", n_iter=50, tol=1e-6)
    assert isinstance(est, MMSR)
    assert est.get_params() == {"n_iter": 50, "tol": 1e-6, "random_state": 0}
    data = LabelSet.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert est.fit(data).labels_.tolist() == [1, 0]


def test_a_three_class_scenario_blames_the_method_not_a_setting() -> None:
    from marketsim.errors import InputError
    from marketsim.scenario.parser import parse_scenario
    doc = {"tasks": {"count": 20, "classes": 3}, "workers": {"count": 4},
           "budget": {"edges": 40},
           "arms": [{"name": "m", "policy": "uniform",
                     "inference": {"method": "mmsr", "n_iter": 500}}]}
    with pytest.raises(InputError, match=r"arms\[0\]\.inference does not work with method "
                       r"'mmsr': mmsr supports binary tasks only \(2 classes\), got 3"):
        parse_scenario(doc, "mmsr.toml")


def test_more_workers_than_the_dense_pair_matrices_allow_is_one_line() -> None:
    # M-MSR works on the workers x workers agreement matrix: refused, not a MemoryError.
    m = MMSR.MAX_WORKERS + 1
    data = LabelSet(np.zeros(m, dtype=np.int64), np.arange(m), np.zeros(m, dtype=np.int64),
                    1, m, 2)
    with pytest.raises(ValueError, match=r"^mmsr works on the dense worker-by-worker agreement "
                       r"matrix: 4,001 workers need 16,008,001 entries"):
        MMSR().fit(data)


def test_a_diverging_crowd_keeps_the_last_finite_estimate_and_says_so() -> None:
    # Found by the property tests: two tasks, three workers; the rank-one iteration grows
    # fourfold a round until it overflows (NaN posteriors before).
    data = LabelSet(np.array([0, 0, 1, 1, 1]), np.array([0, 2, 0, 1, 2]),
                    np.array([1, 0, 0, 0, 0]), 2, 3, 2)
    with pytest.warns(ConvergenceWarning, match="mmsr diverged after"):
        est = MMSR().fit(data)
    assert np.all(np.isfinite(est.proba_)) and np.all(np.isfinite(est.skill_))
    assert est.labels_[1] == 0  # every answer to task 1 is class 0
