"""The random-forest policy's batched simulations give what the straightforward computation gives.

The policy fits one EM over ``ensemble_size`` simulated instances stacked on the current graph
(``LabelSet.stack``) and its forest skips scikit-learn's per-tree input checks. These tests pin
both to plain references kept here: separate EM fits per instance, and the policy's ranking as
computed by a plain implementation (fresh sparse build of the union, a histogram bin per label,
trees fitted and queried with all of scikit-learn's checks). The market's label log keeps the
incidence matrix in step with arriving labels; it must equal a fresh build at every refresh.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from marketsim.aggregation import OneCoinBetaEM, OneCoinEM, OneCoinShiftedBetaEM
from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.metrics import estimated_skill
from marketsim.data.labels import LabelSet
from marketsim.market.label_log import LabelLog
from marketsim.policies.base import MarketInfo, MarketState
from marketsim.policies.random_forest import (
    BIN_EDGES,
    N_BINS,
    RandomForestPolicy,
    simulate_instances,
)
from marketsim.policies.simple import posterior_entropy, rank_by_score

PRIOR = [0.7, 0.3]


def random_graph(
    rng: np.random.Generator, n: int, m: int, *, repeats: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(task, worker) pairs with 0..4 distinct workers per task (some tasks unlabelled), in a
    shuffled order; ``repeats`` adds a few repeated pairs."""
    degree = rng.integers(0, min(4, m) + 1, size=n)
    order = np.argsort(rng.random((n, m)), axis=1)
    keep = np.arange(m)[None, :] < degree[:, None]
    tasks = np.broadcast_to(np.arange(n)[:, None], (n, m))[keep]
    workers = order[keep]
    if repeats and tasks.size:
        extra = rng.integers(tasks.size, size=5)
        tasks, workers = np.r_[tasks, tasks[extra]], np.r_[workers, workers[extra]]
    shuffle = rng.permutation(tasks.size)
    return tasks[shuffle], workers[shuffle]


def offset_union(base: LabelSet, answers: np.ndarray) -> LabelSet:
    """The disjoint union of the instances, built the plain way (fresh sparse build)."""
    e_count, n, m = answers.shape[0], base.n_tasks, base.n_workers
    off = np.arange(e_count)[:, None]
    return LabelSet((base.tasks[None, :] + off * n).ravel(), (base.workers[None, :] + off * m)
                    .ravel(), answers.ravel(), e_count * n, e_count * m, base.n_classes)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("classes", [2, 3])
def test_stacked_union_is_the_plain_union(seed: int, classes: int) -> None:
    rng = np.random.default_rng(seed)
    tasks, workers = random_graph(rng, 40, 7, repeats=seed % 2 == 1)
    base = LabelSet(tasks, workers, np.zeros_like(tasks), 40, 7, classes)
    answers = rng.integers(classes, size=(4, tasks.size))
    fast, plain = base.stack(answers), offset_union(base, answers)
    for name in ("tasks", "workers", "labels"):
        assert np.array_equal(getattr(fast, name), getattr(plain, name))
    assert (fast.n_tasks, fast.n_workers, fast.n_classes) == (160, 28, classes)
    a, b = fast.incidence, plain.incidence
    assert a.shape == b.shape
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.data, b.data)


def test_stack_rejects_answers_of_another_graph() -> None:
    base = LabelSet([0, 1], [0, 0], [0, 1], 2, 1, 2)
    with pytest.raises(ValueError, match="answers must have shape"):
        base.stack(np.zeros((3, 5), dtype=np.int64))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("prior", ["shifted-beta", "beta"])
