"""MACE (Hovy et al. 2013): planted spammers, RTE accuracy, both modes, seeding, K > 2."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.aggregation import MACE, MajorityVote, make_estimator
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.identifiability import NotIdentifiableWarning
from marketsim.data.labels import LabelSet

#: crowd-kit 1.4.2's MACE (defaults: VB, 10 restarts, seed 0) on RTE, as measured by
#: benchmarks/crowdkit_mace.py (docs/explanation/infer/mace.md): 91.50 %; the issue's bar is
#: 0.5 points below.
RTE_THRESHOLD = 91.50 - 0.5


def planted(k: int = 2, seed: int = 0, n_tasks: int = 400, n_good: int = 12,
            n_spam: int = 6, per_task: int = 6) -> tuple[LabelSet, np.ndarray, np.ndarray]:
    """MACE's own generative story: good workers know the answer 90 % of the time, spammers
    never; both answer from a skewed distribution of their own when they do not know."""
    rng = np.random.default_rng(seed)
    m = n_good + n_spam
    truth = rng.integers(0, k, n_tasks)
    theta = np.concatenate([np.full(n_good, 0.9), np.zeros(n_spam)])
    xi = rng.dirichlet(np.full(k, 0.5), size=m)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate([rng.choice(m, per_task, replace=False) for _ in range(n_tasks)])
    knows = rng.random(tasks.size) < theta[workers]
    cum = np.cumsum(xi, axis=1)[workers]
    spam = np.minimum((rng.random(tasks.size)[:, None] > cum).sum(axis=1), k - 1)
    labels = np.where(knows, truth[tasks], spam)
    data = LabelSet(tasks, workers, labels, n_tasks, m, k)
    return data, truth, np.arange(m) >= n_good


def fit(est: MACE, data: LabelSet, **kw: object) -> MACE:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", NotIdentifiableWarning)
        return est.fit(data, **kw)


@pytest.mark.parametrize("method", ["vb", "em"])
@pytest.mark.parametrize("k", [2, 4])
def test_finds_planted_spammers(method: str, k: int) -> None:
    data, truth, is_spammer = planted(k=k, seed=k)
    est = fit(MACE(mode=method), data)
    spam = est.spamming_
    assert spam.shape == (data.n_workers,)
    assert spam[is_spammer].min() > 0.75, spam[is_spammer]
    assert spam[~is_spammer].max() < 0.25, spam[~is_spammer]
    np.testing.assert_allclose(est.competence_, 1.0 - spam)
    assert est.strategies_.shape == (data.n_workers, k)
    np.testing.assert_allclose(est.strategies_.sum(axis=1), 1.0)
    np.testing.assert_allclose(est.confusion_.sum(axis=2), 1.0)
    assert np.mean(est.labels_ == truth) >= 0.95
    mv = MajorityVote(random_state=0).fit(data)
    assert np.mean(est.labels_ == truth) >= np.mean(mv.labels_ == truth)


def test_more_than_two_classes() -> None:
    """K = 5: posteriors are (n, 5) distributions and beat majority vote's accuracy."""
    data, truth, _ = planted(k=5, seed=11, n_spam=9)
    est = fit(MACE(), data)
    assert est.proba_.shape == (data.n_tasks, 5)
    np.testing.assert_allclose(est.proba_.sum(axis=1), 1.0, atol=1e-12)
    mv = MajorityVote(random_state=0).fit(data)
    assert np.mean(est.labels_ == truth) > np.mean(mv.labels_ == truth)


def test_em_objective_never_decreases() -> None:
    """EM's smoothing is a Dirichlet prior; the log-posterior it tracks never decreases."""
    data, _, _ = planted(k=3, seed=5)
    est = fit(MACE(mode="em", tol=0.0, max_iter=40), data)
    ll = np.asarray(est.log_likelihood_)
    assert np.all(np.diff(ll) >= -1e-8 * np.abs(ll[:-1]))


def test_same_seed_same_result_other_seed_other_starts() -> None:
    data, _, _ = planted(seed=3)
    a, b = fit(MACE(random_state=7), data), fit(MACE(random_state=7), data)
    np.testing.assert_array_equal(a.proba_, b.proba_)
    assert a.restart_log_likelihoods_ == b.restart_log_likelihoods_
    c = fit(MACE(random_state=8, tol=0.0, max_iter=3), data)
    d = fit(MACE(random_state=7, tol=0.0, max_iter=3), data)
    assert c.restart_log_likelihoods_ != d.restart_log_likelihoods_
    assert len(set(d.restart_log_likelihoods_)) == 10  # ten different starts


def test_best_restart_is_kept() -> None:
    data, _, _ = planted(seed=4)
    est = fit(MACE(n_restarts=5), data)
    finals = est.restart_log_likelihoods_
    assert len(finals) == 5
    assert finals[est.best_restart_] >= max(finals) - 1e-6 * data.n_labels
    assert est.log_likelihood_[-1] == finals[est.best_restart_]


