"""The known-workers bound (teaching only, NOT realisable): it is given every worker's true
confusion matrix but not the tasks' true classes, declines workers below an ability cut and
sends the others to the task of greatest uncertainty under the exact posterior.

It answers one question about the label–time frontier (issue #30, point 5): how far a
most-uncertain-first policy can get when worker estimation is perfect. A realisable policy must
estimate the workers from their answers; this one reads them, so what it cannot reach with a
given decline cut, no most-uncertain-first policy that estimates them can."""

from __future__ import annotations

import numpy as np

from marketsim.options import F, Options
from marketsim.policies.base import MarketInfo, MarketState, Policy
from marketsim.policies.live_posterior import fold_in
from marketsim.policies.simple import posterior_entropy
from marketsim.policies.worker_aware import declines, pick_task

#: Probabilities are kept this far from 0 before taking logarithms.
_TINY = 1e-300


class KnownWorkersOptions(Options):
    """``known-workers`` (teaching bound)."""

    ability_cut: float = F(0.9, "decline workers whose true accuracy is below this", ge=0,
                           le=1)


class KnownWorkersPolicy(Policy[KnownWorkersOptions]):
    """Bound for most-uncertain-first worker-aware policies: true worker parameters, no truth."""

    name = "known-workers"
    #: Receives ``MarketInfo.true_confusion`` (the workers' true matrices) but not ``truth``.
    needs_true_workers = True
    unit_cost = 9.0  # a choice per arrival over every task
    description = (
        "Known-workers (not realisable) knows each worker's true confusion matrix but not the "
        "tasks' true classes: it declines workers whose true accuracy is below `ability_cut` "
        "and gives the others the task of greatest uncertainty under the exact posterior (the "
        "class prior times the likelihood of every label received, under the true matrices). "
        "It bounds what a most-uncertain-first policy can do once its worker estimates are "
        "perfect."
    )

    Options = KnownWorkersOptions

    def bind(self, info: MarketInfo) -> None:
        """Keep each worker's true log confusion matrix and accuracy under the class prior."""
        if info.true_confusion is None:
            raise ValueError("the known-workers policy needs the workers' true confusion "
                             "matrices")
        confusion = np.asarray(info.true_confusion, dtype=np.float64)
        prior = np.asarray(info.class_prior, dtype=np.float64)
        self.log_confusion = np.log(np.maximum(confusion, _TINY))
        self.ability = np.einsum("jcc,c->j", confusion, prior)
        self.log_post = np.tile(np.log(np.maximum(prior, _TINY)), (info.n_tasks, 1))
        self.proba = np.tile(prior, (info.n_tasks, 1))
        self.entropy = posterior_entropy(self.proba)
        self._cursor = 0

    def posterior(self, state: MarketState) -> np.ndarray:
        """The exact class posterior of every task (n_tasks, K) given every task label received
        so far (the initial graph included) and the true worker matrices; only the tasks with
        new labels are recomputed."""
        assert state.received is not None, "known-workers needs the market's received labels"
        tasks, workers, labels = state.received
        end = int(tasks.shape[0])
        if end > self._cursor:
            new = slice(self._cursor, end)
            touched = fold_in(self.log_post, self.proba, self.log_confusion, tasks[new],
                              workers[new], labels[new])
            self.entropy[touched] = posterior_entropy(self.proba[touched])
            self._cursor = end
        return self.proba

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        """Decline a worker below the cut (while someone above it may work); else the task of
        largest posterior entropy that the worker does not hold and that has no label in
        flight, ties by the smallest largest class probability, then at random."""
        if declines(worker, self.ability, self.options.ability_cut, state):
            return None
        proba = self.posterior(state)
        allowed = np.ones(proba.shape[0], dtype=bool) if state.held is None else ~np.asarray(
            state.held, dtype=bool)
        if state.task_votes is not None and state.task_handed is not None:
            allowed &= np.asarray(state.task_handed) <= np.asarray(state.task_votes).sum(axis=1)
        return pick_task(self.entropy, -proba.max(axis=1), allowed, rng)