def test_batched_em_equals_each_instance_em(seed: int, prior: str) -> None:
    """One EM over the stacked instances gives every instance, bit for bit, the posteriors and
    abilities of its own fit (fixed class prior, fixed number of iterations)."""
    rng = np.random.default_rng(100 + seed)
    n, m, e_count = int(rng.integers(20, 120)), int(rng.integers(3, 15)), 5
    tasks, workers = random_graph(rng, n, m)
    info = MarketInfo(n_tasks=n, n_workers=m, n_classes=2, class_prior=np.asarray(PRIOR),
                      ability_alpha=6.0, ability_beta=2.0, ability_low=0.1,
                      inference=OneCoinEM)
    _, answers = simulate_instances(tasks, workers, info, e_count, rng)
    base = LabelSet(tasks, workers, answers[0], n, m, 2)
    max_iter = int(rng.integers(2, 8))

    def em() -> OneCoinEM:
        cls = {None: OneCoinEM, "beta": OneCoinBetaEM, "shifted-beta": OneCoinShiftedBetaEM}[prior]
        return cls(max_iter=max_iter, tol=0.0, class_prior=PRIOR)

    with identifiability_checks(False):
        pooled = em().fit(base.stack(answers))
        for e in range(e_count):
            alone = em().fit(LabelSet(tasks, workers, answers[e], n, m, 2))
            assert alone.n_iter_ == pooled.n_iter_ == max_iter
            assert np.array_equal(alone.proba_, pooled.proba_[e * n:(e + 1) * n])
            seen = np.bincount(workers, minlength=m) > 0
            assert np.array_equal(alone.skill_[seen], pooled.skill_[e * m:(e + 1) * m][seen])


