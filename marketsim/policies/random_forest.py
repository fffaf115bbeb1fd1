"""Maginnis & Gupta's (2015) adaptive policy: a random forest,
trained on simulated copies of the current graph, predicts which tasks EM currently gets wrong.

At every refresh the policy

1. draws ``ensemble_size`` fresh instances on the *current* graph (same (task, worker) pairs):
   true classes from the class prior, abilities ``low + (1 - low) Beta(alpha, beta)``, one-coin
   answers;
2. runs the market's own EM (``MarketInfo.inference``) on each, for ``sim_max_iter`` fixed
   iterations (``tol = 0``), as the authors did (40 iterations inside the simulations);
3. builds per-task features (:func:`task_features`) with target "EM's label is wrong" and fits
   a random forest on the pooled ``ensemble_size * n_tasks`` rows;
4. computes the same features from the market's real estimate and ranks tasks by the forest's
   predicted probability of a wrong label, highest first (random tie-break).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import model_validator

from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.metrics import estimated_skill
from marketsim.data.labels import LabelSet
from marketsim.options import F, Options
from marketsim.policies.bagging import BootstrapForest
from marketsim.policies.base import MarketInfo, MarketState, Policy
from marketsim.policies.simple import posterior_entropy, rank_by_score

#: Number of ability-histogram bins. The authors' edges are 0, 0.05, ..., 1 (21 edges) and they
#: report 21 bins, i.e. MATLAB ``histc`` semantics: bin k counts ``edges[k] <= p < edges[k+1]``
#: for k < 20, and the 21st bin counts ``p == 1`` exactly.
N_BINS = 21
BIN_EDGES = np.arange(N_BINS) / (N_BINS - 1)  # k/20: the doubles nearest 0, 0.05, ..., 1

#: Column names of the feature matrix returned by :func:`task_features`.
FEATURE_NAMES = ("entropy", "degree", *(f"hist_{k:02d}" for k in range(N_BINS)))

DESCRIPTION = (
    "Random-forest (Maginnis & Gupta 2015) learns where the current estimate is likely wrong. At "
    "every refresh it simulates an ensemble of fresh markets on the current assignment graph, "
    "drawing true classes and worker abilities from the known priors, runs the market's own EM "
    "on each, and trains a random forest to predict whether EM mislabels a task from three "
    "observable features: the entropy of the task's posterior, its number of labels and a "
    "histogram of the estimated abilities of its workers. The real tasks are then ranked by the "
    "forest's predicted probability of being wrong, so labels go first to tasks that look "
    "mislabelled, not merely uncertain."
)


def ability_bins(skill: np.ndarray) -> np.ndarray:
    """Histogram bin (0..20) of each ability, ``histc(p, 0:0.05:1)`` style (see :data:`N_BINS`).

    Abilities outside [0, 1] are clipped into the first or last bin.
    """
    idx = np.searchsorted(BIN_EDGES, np.asarray(skill, dtype=np.float64), side="right") - 1
    return np.clip(idx, 0, N_BINS - 1)


def task_features(
    tasks: np.ndarray,
    workers: np.ndarray,
    n_tasks: int,
    proba: np.ndarray,
    skill: np.ndarray,
    dtype: type = np.float64,
) -> np.ndarray:
    """Seed 000's per-task features: entropy, degree and ability histogram (raw counts).

    Parameters
    ----------
    tasks, workers : int arrays of shape (L,)
        The (task, worker) pair of every label.
    n_tasks : int
    proba : ndarray of shape (n_tasks, K)
        Task posteriors of the estimate.
    skill : ndarray of shape (n_workers,)
        Estimated worker accuracies.
    dtype : np.float64 or np.float32
        Of the result. The forest reads float32: the training rows are built in float32
        directly, the very values of the float64 matrix converted (the entropy is rounded once
        either way; counts are exact).

    Returns
    -------
    ndarray of shape (n_tasks, 2 + 21)
        Column 0: normalised posterior entropy (1 for unlabelled tasks); column 1: number of
        labels ``|di|``; columns 2..22: counts of the task's labels whose worker's estimated
        ability falls in each bin of :data:`BIN_EDGES` (one count per label).
    """
    tasks = np.asarray(tasks, dtype=np.int64)
    workers = np.asarray(workers, dtype=np.int64)
    degree = np.bincount(tasks, minlength=n_tasks)
    bins = np.take(ability_bins(skill), workers)  # each worker binned once, not each label
    keys = tasks * N_BINS
    keys += bins
    hist = np.bincount(keys, minlength=n_tasks * N_BINS)
    out: np.ndarray = np.empty((n_tasks, 2 + N_BINS), dtype=dtype)
    out[:, 0] = np.where(degree > 0, posterior_entropy(proba), 1.0)
    out[:, 1] = degree
    out[:, 2:] = hist.reshape(n_tasks, N_BINS)
    return out


def simulate_instances(
    tasks: np.ndarray,
    workers: np.ndarray,
    info: MarketInfo,
    size: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``size`` fresh instances on a fixed graph, all at once.

    Returns
    -------
    truth : int ndarray of shape (size, n_tasks)
        True classes drawn from ``info.class_prior``.
    answers : int ndarray of shape (size, L)
        One-coin answers for the (task, worker) pairs, abilities drawn from
        ``low + (1 - low) Beta(alpha, beta)``: right with probability ``p_j``, else a uniformly
        chosen wrong class.
    """
    k = info.n_classes
    prior = np.asarray(info.class_prior, dtype=np.float64)
    truth = rng.choice(k, size=(size, info.n_tasks), p=prior / prior.sum())
    truth = truth.astype(np.int64, copy=False)
    low = float(info.ability_low)
    ability = low + (1.0 - low) * rng.beta(
        info.ability_alpha, info.ability_beta, size=(size, info.n_workers)
    )
    # np.take: truth[:, tasks] in C order (the stacked union reads it row by row), and faster
    t = np.take(truth, tasks, axis=1)  # a fresh array: it becomes the answers
    correct = rng.random(t.shape) < np.take(ability, workers, axis=1)
    if k == 2:  # a wrong answer is the other class: flip t where not correct, in place
        t ^= np.logical_not(correct, out=correct)
        return truth, t
    wrong = (t + rng.integers(1, k, size=t.shape)) % k
    return truth, np.where(correct, t, wrong).astype(np.int64, copy=False)


