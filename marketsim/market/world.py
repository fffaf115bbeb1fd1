"""The hidden world of one replicate: true classes, worker confusion matrices and the initial
graphs.

Drawn once per replicate and shared by every arm (common random numbers), so differences
between arms are the policies' and the estimators' own. Every discrete worker model is stored as
per-worker confusion matrices ``confusion[j, c, l] = P(worker j says l | true class c)``; the
one-coin model is the special case with ``p_j`` on the diagonal (each model's draws live in
:mod:`marketsim.market.answers`). A continuous-score world
(``gaussian-scores``) holds the true task means and annotator types instead; task features, when
the scenario has them, are drawn from the true classes before the initial graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketsim.market.answers.confusion import draw_confusion_matrices, draw_labels
from marketsim.market.answers.gaussian_scores import draw_good, draw_scores, draw_task_means
from marketsim.market.answers.one_coin import draw_ability, draw_answers, one_coin_confusion
from marketsim.market.answers.spammer_hammer import draw_spammer_hammer_confusion
from marketsim.market.task_features import draw_feature_proba, draw_task_features
from marketsim.scenario.specs import Scenario


@dataclass(frozen=True)
class World:
    """True classes (n_tasks,), confusion matrices (n_workers, K, K), accuracy (n_workers,)
    under the class prior, and the initial (task, worker, label) triples of one initial graph."""

    truth: np.ndarray
    confusion: np.ndarray
    ability: np.ndarray
    initial_tasks: np.ndarray
    initial_workers: np.ndarray
    initial_labels: np.ndarray
    #: Every worker symmetric (errors spread evenly over the wrong classes): the fast answer path.
    one_coin: bool = True
    #: Continuous worlds: true task means (n_tasks,), annotator types (n_workers,), the good
    #: annotators' noise and the initial labels' scores; ``None``/0 in discrete worlds.
    means: np.ndarray | None = None
    good: np.ndarray | None = None
    sigma: float = 0.0
    initial_scores: np.ndarray | None = None
    #: Task features (n_tasks, count) of 0.0/1.0 and their class-conditional probabilities.
    features: np.ndarray | None = None
    feature_proba: np.ndarray | None = None

    @property
    def continuous(self) -> bool:
        """Workers give scores in [0, 1] (the world has true means, not classes)."""
        return self.means is not None


def draw_confusion(scenario: Scenario, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Per-worker confusion matrices for the scenario's worker model; flag one-coin worlds."""
    model = scenario.workers.model
    if model == "one-coin":
        k = scenario.tasks.classes
        return one_coin_confusion(draw_ability(scenario, scenario.workers.count, rng), k), True
    if model == "spammer-hammer":
        return draw_spammer_hammer_confusion(scenario, rng), True
    return draw_confusion_matrices(scenario, rng), False


def accuracy(confusion: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Probability that each worker is right on a task drawn from the prior."""
    return np.einsum("jcc,c->j", confusion, prior)


def initial_pairs(
    scenario: Scenario, kind: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(task, worker) pairs of an initial graph, sorted by task.

    ``one-per-task``: each task one label, workers round-robin over a random task order (seed
    000's 2,000 initial edges). ``bernoulli``: each pair present with ``initial_probability``
    (Zhang et al.'s design); if that draws more pairs than the budget, a uniformly random subset
    of ``budget.edges`` pairs is kept, so the budget is never overspent.
    """
    n, m = scenario.tasks.count, scenario.workers.count
    if kind == "one-per-task":
        tasks = rng.permutation(n).astype(np.int64)
        workers = (np.arange(n) % m).astype(np.int64)
    elif kind == "bernoulli":
        p = scenario.budget.initial_probability
        per_task = rng.binomial(m, p, size=n)
        tasks = np.repeat(np.arange(n, dtype=np.int64), per_task)
        keys = rng.random((n, m)).argsort(axis=1) if n * m <= 50_000_000 else None
        if keys is None:
            raise ValueError("bernoulli initial graphs are limited to 50 million task-worker pairs")
        take = np.arange(m)[None, :] < per_task[:, None]
        workers = keys[take].astype(np.int64)
        if tasks.size > scenario.budget.edges:
            keep = np.sort(rng.choice(tasks.size, size=scenario.budget.edges, replace=False))
            tasks, workers = tasks[keep], workers[keep]
    else:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(tasks, kind="stable")
    return tasks[order], workers[order]


def draw_world(
    scenario: Scenario,
    rng: np.random.Generator,
    initial: str | None = None,
    initial_rng: np.random.Generator | None = None,
) -> World:
    """Draw a replicate's world with the initial graph ``initial`` (default: the scenario's).

    The initial graph is drawn from ``initial_rng`` when given (one stream per kind of graph, so
    arms with different initial graphs still share the truth and the workers)."""
    if scenario.continuous:
        return draw_score_world(scenario, rng, initial, initial_rng)
    n, k = scenario.tasks.count, scenario.tasks.classes
    prior = np.asarray(scenario.tasks.prior)
    truth = rng.choice(k, size=n, p=prior).astype(np.int64)
    confusion, one_coin = draw_confusion(scenario, rng)
    features = phi = None
    if scenario.tasks.features is not None:  # before the graph: shared by every arm
        phi = draw_feature_proba(scenario.tasks.features, k, rng)
        features = draw_task_features(truth, phi, rng)
    graph_rng = rng if initial_rng is None else initial_rng
    tasks, workers = initial_pairs(scenario, initial or scenario.budget.initial, graph_rng)
    if one_coin:
        right = confusion[workers, truth[tasks], truth[tasks]]
        labels = draw_answers(truth[tasks], right, k, graph_rng)
    else:
        labels = draw_labels(truth[tasks], confusion, workers, graph_rng)
    return World(truth, confusion, accuracy(confusion, prior), tasks, workers, labels, one_coin,
                 features=features, feature_proba=phi)


def draw_score_world(
    scenario: Scenario,
    rng: np.random.Generator,
    initial: str | None = None,
    initial_rng: np.random.Generator | None = None,
) -> World:
    """A continuous-score world (Hoiem's bad-annotator model): task means, annotator types,
    scored initial graph.

    ``truth`` is all 0 and ``confusion`` a (n_workers, 1, 1) array of ones (one "class"), so
    class-based bookkeeping stays well defined; ``ability`` is 1 for good annotators, else 0."""
    n, m = scenario.tasks.count, scenario.workers.count
    spec = scenario.workers.gaussian_scores
    assert scenario.tasks.means is not None
    mu = draw_task_means(scenario.tasks.means, n, rng)
    good = draw_good(spec, m, rng)
    graph_rng = rng if initial_rng is None else initial_rng
    tasks, workers = initial_pairs(scenario, initial or scenario.budget.initial, graph_rng)
    scores = draw_scores(mu[tasks], good[workers], spec.sigma, graph_rng)
    return World(
        truth=np.zeros(n, dtype=np.int64),
        confusion=np.ones((m, 1, 1)),
        ability=good.astype(np.float64),
        initial_tasks=tasks,
        initial_workers=workers,
        initial_labels=np.zeros(tasks.size, dtype=np.int64),
        one_coin=False,
        means=mu,
        good=good,
        sigma=spec.sigma,
        initial_scores=scores,
    )
