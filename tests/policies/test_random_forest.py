"""Tests of seed 000's random-forest assignment policy."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation import OneCoinEM, OneCoinShiftedBetaEM
from marketsim.data.labels import LabelSet
from marketsim.policies.base import AssignmentPolicy, MarketInfo, MarketState
from marketsim.policies.random_forest import (
    DESCRIPTION,
    FEATURE_NAMES,
    N_BINS,
    RandomForestPolicy,
    ability_bins,
    posterior_entropy,
    simulate_instances,
    task_features,
)

PRIOR = [0.25, 0.75]


def paper_estimator(class_prior: list[float] = PRIOR) -> OneCoinShiftedBetaEM:
    """The inference service of seed 000's reproduction."""
    return OneCoinShiftedBetaEM(init="random", max_iter=30, tol=0, class_prior=class_prior)


def make_market(
    n: int = 600,
    m: int = 20,
    max_degree: int = 5,
    seed: int = 0,
    class_prior: list[float] = PRIOR,
    n_unlabelled: int = 0,
) -> tuple[MarketInfo, MarketState, np.ndarray, OneCoinEM]:
    """A market mid-way: 1..max_degree distinct workers per task, fitted by the paper's EM."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(2, size=n, p=class_prior)
    ability = 0.1 + 0.9 * rng.beta(6.0, 2.0, size=m)
    degree = rng.integers(1, max_degree + 1, size=n)
    degree[:n_unlabelled] = 0
    order = np.argsort(rng.random((n, m)), axis=1)
    keep = np.arange(m)[None, :] < degree[:, None]
    tasks = np.broadcast_to(np.arange(n)[:, None], (n, m))[keep]
    workers = order[keep]
    correct = rng.random(tasks.shape[0]) < ability[workers]
    answers = np.where(correct, truth[tasks], 1 - truth[tasks])
    data = LabelSet(tasks, workers, answers, n, m, 2)
    est = paper_estimator(class_prior).set_params(random_state=seed).fit(data)
    info = MarketInfo(
        n_tasks=n,
        n_workers=m,
        n_classes=2,
        class_prior=np.asarray(class_prior),
        ability_alpha=6.0,
        ability_beta=2.0,
        ability_low=0.1,
        inference=lambda: paper_estimator(class_prior),
    )
    state = MarketState(data, est.proba_, est.skill_, data.n_labels, 3 * n)
    return info, state, truth, est


def test_protocol_and_metadata() -> None:
    pol = RandomForestPolicy()
    assert isinstance(pol, AssignmentPolicy)
    assert pol.name == "random-forest"
    assert pol.needs_truth is False
    assert RandomForestPolicy.description == DESCRIPTION and len(DESCRIPTION) > 100
    assert len(FEATURE_NAMES) == 2 + N_BINS == 23


def test_rank_is_permutation_of_all_tasks() -> None:
    info, state, _, _ = make_market(n=300, m=15, n_unlabelled=10)
    pol = RandomForestPolicy(ensemble_size=3)
    pol.bind(info)
    ranking = pol.rank(state, np.random.default_rng(0))
    assert ranking.shape == (300,)
    assert np.array_equal(np.sort(ranking), np.arange(300))
    assert pol.forest_ is not None and not pol.fallback_


def test_rank_reproducible_for_same_seed() -> None:
    info, state, _, _ = make_market(n=300, m=15)
    pol = RandomForestPolicy(ensemble_size=3)
    pol.bind(info)
    a = pol.rank(state, np.random.default_rng(7))
    b = pol.rank(state, np.random.default_rng(7))
    c = pol.rank(state, np.random.default_rng(8))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_features_on_hand_built_graph() -> None:
    # 4 tasks, 3 workers; task 3 unlabelled.
    tasks = np.array([0, 0, 0, 1, 2, 2])
    workers = np.array([0, 1, 2, 1, 0, 2])
    skill = np.array([0.12, 0.05, 1.0])  # bins 2, 1 (edge value), 20 (p == 1)
    proba = np.array([[0.5, 0.5], [0.25, 0.75], [0.0, 1.0], [0.25, 0.75]])
    x = task_features(tasks, workers, 4, proba, skill)
    assert x.shape == (4, 23)
    np.testing.assert_allclose(x[:, 1], [3, 1, 2, 0])
    h = np.array([-0.25 * np.log2(0.25) - 0.75 * np.log2(0.75)])[0]
    np.testing.assert_allclose(x[:, 0], [1.0, h, 0.0, 1.0])  # unlabelled task: 1
    hist = np.zeros((4, N_BINS))
    hist[0, [2, 1, 20]] = 1
    hist[1, 1] = 1
    hist[2, [2, 20]] = 1
    np.testing.assert_array_equal(x[:, 2:], hist)
    np.testing.assert_array_equal(x[:, 2:].sum(axis=1), x[:, 1])
    x32 = task_features(tasks, workers, 4, proba, skill, np.float32)
    assert x32.dtype == np.float32 and np.array_equal(x32, x.astype(np.float32))


def test_ability_bins_edges() -> None:
    p = np.array([0.0, 0.0499, 0.05, 0.1, 0.5, 0.95, 0.999999, 1.0, -0.1, 1.2])
    assert ability_bins(p).tolist() == [0, 0, 1, 2, 10, 19, 19, 20, 0, 20]


def test_entropy_normalised() -> None:
    e = posterior_entropy(np.array([[1 / 3] * 3, [1.0, 0.0, 0.0]]))
    np.testing.assert_allclose(e, [1.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("k", range(2, 10))
def test_entropy_is_the_plain_row_sum_bit_for_bit(k: int) -> None:
    proba = np.random.default_rng(k).dirichlet(np.full(k, 0.3), size=2000)
    proba[::7] = 0.0
    proba[::7, 0] = 1.0  # certain rows: -1 * log(1) is -0.0
    proba[::11] = 1.0  # not a distribution, but every term -0.0
    proba[5, 1] = np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(proba > 0, -proba * np.log(proba), 0.0)
    want = terms.sum(axis=1) / np.log(k)
    assert np.array_equal(posterior_entropy(proba).view(np.int64), want.view(np.int64))


def test_simulated_instances_follow_the_priors() -> None:
    info, state, _, _ = make_market(n=1000, m=30)
    truth, answers = simulate_instances(
        state.labels.tasks, state.labels.workers, info, 20, np.random.default_rng(0)
    )
    assert truth.shape == (20, 1000) and answers.shape == (20, state.labels.n_labels)
    assert abs(truth.mean() - 0.75) < 0.01
    accuracy = (answers == truth[:, state.labels.tasks]).mean()
    assert abs(accuracy - (0.1 + 0.9 * 6 / 8)) < 0.02  # E[p] = 0.775


# The crowd here is weak or random by design; the estimator rightly warns that it is not
# identifiable (marketsim.aggregation.identifiability.NotIdentifiableWarning).
@pytest.mark.filterwarnings("ignore::marketsim.aggregation.identifiability.NotIdentifiableWarning")
def test_simulation_estimator_settings() -> None:
    info, _, _, _ = make_market(n=50, m=5)
    pol = RandomForestPolicy(sim_max_iter=17)
    pol.bind(info)
    est = pol._estimator(np.random.default_rng(0))
    assert est.max_iter == 17 and est.tol == 0 and est.prior == "shifted-beta"
    assert est.class_prior == PRIOR and est.init == "random"


def test_top_ranked_tasks_are_the_mislabelled_ones() -> None:
    info, state, truth, est = make_market(n=1000, m=30, max_degree=4, seed=3)
    wrong = est.labels_ != truth
    assert 0.03 < wrong.mean() < 0.3
    pol = RandomForestPolicy()
    pol.bind(info)
    ranking = pol.rank(state, np.random.default_rng(0))
    top = wrong[ranking[:100]].mean()
    bottom = wrong[ranking[500:]].mean()
    assert top > 2.0 * wrong.mean(), (top, wrong.mean())
    assert bottom < 0.5 * wrong.mean(), (bottom, wrong.mean())


# The crowd here is weak or random by design; the estimator rightly warns that it is not
# identifiable (marketsim.aggregation.identifiability.NotIdentifiableWarning).
@pytest.mark.filterwarnings("ignore::marketsim.aggregation.identifiability.NotIdentifiableWarning")
def test_one_class_target_falls_back_to_entropy() -> None:
    # A degenerate class prior: EM can never be wrong, so the forest has nothing to learn.
    info, state, _, _ = make_market(n=200, m=10, class_prior=[0.0, 1.0], n_unlabelled=15)
    pol = RandomForestPolicy(ensemble_size=2)
    pol.bind(info)
    ranking = pol.rank(state, np.random.default_rng(0))
    assert pol.fallback_ and pol.forest_ is None
    assert np.array_equal(np.sort(ranking), np.arange(200))
    assert set(ranking[:15].tolist()) == set(range(15))  # unlabelled: entropy 1, first


def test_max_features_capped_and_bad_params() -> None:
    info, state, _, _ = make_market(n=200, m=10)
    pol = RandomForestPolicy(ensemble_size=2, max_features=100, max_depth=None)
    pol.bind(info)
    pol.rank(state, np.random.default_rng(0))
    assert pol.forest_ is not None and pol.forest_.max_features == 23
    with pytest.raises(ValueError):
        RandomForestPolicy(sample_fraction=0.0)
    with pytest.raises(RuntimeError):
        RandomForestPolicy().rank(state, np.random.default_rng(0))
