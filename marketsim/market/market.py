"""The SimPy market of one (replicate, arm) unit.

Processes (small generators, state on the model; see SimPy's own examples):

- ``worker_arrivals``: workers of the pool arrive as a Poisson process; an idle one asks the
  requester for a task, labels it during its service time and submits the answer, or abandons
  it (:mod:`marketsim.market.service`: a process per hand-out);
- ``inference_service``: every ``batch`` received labels it refits the arm's estimator, lets the
  recorder sample the error, and asks the policy for a new ranking (the requester hands out
  tasks from the latest, possibly stale, ranking in the meantime). A worker-aware policy is
  asked per arriving worker instead (:mod:`marketsim.market.assign`).

Gold questions (:mod:`marketsim.market.gold`) and the worker rules — capacity, drop-out,
blocking, prices, a money budget (:mod:`marketsim.market.workforce`) — are off unless the
scenario asks for them.

Inference runs on the :class:`~marketsim.market.label_log.LabelLog` arrays (the networkx graph
of who labelled what is optional). The worker models (:mod:`marketsim.workers`)
answer tasks and measure each refit; hand-out is :mod:`marketsim.market.requester` (and
``replay``, ``assign``); every call into the policy goes through
:mod:`marketsim.market.policy_guard`.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np
import simpy

from marketsim.aggregation.base import BaseAggregator
from marketsim.data.labels import LabelSet
from marketsim.market.arrivals import Arrivals
from marketsim.market.assign import WorkerAwareRequester
from marketsim.market.audit import check_closed_books, check_new_point
from marketsim.market.gold import GoldQuestions
from marketsim.market.graph import add_label, add_labels, label_graph
from marketsim.market.inference import Refit
from marketsim.market.label_log import LabelLog
from marketsim.market.ledger import Ledger
from marketsim.market.machine_desk import MarketMachines
from marketsim.market.policy_guard import (
    call_policy,
    checked_ranking,
    frozen_arrays,
    market_info,
)
from marketsim.market.replay import ReplayAnswers, ReplayRequester, answered_tasks
from marketsim.market.requester import Requester, TaskRequester, mark_all
from marketsim.market.service import Visits
from marketsim.market.setup import MarketSetup
from marketsim.market.streams import Streams
from marketsim.market.stuck import money_detail, ran_out
from marketsim.market.workforce import Workforce, worker_prices
from marketsim.policies.base import DONE, GOLD, AssignmentPolicy, is_worker_aware, policy_type
from marketsim.record.curves import CurvePoint
from marketsim.record.units import Stop
from marketsim.scenario.replay import ReplayData
from marketsim.workers.base import World
from marketsim.workers.dynamics import with_dynamics


class Market:
    """One simulated market: a replicate's world, one arm's setup, policy and inference
    service."""

    def __init__(
        self,
        setup: MarketSetup,
        world: World,
        policy: AssignmentPolicy,
        make_estimator: Callable[[], BaseAggregator],
        streams: Streams,
        *,
        warm_start: bool = False,
        keep_graph: bool = True,
        on_refresh: Callable[[CurvePoint], None] | None = None,
        replay: ReplayData | None = None,
    ) -> None:
        self.setup = setup
        self.world = world
        self.policy = policy
        self.make_estimator = make_estimator
        self.streams = streams
        self.warm_start = warm_start
        self.on_refresh = on_refresh
        n, m, k = setup.tasks.count, setup.workers.count, setup.tasks.classes
        self.n_classes = k
        self.batch = setup.budget.batch
        self.env = simpy.Environment()
        self.log = LabelLog(n, m, k, setup.max_labels, scores=world.model.scores)
        env = self.env  # the clock below holds the environment, not the market (no cycle)
        self.answers = (ReplayAnswers(replay) if replay is not None else with_dynamics(
            world.model.answers(world, k, streams.answers), setup.workers.dynamics, m,
            streams.dynamics, lambda: float(env.now)))
        tier, price = worker_prices(setup.workers, world.ability, streams.tiers)
        #: The market's books: every debit (initial graph, labels, gold) goes through it.
        self.ledger = Ledger(price, setup.budget.edges, setup.budget.money,
                             setup.workers.capacity, setup.budget.fee)
        self.workforce = Workforce(setup, self.ledger, tier, streams.workforce)
        self.gold = None if setup.gold is None else GoldQuestions.draw(
            setup.crowd, setup.gold, world, m, streams.gold_world, streams.gold)
        self.worker_aware = is_worker_aware(policy)
        self.requester: TaskRequester | WorkerAwareRequester
        if self.worker_aware:  # with [replay]: only the tasks each worker answered
            gold = self.gold
            self.requester = WorkerAwareRequester(
                policy, n, m, k, streams.policy, self.workforce.stats,
                (lambda _worker: False) if gold is None else gold.has_left, self.log.arrays,
                None if replay is None else answered_tasks(replay))
        else:
            even = policy_type(policy).even_rounds
            self.requester = (ReplayRequester(replay, even) if replay is not None else Requester(
                n, m, setup.max_labels, self.log, even_rounds=even))
        self.graph: nx.Graph | None = label_graph(n, m) if keep_graph else None
        self.visits = Visits(self.env, setup.workers.service, m, streams.speeds,
                             streams.abandon, weakref.proxy(self))
        self._arriving = False  # whether the arrivals process runs (abandonment may restart it)
        self.curve: list[CurvePoint] = []
        #: What stopped the run early (:meth:`_stop_early`), empty while it has not.
        self.stop_causes: tuple[str, ...] = ()
        #: Idle workers who were offered nothing since the last task was handed out.
        self._refused: set[int] = set()
        #: Wall time spent in the inference service and in the policy (for benchmarks).
        self.inference_seconds = 0.0
        self.policy_seconds = 0.0
        self.estimator: BaseAggregator | None = None
        self.proba: np.ndarray | None = None
        self.finished = self.env.event()
        self._next_refresh = 0
        self._refresh_due = self.env.event()
        #: The inference service's refit (task features, gold answers, warm start, counts).
        self.refit = Refit(make_estimator, streams.inference, n_tasks=n, n_classes=k,
                           features=world.features, gold=self.gold, warm_start=warm_start)
        #: The machine annotators a policy may ask (``None``: the scenario has none).
        self.machines = None if not setup.machines else MarketMachines(
            self.env, setup.machines, world, k, m, streams.machines, self.ledger,
            self._machine_answers)
        info = market_info(setup, world, policy, make_estimator, self.machines)
        call_policy(policy, "bind", lambda: policy.bind(info))

    # --- label bookkeeping -------------------------------------------------------------------
    @property
    def bought(self) -> int:
        """Labels received so far, gold answers included (what the budget counts)."""
        return self.ledger.bought

    @property
    def budget(self) -> int:
        """Labels this run buys in all: ``budget.edges``, or fewer once the money ran out (the
        ledger's target, its one source)."""
        return self.ledger.target

    @property
    def assigned(self) -> int:
        """Labels handed out so far (in flight included), gold included."""
        return self.ledger.assigned

    def _record(
        self,
        tasks: np.ndarray,
        workers: np.ndarray,
        labels: np.ndarray,
        scores: np.ndarray | None = None,
    ) -> None:
        self.log.extend(tasks, workers, labels, scores)
        if isinstance(self.requester, WorkerAwareRequester):
            self.requester.voted(tasks, labels)
        if self.graph is not None:
            add_labels(self.graph, tasks, workers, labels, scores, float(self.env.now))
        self._due()

    def _due(self) -> None:
        """Trigger the inference service when the next refresh's labels are in."""
        if self.ledger.bought >= self._next_refresh and not self._refresh_due.triggered:
            self._refresh_due.succeed()

    def receive(self, task: int, worker: int) -> None:
        """A worker submits their answer for ``task``, drawn by the world's answer model.
        Scalar code: this runs once per label."""
        label, score = self.answers.answer(task, worker)
        self.log.append(task, worker, label, score)
        if self.worker_aware:
            assert isinstance(self.requester, WorkerAwareRequester)
            self.requester.voted(task, label)
            self._refused.clear()  # a new answer may reopen work for the declined
        now = float(self.env.now)
        if self.graph is not None:
            add_label(self.graph, task, worker, label, score, now)
        self.workforce.received(worker, now)
        self._due()

    def _machine_answers(self) -> None:
        """Machine answers arrived: they count towards the next refresh, and may reopen work
        for the workers a policy declined while it waited for them."""
        self._refused.clear()
        self._due()

    def receive_gold(self, question: int, worker: int) -> None:
        """A worker submits their answer to gold ``question``: paid, scored, never a result."""
        assert self.gold is not None
        self.workforce.received(worker, float(self.env.now), gold=True,
                                correct=self.gold.answer(question, worker))
        self._due()

    # --- inference ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Refit the estimator on all labels so far, sample the recorder, re-rank tasks."""
        started = time.perf_counter()
        self.estimator = None  # the last fit's arrays go before the merge and the fit
        # read-only views: no one can change the market's labels
        labels: LabelSet = self.log.labels()
        if self.machines is not None:  # the machines' answers after the humans' labels
            labels = self.machines.labels(labels)
        if isinstance(self.requester, Requester):  # its set of recent pairs goes before the fit
            self.requester.done_pairs.settle()
        est = self.refit(labels, self.proba)
        self.estimator = est
        self.inference_seconds += time.perf_counter() - started
        point, state = self.world.model.measure(self.setup.crowd, self.world, est, labels,
                                                float(self.env.now))
        point = replace(point, edges=self.bought, money=self.workforce.spent,
                        gold_money=self.workforce.gold_spent,
                        gold_labels=float(self.bought - self.log.size - self.ledger.call_labels),
                        blocked_workers=float(self.workforce.blocked.sum()))
        self.proba = getattr(est, "proba_", None)  # score estimators have no class posterior
        check_new_point(self.ledger, self.curve[-1].edges if self.curve else None, point.edges)
        self.curve.append(point)
        if self.on_refresh is not None:
            self.on_refresh(point)
        if self.bought < self.budget:
            ranked = time.perf_counter()
            if isinstance(self.requester, WorkerAwareRequester):
                self._refused.clear()
                self.requester.refreshed(state)
            else:
                self.requester.new_round(self._rank(frozen_arrays(state)))
            self.policy_seconds += time.perf_counter() - ranked

    def _rank(self, state: Any) -> np.ndarray:
        """The policy's ranking, checked and completed to a permutation of the tasks."""
        raw = call_policy(self.policy, "rank", lambda: self.policy.rank(state, self.streams.policy))
        self._refused.clear()
        return checked_ranking(self.policy, raw, self.setup.tasks.count)

    # --- processes ---------------------------------------------------------------------------
    def inference_service(self) -> Any:
        """Refresh every ``batch`` received labels, and once more when the budget is spent."""
        while True:
            yield self._refresh_due
            self._refresh_due = self.env.event()
            if not self.curve or self.curve[-1].edges != self.bought:
                self.refresh()  # else no label came in since the last point (the money ended
                # the run right at a refresh): the last point already is the final one
            if self.bought >= self.budget:
                check_closed_books(self.ledger, self.curve[-1].edges, self.curve[-1].money)
                if self.machines is not None:
                    self.machines.calls.check_books("at the end of the run")
                self.finished.succeed()
                return
            self._next_refresh = min(self.bought + self.batch, self.budget)
            if self.bought >= self._next_refresh:
                self._refresh_due.succeed()

    def abandoned(self, worker: int, task: int, question: int | None) -> None:
        """``worker`` left ``task`` (or gold ``question``) unanswered: reassign, resume."""
        self.ledger.abandon(worker, float(self.env.now), gold=question is not None)
        if question is None:
            self.requester.release(task, worker)
        self._refused.clear()
        self._next_refresh = min(self._next_refresh, self.budget)
        self._due()  # after a stop the run buys one label fewer: it may be complete now
        if not self._arriving and self.ledger.stopped is None:
            self.env.process(self.worker_arrivals())

    def _choose(self, worker: int) -> tuple[int | None, int | None]:
        """(task, gold question) for an arriving idle worker: a gold question by
        ``gold.rate`` or when the policy asks for one, else the requester's task (``None``:
        nothing for them)."""
        if self.gold is not None and self.gold.wants(worker):
            return GOLD, self.gold.pick(worker)
        task = self.requester.assign(worker)
        if task == DONE and self.ledger.in_flight and self.visits.abandon_p:
            return None, None  # a label still out may be abandoned: the task wants it again
        if task == DONE:
            self._close_all()
            return None, None
        if task == GOLD and self.gold is not None:
            return GOLD, self.gold.pick(worker)
        return task, None

    def _close_all(self) -> None:
        """The policy closed every task: the run ends under budget, as a platform's preset
        does (the labels in flight, which nobody may abandon, are still received and paid)."""
        self._stop_early(("closed",), "the policy closed every task (its stopping rule was "
                         "met) before budget.edges")

    def _unable(self) -> None:
        """An arriving worker may not work: end the run if the money is spent, stop if no
        worker can ever work again."""
        wf, led = self.workforce, self.ledger
        if wf.out_of_money():  # the money budget ends the run (the curve early)
            if led.in_flight and self.visits.abandon_p:
                return  # money held for labels still out: an abandonment may release it
            self._stop_early(("money",), money_detail(led))
            return
        reason = wf.exhausted()
        if reason is not None:  # no worker left: the arm's result is where its curve stops
            self._stop_early(wf.exhausted_causes(), reason)

    def _stop_early(self, causes: tuple[str, ...], detail: str) -> None:
        """Stop buying: the labels handed out are received, refitted once more, and the run
        ends there with ``causes`` recorded (:attr:`stop`)."""
        self.stop_causes = causes
        self.ledger.stop_buying(detail)
        self._next_refresh = min(self._next_refresh, self.budget)
        self._due()

    @property
    def stop(self) -> Stop | None:
        """Why the run stopped before ``budget.edges`` (None when it bought them all)."""
        stopped = self.ledger.stopped
        return None if stopped is None else Stop(self.bought, self.stop_causes, stopped)

    def worker_arrivals(self) -> Any:
        """Poisson arrivals of uniformly chosen workers (or chosen by ``arrivals.weights``);
        stops when the budget is handed out (an abandoned label restarts it)."""
        rng = self.streams.arrivals
        draw = Arrivals(self.setup.workers.arrivals, self.setup.workers.count,
                        self.world.initial_workers).draw
        env, visits, ledger, workforce = self.env, self.visits, self.ledger, self.workforce
        timed, busy, self._arriving = visits.mean > 0, visits.busy, True
        while ledger.assigned < ledger.target:  # once per label: no property on the way
            gap, worker = draw(rng)
            service = visits.time(rng, worker) if timed else 0.0
            yield env.timeout(gap)
            if busy[worker]:
                continue
            if workforce.ruled and not workforce.may_work(worker):  # no call without rules
                self._unable()
                continue
            task, question = self._choose(worker)
            if task is None:
                if "closed" in self.stop_causes:
                    break
                self._refused.add(worker)
                if len(self._refused) >= self.workforce.n_available() \
                        and not self.ledger.in_flight:  # answers due may reopen work
                    self._stuck()
                continue
            if self._refused:
                self._refused.clear()
            workforce.hand_out(worker, float(env.now))
            visits.start(worker, task, question, service)
        self._arriving = False

    def _stuck(self) -> None:
        """No idle worker who may work was offered a task since the last hand-out: end an even
        round (:meth:`Requester.end_round`), else stop early or raise why (``stuck.ran_out``)."""
        if isinstance(self.requester, Requester) and self.requester.end_round():
            self._refused.clear()
            return
        self._stop_early(*ran_out(self.setup, self.ledger, self.workforce, self.gold,
                                  self.requester, self.policy, sorted(self._refused),
                                  self.budget))

    def run(self) -> list[CurvePoint]:
        """Seed the initial graph, start the processes, and run until the budget is spent."""
        w = self.world
        keep = self.workforce.initial(w.initial_workers)
        tasks, workers, labels, scores = (w.initial_tasks, w.initial_workers, w.initial_labels,
                                          w.initial_scores)
        if not keep.all():  # capacity or money cut a random initial graph
            tasks, workers, labels = tasks[keep], workers[keep], labels[keep]
            scores = None if scores is None else scores[keep]
        mark_all(self.requester, tasks, workers)
        self._next_refresh = self.assigned
        self._record(tasks, workers, labels, scores)
        if self.assigned == 0 and not self._refresh_due.triggered:  # empty start
            self._refresh_due.succeed()
        self.env.process(self.inference_service())
        self.env.process(self.worker_arrivals())
        self.env.run(until=self.finished)
        return self.curve
