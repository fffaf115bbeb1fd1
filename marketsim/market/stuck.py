"""Why a market is stuck: the one-line error a study stops with when every worker who may still
work arrived idle and was offered nothing, naming the true cause and what to change; or, when
those workers have labelled every task and the worker rules stopped all the others, the
market's recorded early stop (it ran out of workers: a result, not an error)."""

from __future__ import annotations

import numpy as np

from marketsim.errors import MarketStuckError
from marketsim.market.gold import GoldQuestions
from marketsim.market.ledger import Ledger
from marketsim.market.workforce import Workforce
from marketsim.scenario.specs import Scenario


def stuck_cause(n_tasks: int, ledger: Ledger, workforce: Workforce, gold: GoldQuestions | None,
                refused: list[int], requester: str, worker_aware: bool) -> str:
    """Why the ``refused`` workers got nothing: they labelled every task already (a worker
    labels a task at most once), the replayed file has no answer left from them, or the policy
    (``requester``: its label, or the requester's kind) declined them."""
    who = np.asarray(refused, dtype=np.int64)
    left = ledger.abandoned_tasks[who]
    if who.size and bool((ledger.labels[who] + left >= n_tasks).all()):
        rules = workforce.exhausted_rules()
        gold_left = gold is not None and any(gold.has_left(int(w)) for w in who)
        if left.any():
            return (f"each of them has already labelled or abandoned all {n_tasks} tasks, and "
                    "a worker is never handed a task again; lower budget.edges, add workers "
                    "or lower workers.service.abandon")
        return (f"each of them has already labelled all {n_tasks} tasks, and a worker "
                "labels a task at most once"
                + ("; gold questions left for them buy no task labels" if gold_left else "")
                + (f"; the others are stopped: {rules}" if rules else "")
                + "; lower budget.edges or add workers")
    if requester == "replay":
        return "the replayed file has no answer left from any of them"
    if worker_aware:
        return f"{requester} declined them all (assign returned None)"
    return f"{requester} has no task any of them may take"


def stuck_error(scenario: Scenario, ledger: Ledger, workforce: Workforce,
                gold: GoldQuestions | None, refused: list[int], requester: str,
                worker_aware: bool, budget: int) -> MarketStuckError:
    """The error of a market whose idle workers who may work were all ``refused``."""
    n = workforce.n_available()
    who = (f"all {n} workers who may still work" if workforce.ruled
           else f"all {scenario.workers.count} workers")
    cause = stuck_cause(scenario.tasks.count, ledger, workforce, gold, refused, requester,
                        worker_aware)
    return MarketStuckError(
        f"the market is stuck: {who} arrived idle and were offered no task, with "
        f"{budget - ledger.assigned} of {budget} labels of budget left ({cause})")


def used_up(n_tasks: int, ledger: Ledger, workforce: Workforce,
            refused: list[int]) -> tuple[tuple[str, ...], str] | None:
    """(causes, detail) of a market that ran out of workers: the ``refused`` workers, the only
    ones who may still work, have each labelled all ``n_tasks`` tasks, and the worker rules
    (blocking, capacity, sessions) stopped all the others; None otherwise (then the market is
    stuck: :func:`stuck_error`)."""
    who = np.asarray(refused, dtype=np.int64)
    causes = workforce.exhausted_causes()
    if not who.size or not causes or not bool((ledger.labels[who] >= n_tasks).all()):
        return None
    left = ("the one worker who may still work has" if who.size == 1 else
            f"the {who.size} workers who may still work have each")
    return causes, (f"{left} labelled all {n_tasks} tasks; the others are stopped: "
                    f"{workforce.exhausted_rules()}")