def _pools_safely(est: Any) -> bool:
    """Whether simulated instances can be fitted jointly: only when nothing is shared between
    them, i.e. the estimator is an EM model whose class prior is fixed rather than estimated."""
    params = est.get_params() if hasattr(est, "get_params") else {}
    return "max_iter" in params and params.get("class_prior") is not None


class RandomForestOptions(Options):
    """``random-forest`` (Maginnis & Gupta's forest trained on simulated markets)."""

    ensemble_size: int = F(10, "simulated instances per refresh (authors: 10)", ge=1)
    n_trees: int = F(10, "trees in the forest (authors: 10)", ge=1)
    max_depth: int | None = F(10, "maximum tree depth (authors: 10; None, from Python only: "
                              "unlimited)", ge=1)
    sample_fraction: float = F(0.2, "fraction of the pooled training rows bootstrapped for each "
                               "tree (authors: 0.2)", gt=0, le=1)
    max_features: int = F(10, "features tried per split (authors: 10), capped at the 23 "
                          "available", ge=1)
    sim_max_iter: int = F(40, "EM iterations inside the simulations, run in full (`tol = 0`; "
                          "authors: 40)", ge=1)
    criterion: Literal["entropy", "gini", "log_loss"] = F(
        "entropy", "split criterion: entropy (the information gain of the paper), gini or "
        "log_loss")
    n_jobs: int = F(1, "accepted and ignored: the trees are small, and studies parallelise "
                    "over units instead (`--jobs`); -1 or >= 1", ge=-1)

    @model_validator(mode="after")
    def _jobs(self) -> RandomForestOptions:
        if self.n_jobs == 0:
            raise ValueError("n_jobs must be -1 or >= 1")
        return self


