"""Why a market is stuck: the one-line error a study stops with when every worker who may still
work arrived idle and was offered nothing, naming the true cause and what to change; or, when
those workers have labelled or abandoned every task (every task a preset still wants) and the
worker rules stopped all the others or abandonment used up the pairs, the market's recorded
early stop (it ran out of workers: a result, not an error)."""

from __future__ import annotations

import numpy as np

from marketsim.errors import MarketStuckError, PolicyError
from marketsim.market.assign import HeldTasks, WorkerAwareRequester
from marketsim.market.gold import GoldQuestions
from marketsim.market.ledger import Ledger
from marketsim.market.policy_guard import call_policy, policy_label
from marketsim.market.replay import ReplayRequester
from marketsim.market.requester import TaskRequester
from marketsim.market.setup import MarketSetup
from marketsim.market.workforce import Workforce
from marketsim.policies.base import policy_type


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


def stuck_error(setup: MarketSetup, ledger: Ledger, workforce: Workforce,
                gold: GoldQuestions | None, refused: list[int], requester: str,
                worker_aware: bool, budget: int, cause: str | None = None) -> MarketStuckError:
    """The error of a market whose idle workers who may work were all ``refused`` (``cause``:
    why, when the caller knows; else :func:`stuck_cause`)."""
    n = workforce.n_available()
    who = (f"all {n} workers who may still work" if workforce.ruled
           else f"all {setup.workers.count} workers")
    cause = cause or stuck_cause(setup.tasks.count, ledger, workforce, gold, refused,
                                 requester, worker_aware)
    return MarketStuckError(
        f"the market is stuck: {who} arrived idle and were offered no task, with "
        f"{budget - ledger.assigned} of {budget} labels of budget left ({cause})")


def _ran_out(workforce: Workforce, who: np.ndarray, abandoned: bool,
             what: str) -> tuple[tuple[str, ...], str]:
    """(causes, detail) of a crowd whose ``who``, the only workers who may still work, each
    hold ``what`` (labelled, or abandoned when ``abandoned``): ``money`` when the money left
    cannot pay some of the others, the worker rules that stopped the others, and
    ``abandonment`` when abandoned hand-outs are part of it (no cause: none explains it, the
    market is stuck: :func:`stuck_error`)."""
    unpaid = workforce.n_active() - workforce.n_available()  # active, but the money is short
    causes = (("money",) if unpaid else ()) + workforce.exhausted_causes() + (
        ("abandonment",) if abandoned else ())
    rules = "; ".join(part for part in (
        f"{unpaid} cannot be paid from the {max(workforce.ledger.money_left(), 0.0):,.2f} of "
        "budget.money left" if unpaid else "", workforce.exhausted_rules()) if part)
    left = ("the one worker who may still work has" if who.size == 1 else
            f"the {who.size} workers who may still work have each")
    return causes, (f"{left} {'labelled or abandoned' if abandoned else 'labelled'} {what}"
                    + (" (a worker is never handed a task they abandoned again: lower "
                       "workers.service.abandon or add workers)" if abandoned else "")
                    + (f"; the others are stopped: {rules}" if rules else ""))


def used_up(n_tasks: int, ledger: Ledger, workforce: Workforce,
            refused: list[int]) -> tuple[tuple[str, ...], str] | None:
    """(causes, detail) of a market that ran out of workers: the ``refused`` workers, the only
    ones who may still work, have each labelled or abandoned all ``n_tasks`` tasks, and the
    worker rules (blocking, capacity, sessions) stopped all the others or abandonment used up
    the pairs; None otherwise (then the market is stuck: :func:`stuck_error`)."""
    who = np.asarray(refused, dtype=np.int64)
    gone = ledger.abandoned_tasks[who]
    if not who.size or not bool((ledger.labels[who] + gone >= n_tasks).all()):
        return None
    causes, detail = _ran_out(workforce, who, bool(gone.any()), f"all {n_tasks} tasks")
    return (causes, detail) if causes else None


def preset_used_up(wanted: np.ndarray, held: HeldTasks, task_abandoned: np.ndarray,
                   workforce: Workforce, refused: list[int],
                   policy: str) -> tuple[tuple[str, ...], str] | None:
    """The same for a platform preset (``policy``): the ``refused`` workers each hold (``held``:
    labelled or abandoned) every task the preset still ``wanted``, so none of those tasks can
    reach its overlap; ``abandonment`` is a cause when one of them was abandoned
    (``task_abandoned``: abandonments per task). None when that is not so; no causes when no
    rule and no abandonment explain it (the preset's overlap needs more workers than the crowd
    has: the market is stuck, with the detail as the reason)."""
    who = np.asarray(refused, dtype=np.int64)
    tasks = np.flatnonzero(wanted)
    if not who.size or not tasks.size or not all(
            np.isin(tasks, held[w]).all() for w in who.tolist()):
        return None
    what = (f"every task still open under {policy} ({tasks.size} "
            f"task{'s' if tasks.size > 1 else ''} short of the overlap)")
    return _ran_out(workforce, who, bool(task_abandoned[tasks].any()), what)


def ran_out(setup: MarketSetup, ledger: Ledger, workforce: Workforce, gold: GoldQuestions | None,
            requester: TaskRequester | WorkerAwareRequester, policy: object, refused: list[int],
            budget: int) -> tuple[tuple[str, ...], str]:
    """(causes, detail) of the recorded stop of a market whose idle workers who may work were
    all ``refused`` and that ran out of workers (:func:`used_up`, or :func:`preset_used_up`
    for a policy with ``wanted_tasks``); else raises the :func:`stuck_error` saying why."""
    replay, aware = isinstance(requester, ReplayRequester), isinstance(requester,
                                                                        WorkerAwareRequester)
    if isinstance(requester, WorkerAwareRequester) and requester.left is not None:
        # a worker-aware policy on a replay: nobody it was asked about has an answer left
        replay = bool((requester.left[np.asarray(refused, dtype=np.int64)] <= 0).all())
    kind = ("replay" if replay else policy_label(policy) if aware
            else type(requester).__name__)
    wanted = getattr(policy, "wanted_tasks", None)
    if isinstance(requester, WorkerAwareRequester) and callable(wanted):
        mask = np.asarray(call_policy(policy, "wanted_tasks", wanted), dtype=bool)
        if mask.shape != (setup.tasks.count,):
            raise PolicyError(f"{kind}: wanted_tasks() returned shape {mask.shape}; expected "
                              f"({setup.tasks.count},), a bool per task")
        out = preset_used_up(mask, requester.held,
                             requester.abandoned, workforce, refused,
                             policy_type(policy).name)
    else:
        out = None if replay else used_up(setup.tasks.count, ledger, workforce, refused)
    if out is not None and out[0]:
        return out
    raise stuck_error(setup, ledger, workforce, gold, refused, kind, aware, budget,
                      None if out is None else out[1])


def money_detail(ledger: Ledger) -> str:
    """The detail of a money stop: the money paid, and the money still committed to labels
    being answered (spent + held + left = budget.money), so "spent" is never said of money
    that is only held."""
    out = ledger.in_flight
    held = (f" and {ledger.held:,.2f} committed to the {out} label{'s' if out > 1 else ''} "
            "still being answered" if out else "")
    return (f"the money budget is spent: {ledger.spent:,.2f} paid{held}, "
            f"{max(ledger.money_left(), 0.0):,.2f} of {float(ledger.money or 0.0):,.2f} left, "
            "less than "
            "any worker who may still work costs")