def plain_simulation(tasks: np.ndarray, workers: np.ndarray, info: MarketInfo, size: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The simulated instances written out: the same draws in the same order."""
    prior = np.asarray(info.class_prior, dtype=np.float64)
    truth = rng.choice(info.n_classes, size=(size, info.n_tasks), p=prior / prior.sum())
    low = info.ability_low
    ability = low + (1.0 - low) * rng.beta(info.ability_alpha, info.ability_beta,
                                           size=(size, info.n_workers))
    t = truth[:, tasks]
    correct = rng.random(t.shape) < ability[:, workers]
    if info.n_classes == 2:
        wrong = 1 - t
    else:
        wrong = (t + rng.integers(1, info.n_classes, size=t.shape)) % info.n_classes
    return truth, np.where(correct, t, wrong)


@pytest.mark.parametrize("classes", [2, 3, 4])
def test_simulated_instances_are_the_plain_draws(classes: int) -> None:
    rng = np.random.default_rng(classes)
    tasks, workers = random_graph(rng, 300, 12)
    prior = np.arange(1.0, classes + 1) / np.arange(1.0, classes + 1).sum()
    info = MarketInfo(n_tasks=300, n_workers=12, n_classes=classes, class_prior=prior,
                      ability_alpha=6.0, ability_beta=2.0, ability_low=0.1, inference=OneCoinEM)
    fast_rng, plain_rng = np.random.default_rng(9), np.random.default_rng(9)
    truth, answers = simulate_instances(tasks, workers, info, 6, fast_rng)
    want_truth, want_answers = plain_simulation(tasks, workers, info, 6, plain_rng)
    assert truth.dtype == answers.dtype == np.int64 and answers.flags.c_contiguous
    assert np.array_equal(truth, want_truth) and np.array_equal(answers, want_answers)
    assert fast_rng.random() == plain_rng.random()  # the same number of draws


# --- the policy's ranking against a plain implementation ------------------------------------

def plain_features(data: LabelSet, proba: np.ndarray, skill: np.ndarray) -> np.ndarray:
    """Entropy, degree and the ability histogram, one bin lookup per label."""
    degree = np.bincount(data.tasks, minlength=data.n_tasks).astype(np.float64)
    entropy = np.where(degree > 0, posterior_entropy(proba), 1.0)
    per_label = np.searchsorted(BIN_EDGES, skill[data.workers], side="right") - 1
    bins = np.clip(per_label, 0, N_BINS - 1)
    hist = np.zeros((data.n_tasks, N_BINS))
    np.add.at(hist, (data.tasks, bins), 1.0)
    return np.column_stack([entropy, degree, hist])


def plain_rank(pol: RandomForestPolicy, state: MarketState, rng: np.random.Generator
               ) -> np.ndarray:
    """The policy's ``rank``, written out: same random draws, plain computations."""
    info, labels = pol.info, state.labels
    assert info is not None
    feats = plain_features(labels, state.proba, state.skill)
    opt = pol.options
    truth, answers = simulate_instances(labels.tasks, labels.workers, info, opt.ensemble_size,
                                        rng)
    est = info.inference().set_params(max_iter=opt.sim_max_iter, tol=0.0,
                                      random_state=int(rng.integers(2**31 - 1)))
    with identifiability_checks(False):
        union = offset_union(labels, answers)
        est.fit(union)
    x = plain_features(union, est.proba_, estimated_skill(est, union)).astype(np.float32)
    y = np.argmax(est.proba_, axis=1) != truth.ravel()
    tree_rng = np.random.default_rng(int(rng.integers(2**31 - 1)))
    assert y.any() and not y.all()
    size = max(1, int(round(opt.sample_fraction * y.size)))
    seeds = tree_rng.integers(2**31 - 1, size=opt.n_trees)
    wrong = np.zeros(labels.n_tasks)
    for seed in seeds:
        rows = tree_rng.integers(y.size, size=size)
        tree = DecisionTreeClassifier(criterion=opt.criterion, max_depth=opt.max_depth,
                                      max_features=min(opt.max_features, x.shape[1]),
                                      random_state=int(seed)).fit(x[rows], y[rows])
        proba = tree.predict_proba(feats.astype(np.float32))
        wrong += proba[:, list(tree.classes_).index(True)] if True in tree.classes_ else 0.0
    return rank_by_score(wrong / opt.n_trees, rng)


@pytest.mark.parametrize("seed", range(3))
def test_policy_ranking_equals_the_plain_computation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = 400, 25
    truth = rng.choice(2, size=n, p=PRIOR)
    tasks, workers = random_graph(rng, n, m)
    ability = 0.1 + 0.9 * rng.beta(6.0, 2.0, size=m)
    answers = np.where(rng.random(tasks.size) < ability[workers], truth[tasks], 1 - truth[tasks])
    data = LabelSet(tasks, workers, answers, n, m, 2)

    def inference() -> OneCoinEM:
        return OneCoinShiftedBetaEM(init="random", class_prior=PRIOR)

    with identifiability_checks(False):
        est = inference().set_params(random_state=seed).fit(data)
    info = MarketInfo(n_tasks=n, n_workers=m, n_classes=2, class_prior=np.asarray(PRIOR),
                      ability_alpha=6.0, ability_beta=2.0, ability_low=0.1, inference=inference)
    state = MarketState(data, est.proba_, est.skill_, data.n_labels, 3 * n)
    pol = RandomForestPolicy(ensemble_size=4, sim_max_iter=15)
    pol.bind(info)
    ranked = pol.rank(state, np.random.default_rng(50 + seed))
    assert not pol.fallback_
    assert np.array_equal(ranked, plain_rank(pol, state, np.random.default_rng(50 + seed)))


# --- the market's incidence kept in step with its label log -----------------------------------

def test_label_log_incidence_is_the_fresh_build_at_every_refresh() -> None:
    """Labels arriving in batches, distinct (task, worker) pairs: after every batch the log's
    incidence has the index arrays of a fresh build from all labels so far."""
    rng = np.random.default_rng(3)
    n, m, k = 60, 9, 3
    tasks, workers = random_graph(rng, n, m)
    labels = rng.integers(k, size=tasks.size)
    log = LabelLog(n, m, k, 16)
    for cut in np.array_split(np.arange(tasks.size), 7):
        log.extend(tasks[cut], workers[cut], labels[cut])
        fresh = log.view()
        kept = log.incidence()
        assert kept is not None
        fresh.preset_incidence(kept)
        plain = LabelSet(fresh.tasks, fresh.workers, fresh.labels, n, m, k).incidence
        assert np.array_equal(kept.indptr, plain.indptr)
        assert np.array_equal(kept.indices, plain.indices)
        assert np.array_equal(kept.data, plain.data)


def test_label_log_incidence_gives_way_to_the_usual_build_on_a_repeated_label() -> None:
    log = LabelLog(3, 2, 2, 4)
    log.extend(np.array([0, 1]), np.array([0, 1]), np.array([1, 0]))
    assert log.incidence() is not None
    log.append(0, 0, 1)  # the same label again: the usual build adds it up (entry 2.0)
    assert log.incidence() is None
    assert log.view().incidence[0, 1] == 2.0


def test_preset_incidence_must_fit_the_labels() -> None:
    data = LabelSet([0, 1], [0, 0], [0, 1], 2, 1, 2)
    other = LabelSet([0], [0], [0], 2, 1, 2).incidence
    with pytest.raises(ValueError, match="does not fit 2 labels"):
        data.preset_incidence(other)