class RandomForestPolicy(Policy[RandomForestOptions]):
    """Seed 000's adaptive policy: rank tasks by a forest's predicted probability that EM's
    current label is wrong, the forest being trained on simulated copies of the current graph.

    Options: :class:`RandomForestOptions` (the authors' values are the defaults).

    Notes
    -----
    Features (:func:`task_features`): normalised posterior entropy (binary entropy in bits for
    K = 2; 1 for unlabelled tasks), degree ``|di|`` and a 21-bin ability histogram with edges
    0, 0.05, ..., 1 read as MATLAB ``histc`` does (20 half-open intervals plus a bin for
    ``p == 1`` exactly, which EM's clamping to ``1 - 1e-6`` leaves empty): this keeps the
    authors' 21 histogram features and their edges. When the simulated targets have a single
    class (EM never or always wrong) the forest cannot be fitted and tasks are ranked by
    posterior entropy instead.
    """

    name = "random-forest"
    #: About 12 times a uniform unit (1,000 tree fits and 1,000 simulated EMs per 100 refreshes).
    unit_cost = 12.0
    description = DESCRIPTION

    Options = RandomForestOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.info: MarketInfo | None = None
        #: The forest fitted at the last ``rank`` call (``None`` after the entropy fallback).
        self.forest_: BootstrapForest | None = None
        #: True when the last ``rank`` call fell back to ranking by entropy.
        self.fallback_: bool = False

    # --- protocol ----------------------------------------------------------------------------
    def bind(self, info: MarketInfo) -> None:
        """Keep the market's priors and inference factory."""
        self.info = info

    def rank(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """All task indices, by descending predicted probability that EM's label is wrong."""
        return rank_by_score(self.score(state, rng), rng)

    # --- the algorithm -----------------------------------------------------------------------
    def _estimator(self, rng: np.random.Generator) -> Any:
        """A fresh estimator like the market's, set to ``sim_max_iter`` fixed iterations."""
        assert self.info is not None
        est = self.info.inference()
        params = est.get_params() if hasattr(est, "get_params") else {}
        update: dict[str, Any] = {}
        if "max_iter" in params:
            update["max_iter"] = self.options.sim_max_iter
        if "tol" in params:
            update["tol"] = 0.0
        if "random_state" in params:
            update["random_state"] = int(rng.integers(2**31 - 1))
        if update:
            est.set_params(**update)
        return est

    def training_set(
        self, labels: LabelSet, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Simulate the ensemble on ``labels``' graph and return pooled features and targets.

        Returns
        -------
        X : float32 ndarray of shape (ensemble_size * n_tasks, 23)
        y : bool ndarray of shape (ensemble_size * n_tasks,)
            True where EM's predicted class differs from the simulated truth.
        """
        if self.info is None:
            raise RuntimeError("bind(info) must be called before rank")
        info = self.info
        truth, answers = simulate_instances(
            labels.tasks, labels.workers, info, self.options.ensemble_size, rng
        )
        est = self._estimator(rng)
        # Nobody reads the identifiability warning of a simulated instance; skip computing it.
        with identifiability_checks(False):
            if _pools_safely(est):
                return self._training_set_pooled(labels, truth, answers, est)
            return self._training_set_each(labels, truth, answers, rng)

    def _training_set_each(
        self, labels: LabelSet, truth: np.ndarray, answers: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """One EM fit per simulated instance (estimators whose instances cannot be pooled)."""
        xs, ys = [], []
        for e in range(self.options.ensemble_size):
            data = LabelSet(
                labels.tasks,
                labels.workers,
                answers[e],
                labels.n_tasks,
                labels.n_workers,
                labels.n_classes,
            )
            est = self._estimator(rng).fit(data)
            skill = estimated_skill(est, data)
            xs.append(task_features(data.tasks, data.workers, data.n_tasks, est.proba_, skill,
                                    np.float32))
            ys.append(np.argmax(est.proba_, axis=1) != truth[e])
        return np.vstack(xs), np.concatenate(ys)

    def _training_set_pooled(
        self, labels: LabelSet, truth: np.ndarray, answers: np.ndarray, est: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """All instances as one disjoint union (task and worker ids offset per instance) fitted
        by a single EM: the instances share no task, worker or estimated parameter, so this is
        the same computation as separate fits, with ``ensemble_size`` times fewer calls."""
        data = labels.stack(answers)
        est.fit(data)
        skill = estimated_skill(est, data)
        x = task_features(data.tasks, data.workers, data.n_tasks, est.proba_, skill, np.float32)
        y = est.labels_ != truth.ravel()  # labels_: argmax of proba_, ties by aggregation._ties
        return x, y

    def fit_forest(
        self, labels: LabelSet, rng: np.random.Generator
    ) -> BootstrapForest | None:
        """Train the forest on a fresh simulated ensemble; ``None`` if the target has one class."""
        x, y = self.training_set(labels, rng)
        seed = int(rng.integers(2**31 - 1))
        if y.all() or not y.any():
            return None
        forest = BootstrapForest(
            n_trees=self.options.n_trees,
            sample_fraction=self.options.sample_fraction,
            max_depth=self.options.max_depth,
            max_features=min(self.options.max_features, x.shape[1]),
            criterion=self.options.criterion,
            random_state=seed,
        )
        return forest.fit(x, y)

    def score(self, state: MarketState, rng: np.random.Generator) -> np.ndarray:
        """Predicted probability that the current estimate mislabels each task.

        Falls back to the posterior entropy (1 for unlabelled tasks) when the forest cannot be
        trained; :attr:`fallback_` tells which happened.
        """
        labels = state.labels
        feats = task_features(
            labels.tasks, labels.workers, labels.n_tasks, state.proba, state.skill
        )
        forest = self.fit_forest(labels, rng)
        self.forest_ = forest
        self.fallback_ = forest is None
        if forest is None:
            return feats[:, 0]
        col = int(np.flatnonzero(forest.classes_ == 1)[0])
        return forest.predict_proba(feats)[:, col]
