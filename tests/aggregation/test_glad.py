"""GLAD (Whitehill et al., NIPS 2009): planted abilities and difficulties recovered, posteriors
on easy data, RTE accuracy against the crowd-kit figure, the fitted attributes, K > 2, the
estimator API and the registry entry."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation import GLAD, make_estimator
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.identifiability import NotIdentifiableWarning
from marketsim.aggregation.majority_vote import MajorityVote
from marketsim.data.labels import LabelSet

#: crowd-kit 1.4.2's GLAD on RTE: 92.50 % accuracy (benchmarks/crowdkit_glad.py, measured on
#: 2026-11-25); the issue's bar is that figure minus 0.5 points.
RTE_THRESHOLD = 0.9250 - 0.005


def glad_crowd(n_tasks: int, n_workers: int, k: int, per_task: int, *, seed: int = 0):
    """Labels drawn from the GLAD model itself: right with probability sigma(alpha_j
    beta_i), else one of the other K - 1 classes uniformly."""
    rng = np.random.default_rng(seed)
    alpha = rng.normal(1.0, 1.0, n_workers)
    log_beta = rng.normal(0.5, 0.6, n_tasks)
    truth = rng.integers(0, k, n_tasks)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate([rng.choice(n_workers, per_task, replace=False)
                              for _ in range(n_tasks)])
    p_right = 1.0 / (1.0 + np.exp(-alpha[workers] * np.exp(log_beta[tasks])))
    wrong = (truth[tasks] + rng.integers(1, k, tasks.size)) % k
    labels = np.where(rng.random(tasks.size) < p_right, truth[tasks], wrong)
    return LabelSet(tasks, workers, labels, n_tasks, n_workers, k), truth, alpha, log_beta


def fit_quietly(est: GLAD, data: LabelSet) -> GLAD:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotIdentifiableWarning)
        return est.fit(data)


@pytest.mark.parametrize("k", [2, 4])
def test_recovers_planted_abilities_and_difficulties(k: int) -> None:
    data, truth, alpha, log_beta = glad_crowd(3000, 60, k, 8, seed=k)
    est = fit_quietly(GLAD(), data)
    assert np.corrcoef(est.alphas_, alpha)[0, 1] > 0.95
    assert np.corrcoef(np.log(est.betas_), log_beta)[0, 1] > 0.3  # 8 labels per task
    error = np.mean(est.labels_ != truth)
    mv = np.mean(MajorityVote(random_state=0).fit(data).labels_ != truth)
    assert error < mv
    assert error < 0.12


def test_posteriors_on_easy_data() -> None:
    """Unanimous tasks get (nearly) certain posteriors; a 4-of-5 task leans its way."""
    tasks = np.repeat(np.arange(40), 5)
    workers = np.tile(np.arange(5), 40)
    labels = np.repeat(np.arange(40) % 3, 5)
    labels[5 * 39] = (labels[5 * 39] + 1) % 3  # one dissent on the last task
    data = LabelSet(tasks, workers, labels, 40, 5, 3)
    est = fit_quietly(GLAD(), data)
    assert est.labels_.tolist() == (np.arange(40) % 3).tolist()
    assert est.proba_[np.arange(39), np.arange(39) % 3].min() > 0.999
    assert 0.9 < est.proba_[39, 39 % 3] < 1.0
    np.testing.assert_allclose(est.proba_.sum(axis=1), 1.0)


def test_attributes_shapes_and_signs() -> None:
    """alphas_ per worker (negative for an adversary), betas_ per task and > 0, skill_."""
    data, truth, _, _ = glad_crowd(400, 12, 2, 6, seed=3)
    # worker 12 labels every task and is always wrong
    adversary = LabelSet(
        np.concatenate([data.tasks, np.arange(400)]),
        np.concatenate([data.workers, np.full(400, 12)]),
        np.concatenate([data.labels, 1 - truth]), 400, 14, 2,  # worker 13 never labels
    )
    est = fit_quietly(GLAD(), adversary)
    assert est.alphas_.shape == (14,) and est.betas_.shape == (400,)
    assert est.skill_.shape == (14,) and np.all((est.skill_ > 0) & (est.skill_ < 1))
    assert np.all(est.betas_ > 0) and np.all(np.isfinite(est.betas_))
    np.testing.assert_allclose(np.log(est.betas_), est.log_betas_)
    assert est.alphas_[12] < 0 < np.median(est.alphas_[:12])
    assert est.skill_[12] < 0.5
    assert est.alphas_[13] == 1.0  # no labels: the prior mean
    assert est.prior_.tolist() == [0.5, 0.5]  # fixed uniform, as in the paper


def test_objective_never_decreases_and_starts() -> None:
    data, _, _, _ = glad_crowd(300, 15, 3, 5, seed=5)
    for init in ("prior", "majority", "random"):
        for sweeps in (1, 25):
            est = GLAD(init=init, m_step_max_iter=sweeps, tol=0, max_iter=30, random_state=1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                ll = np.asarray(fit_quietly(est, data).log_likelihood_)
            assert np.all(np.diff(ll) >= -1e-9 * np.abs(ll[:-1])), (init, sweeps)


def test_renaming_tasks_and_workers_permutes_the_output() -> None:
    data, _, _, _ = glad_crowd(200, 10, 3, 4, seed=6)
    rng = np.random.default_rng(0)
    tp, wp, rows = rng.permutation(200), rng.permutation(10), rng.permutation(data.n_labels)
    moved = LabelSet(tp[data.tasks[rows]], wp[data.workers[rows]], data.labels[rows], 200, 10, 3)
    a, b = fit_quietly(GLAD(), data), fit_quietly(GLAD(), moved)
    np.testing.assert_allclose(b.proba_[tp], a.proba_, atol=1e-9)
    np.testing.assert_allclose(b.alphas_[wp], a.alphas_, atol=1e-9)
    np.testing.assert_allclose(b.betas_[tp], a.betas_, rtol=1e-7)


def test_estimator_api_dataframe_and_registry() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b"], "worker": ["x", "y", "z"] * 2,
                       "label": ["cat", "cat", "dog", "dog", "dog", "dog"]})
    est = GLAD()
    labels = est.fit_predict(df)
    assert labels.to_dict() == {"a": "cat", "b": "dog"}
    proba = est.fit_predict_proba(df)
    assert list(proba.columns) == ["cat", "dog"] and proba.loc["b", "dog"] > 0.9
    assert est.get_params()["m_step_max_iter"] == 1
    assert est.set_params(m_step_max_iter=5).m_step_max_iter == 5
    assert isinstance(make_estimator("glad"), GLAD)
    with pytest.raises(ValueError, match="class_prior must be 'uniform'"):
        GLAD(class_prior="flat").fit(LabelSet.from_arrays([0], [0], [1]))
    with pytest.raises(ValueError, match="GLAD: init: input should be 'prior', 'majority' or"):
        GLAD(init="spectral").fit(LabelSet.from_arrays([0], [0], [1]))
    # an estimated class prior follows the data
    data, _, _, _ = glad_crowd(300, 10, 2, 5, seed=8)
    est = fit_quietly(GLAD(class_prior=None), data)
    assert abs(est.prior_.sum() - 1.0) < 1e-12 and est.prior_.tolist() != [0.5, 0.5]


def _rte() -> tuple[LabelSet, np.ndarray]:
    env = os.environ.get("MARKETSIM_DATA")
    folder = Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"
    folder = folder / "zhang2014" if (folder / "zhang2014").is_dir() else folder
    crowd, truth = folder / "rte_crowd.txt", folder / "rte_truth.txt"
    if not crowd.is_file():
        pytest.skip(f"RTE data not found in {folder} (set MARKETSIM_DATA)")
    a = np.loadtxt(crowd, dtype=np.int64, ndmin=2)
    b = np.unique(np.loadtxt(truth, dtype=np.int64, ndmin=2), axis=0)
    n = int(max(a[:, 0].max(), b[:, 0].max()))
    y = np.full(n, -1, dtype=np.int64)
    y[b[:, 0] - 1] = b[:, 1] - 1
    data = LabelSet.from_arrays(a[:, 0] - 1, a[:, 1] - 1, a[:, 2] - 1, n_tasks=n,
                                n_workers=int(a[:, 1].max()), n_classes=2)
    return data, y


def test_rte_accuracy_at_least_crowdkit_minus_half_a_point() -> None:
    data, truth = _rte()
    est = fit_quietly(GLAD(), data)
    known = truth >= 0
    assert np.mean(est.labels_[known] == truth[known]) >= RTE_THRESHOLD
