"""The worker-aware oracle (teaching only, NOT realisable): it knows the true classes and the
workers' true confusion matrices, declines workers below an ability cut and sends the others
to the tasks the current estimate believes least."""

from __future__ import annotations

import numpy as np

from marketsim.options import F, Options
from marketsim.policies.base import MarketInfo, MarketState, Policy
from marketsim.policies.simple import posterior_entropy
from marketsim.policies.worker_aware import declines, fresh_tasks, pick_task


class OracleWorkersOptions(Options):
    """``oracle-workers`` (teaching bound)."""

    ability_cut: float = F(0.8, "decline workers whose true accuracy is below this", ge=0,
                           le=1)


class OracleWorkersPolicy(Policy[OracleWorkersOptions]):
    """Bound for worker-aware policies: true abilities decide who works, the truth what on."""

    name = "oracle-workers"
    needs_truth = True
    unit_cost = 9.0  # a choice per arrival over every task
    description = (
        "Oracle-workers (not realisable) knows the true classes and each worker's true accuracy: "
        "it declines workers below `ability_cut` and gives the others the task whose true class "
        "the current estimate believes least. It is the bound worker-aware policies are "
        "measured against."
    )

    Options = OracleWorkersOptions

    def bind(self, info: MarketInfo) -> None:
        """Keep the truth and each worker's true accuracy under the class prior."""
        if info.truth is None or info.true_confusion is None:
            raise ValueError("the oracle-workers policy needs the true labels and confusion "
                             "matrices")
        self.truth = np.asarray(info.truth)
        self.ability = np.einsum("jcc,c->j", np.asarray(info.true_confusion, dtype=np.float64),
                                 np.asarray(info.class_prior, dtype=np.float64))

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        """Decline a worker below the cut (while someone above it may work); else the task with
        the lowest posterior of its true class, ties by entropy, then at random."""
        if declines(worker, self.ability, self.options.ability_cut, state):
            return None
        truth_proba = state.proba[np.arange(self.truth.shape[0]), self.truth]
        return pick_task(-truth_proba, posterior_entropy(state.proba), fresh_tasks(state), rng)