def test_dataframe_api_params_and_registry() -> None:
    df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b"],
                       "worker": ["x", "y", "z", "x", "y", "z"],
                       "label": ["cat", "cat", "dog", "dog", "dog", "dog"]})
    pred = MACE().fit_predict(df)
    assert pred.to_dict() == {"a": "cat", "b": "dog"}
    proba = MACE(mode="em").fit_predict_proba(df)
    assert list(proba.columns) == ["cat", "dog"] and list(proba.index) == ["a", "b"]
    est = MACE().set_params(mode="em", n_restarts=2)
    assert est.get_params()["mode"] == "em" and est.get_params()["n_restarts"] == 2
    assert make_estimator("mace").get_params()["mode"] == "vb"
    assert make_estimator("mace", mode="em", n_restarts=3).get_params()["n_restarts"] == 3


@pytest.mark.parametrize("bad", [dict(mode="gibbs"), dict(n_restarts=0), dict(max_iter=0),
                                 dict(alpha=0.0), dict(smoothing=-1.0)])
def test_bad_settings_are_refused(bad: dict) -> None:
    data, _, _ = planted(n_tasks=20)
    with pytest.raises(ValueError):
        MACE(**bad).fit(data)


def test_warm_start_and_gold() -> None:
    data, truth, _ = planted(seed=6)
    first = fit(MACE(), data)
    warm = fit(MACE(), data, init_proba=first.proba_)
    assert np.mean(warm.labels_ == first.labels_) >= 0.99
    known = np.full(data.n_tasks, -1)
    known[:20] = (truth[:20] + 1) % 2  # gold says the opposite: clamped all the same
    gold = fit(MACE(), data, known=known)
    np.testing.assert_array_equal(gold.labels_[:20], known[:20])


def test_renaming_workers_renames_the_answer() -> None:
    """The random starts are keyed by what a worker did, not by its index."""
    data, _, _ = planted(k=3, seed=9)
    perm = np.random.default_rng(0).permutation(data.n_workers)
    moved = LabelSet(data.tasks, perm[data.workers], data.labels, data.n_tasks,
                     data.n_workers, 3)
    a, b = fit(MACE(), data), fit(MACE(), moved)
    np.testing.assert_allclose(b.proba_, a.proba_, atol=1e-9)
    np.testing.assert_allclose(b.spamming_[perm], a.spamming_, atol=1e-9)


def _rte() -> pd.DataFrame | None:
    env = os.environ.get("MARKETSIM_DATA")
    base = Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"
    folder = base / "zhang2014" if (base / "zhang2014").is_dir() else base
    if not (folder / "rte_crowd.txt").is_file():
        return None
    crowd = np.loadtxt(folder / "rte_crowd.txt", dtype=np.int64, ndmin=2)
    truth = np.loadtxt(folder / "rte_truth.txt", dtype=np.int64, ndmin=2)
    df = pd.DataFrame({"task": crowd[:, 0], "worker": crowd[:, 1], "label": crowd[:, 2]})
    return df.assign(truth=df["task"].map(dict(zip(truth[:, 0], truth[:, 1], strict=False))))


@pytest.mark.parametrize("method", ["vb", "em"])
def test_rte_accuracy(method: str) -> None:
    df = _rte()
    if df is None:
        pytest.skip("Zhang et al. data not found")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pred = MACE(mode=method).fit_predict(df[["task", "worker", "label"]])
    truth = df.groupby("task")["truth"].first()
    assert 100.0 * float((pred.loc[truth.index] == truth).mean()) >= RTE_THRESHOLD


#: Settings that change how many starts run and where they stop.
START_SETTINGS = [{}, {"mode": "em"}, {"tol": 0.0, "max_iter": 7}, {"max_iter": 1},
                  {"n_restarts": 1}, {"n_restarts": 23}]


def together_cases() -> list:
    """Every setting on each of three crowds (seeds): the default loop runs each setting on
    one of them, each crowd in turn (6 of the 18 cases; all of them took 21 s of the default
    loop), ``-m slow`` every pair."""
    return [pytest.param(settings, seed, id=f"{seed}-settings{i}",
                         marks=() if seed == i % 3 else pytest.mark.slow)
            for seed in range(3) for i, settings in enumerate(START_SETTINGS)]


@pytest.mark.parametrize(("settings", "seed"), together_cases())
def test_starts_run_together_as_they_run_apart(
    monkeypatch: pytest.MonkeyPatch, settings: dict, seed: int
) -> None:
    """Two classes: the random starts run as one array axis (_mace_starts), with every number
    of the separate runs, bit for bit, including where each start stops."""
    from marketsim.aggregation import _mace_starts

    rng = np.random.default_rng(seed)
    n_labels = int(rng.integers(50, 6000))
    data = LabelSet.from_arrays(rng.integers(0, int(rng.integers(5, 1500)), n_labels),
                                rng.integers(0, int(rng.integers(2, 150)), n_labels),
                                rng.integers(0, 2, n_labels))
    assert _mace_starts.supported(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = MACE(**settings).fit(data)
        monkeypatch.setattr(_mace_starts, "supported", lambda data: False)
        apart = MACE(**settings).fit(data)
    assert together.restart_log_likelihoods_ == apart.restart_log_likelihoods_
    assert together.log_likelihood_ == apart.log_likelihood_
    assert (together.n_iter_, together.best_restart_) == (apart.n_iter_, apart.best_restart_)
    for name in ("proba_", "spamming_", "strategies_", "confusion_"):
        np.testing.assert_array_equal(getattr(together, name), getattr(apart, name))
