"""The SimPy market of one (replicate, arm) unit.

Processes (small generators, state on the model; see SimPy's own examples):

- ``worker_arrivals``: workers of the pool arrive as a Poisson process, uniformly chosen;
- ``worker_visit``: an arriving idle worker asks the requester for a task, labels it during an
  exponential service time, and submits the answer;
- ``inference_service``: every ``batch`` received labels it refits the arm's estimator, lets the
  recorder sample the error, and asks the policy for a new ranking (the requester hands out
  tasks from the latest, possibly stale, ranking in the meantime). A worker-aware policy is
  asked per arriving worker instead (:mod:`marketsim.market.assign`).

Gold questions (:mod:`marketsim.market.gold`) and the worker rules — capacity, drop-out,
blocking, prices, a money budget (:mod:`marketsim.market.workforce`) — are off unless the
scenario asks for them.

The record of who labelled what is a networkx bipartite graph; inference runs on the
:class:`~marketsim.market.label_log.LabelLog` arrays kept in step with it. The parts live next
door: the world's worker model (:mod:`marketsim.market.answers`, one module per model) answers
tasks and measures each refit, task hand-out is in :mod:`marketsim.market.requester` (and
:mod:`marketsim.market.replay`), and the checks around every call into the policy in
:mod:`marketsim.market.policy_guard`. When the model's labels are scores (``gaussian-scores``)
every label carries a score and the service fits a score method.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np
import simpy

from marketsim.aggregation.base import BaseAggregator
from marketsim.errors import MarketStuckError
from marketsim.market.answers.replay import ReplayAnswers
from marketsim.market.assign import WorkerAwareRequester
from marketsim.market.gold import GoldQuestions
from marketsim.market.graph import add_label, add_labels, label_graph, write_graphml
from marketsim.market.inference import fit_counted, takes
from marketsim.market.label_log import LabelLog
from marketsim.market.ledger import Ledger
from marketsim.market.policy_guard import (
    call_policy,
    checked_ranking,
    frozen_arrays,
    policy_label,
)
from marketsim.market.replay import ReplayRequester
from marketsim.market.requester import Requester, TaskRequester
from marketsim.market.streams import Streams
from marketsim.market.stuck import stuck_error
from marketsim.market.workforce import Workforce, worker_prices
from marketsim.market.world import World
from marketsim.policies.base import GOLD, AssignmentPolicy, MarketInfo, is_worker_aware
from marketsim.record.curves import CurvePoint
from marketsim.scenario.replay import ReplayData
from marketsim.scenario.specs import Scenario


def market_info(scenario: Scenario, world: World, policy: AssignmentPolicy,
                make_estimator: Callable[[], BaseAggregator]) -> MarketInfo:
    """What the policy may know before the market starts, as read-only copies (the world is
    shared by every arm); the truth only for policies that declare ``needs_truth``."""
    ab, oracle = scenario.workers.ability, bool(getattr(policy, "needs_truth", False))
    return frozen_arrays(MarketInfo(
        n_tasks=scenario.tasks.count, n_workers=scenario.workers.count,
        n_classes=scenario.tasks.classes, class_prior=np.asarray(scenario.tasks.prior),
        ability_alpha=ab.alpha, ability_beta=ab.beta, ability_low=ab.low,
        inference=make_estimator, truth=world.truth if oracle else None,
        true_confusion=world.confusion if oracle else None,
        gold_count=0 if scenario.gold is None else scenario.gold.count,
    ))


class Market:
    """One simulated market: a scenario's world, one arm's policy and inference service."""

    def __init__(
        self,
        scenario: Scenario,
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
        self.scenario = scenario
        self.world = world
        self.policy = policy
        self.make_estimator = make_estimator
        self.streams = streams
        self.warm_start = warm_start
        self.on_refresh = on_refresh
        n, m, k = scenario.tasks.count, scenario.workers.count, scenario.tasks.classes
        self.n_classes = k
        self.batch = scenario.budget.batch
        self.env = simpy.Environment()
        self.log = LabelLog(n, m, k, scenario.budget.edges, scores=world.model.facts.scores)
        self.answers = (world.model.answers(world, k, streams.answers) if replay is None
                        else ReplayAnswers(replay))
        tier, price = worker_prices(scenario, world.ability, streams.tiers)
        #: The market's books: every debit (initial graph, labels, gold) goes through it.
        self.ledger = Ledger(price, scenario.budget.edges, scenario.budget.money,
                             scenario.workers.capacity)
        self.workforce = Workforce(scenario, self.ledger, tier, streams.workforce)
        self.gold = None if scenario.gold is None else GoldQuestions.draw(
            scenario.gold, world, np.asarray(scenario.tasks.prior), k, m, streams.gold_world,
            streams.gold)
        self.worker_aware = is_worker_aware(policy)
        self.requester: TaskRequester | WorkerAwareRequester
        if self.worker_aware:  # never with [replay]: refused when the scenario is parsed
            self.requester = WorkerAwareRequester(policy, n, m, streams.policy,
                                                  self.workforce.stats, self._gold_left)
        else:
            self.requester = Requester(n, m) if replay is None else ReplayRequester(replay)
        self.graph: nx.Graph | None = label_graph(n, m) if keep_graph else None
        self.busy = np.zeros(m, dtype=bool)
        self.curve: list[CurvePoint] = []
        self.not_converged = 0
        #: Refits whose spectral initialiser fell back to majority vote (Opt-D&S on sparse
        #: early graphs: expected in a market, so counted like non-convergence).
        self.init_fallbacks = 0
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
        #: Task features are passed to estimators whose ``fit`` takes them (``ds-features``).
        self._fit_kwargs: dict[str, Any] = {}
        if world.features is not None and takes(make_estimator(), "features"):
            self._fit_kwargs["features"] = world.features
        #: Gold answers enter the fit (classes clamped) when asked and the estimator can.
        self._gold_fit = (self.gold is not None and self.gold.spec.in_inference
                          and takes(make_estimator(), "known"))
        info = market_info(scenario, world, policy, make_estimator)
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

    def _gold_left(self, worker: int) -> bool:
        return self.gold is not None and self.gold.has_left(worker)

    def _record(
        self,
        tasks: np.ndarray,
        workers: np.ndarray,
        labels: np.ndarray,
        scores: np.ndarray | None = None,
    ) -> None:
        self.log.extend(tasks, workers, labels, scores)
        if self.graph is not None:
            add_labels(self.graph, tasks, workers, labels, scores, float(self.env.now))
        self._due()

    def _due(self) -> None:
        """Trigger the inference service when the next refresh's labels are in."""
        if self.bought >= self._next_refresh and not self._refresh_due.triggered:
            self._refresh_due.succeed()

    def receive(self, task: int, worker: int) -> None:
        """A worker submits their answer for ``task``, drawn by the world's answer model.
        Scalar code: this runs once per label."""
        label, score = self.answers.answer(task, worker)
        self.log.append(task, worker, label, score)
        if self.graph is not None:
            add_label(self.graph, task, worker, label, score, float(self.env.now))
        self.workforce.received(worker, float(self.env.now))
        self._due()

    def receive_gold(self, question: int, worker: int) -> None:
        """A worker submits their answer to gold ``question``: paid, scored, never a result."""
        assert self.gold is not None
        self.workforce.received(worker, float(self.env.now), gold=True,
                                correct=self.gold.answer(question, worker))
        self._due()

    # --- inference ---------------------------------------------------------------------------
    def _fit(self, labels: Any) -> BaseAggregator:
        """A fresh estimator fitted on ``labels`` (with the task features when it takes them,
        the gold answers when they enter inference); convergence warnings are counted."""
        est = self.make_estimator()
        if hasattr(est, "random_state"):
            est.set_params(random_state=self.streams.inference)
        init, kwargs = self.proba, dict(self._fit_kwargs)
        if self._gold_fit and self.gold is not None and self.gold.n_answered:
            labels, kwargs["known"] = self.gold.with_tasks(labels)
            if init is not None:  # gold rows start at their known class
                gold_classes = kwargs["known"][self.scenario.tasks.count:]
                init = np.vstack([init, np.eye(self.n_classes)[gold_classes]])
        warm = self.warm_start and init is not None and hasattr(est, "max_iter")
        if warm:
            kwargs["init_proba"] = init
        not_converged, fallbacks = fit_counted(lambda: est.fit(labels, **kwargs))
        self.not_converged += not_converged
        self.init_fallbacks += fallbacks
        if "known" in kwargs:  # results are the real tasks only
            n = self.scenario.tasks.count
            est.proba_, est.labels_ = est.proba_[:n], est.labels_[:n]
        return est

    def refresh(self) -> None:
        """Refit the estimator on all labels so far, sample the recorder, re-rank tasks."""
        started = time.perf_counter()
        # A read-only copy: neither the estimator nor the policy can change the market's labels.
        labels = frozen_arrays(self.log.view())
        mat = self.log.incidence()
        if mat is not None:
            labels.preset_incidence(mat)
        est = self._fit(labels)
        self.estimator = est
        self.inference_seconds += time.perf_counter() - started
        point, state = self.world.model.measure(self.scenario, self.world, est, labels,
                                                float(self.env.now))
        point = replace(point, edges=self.bought, money=self.workforce.spent,
                        gold_money=self.workforce.gold_spent,
                        gold_labels=float(self.bought - self.log.size),
                        blocked_workers=float(self.workforce.blocked.sum()))
        self.proba = getattr(est, "proba_", None)  # score estimators have no class posterior
        self.ledger.check_new_point(self.curve[-1].edges if self.curve else None, point.edges)
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
        return checked_ranking(self.policy, raw, self.scenario.tasks.count)

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
                self.ledger.check_closed_books(self.curve[-1].edges, self.curve[-1].money)
                self.finished.succeed()
                return
            self._next_refresh = min(self.bought + self.batch, self.budget)
            if self.bought >= self._next_refresh:
                self._refresh_due.succeed()

    def _deliver(self, worker: int, task: int, question: int | None) -> None:
        if question is None:
            self.receive(task, worker)
        else:
            self.receive_gold(question, worker)

    def worker_visit(self, worker: int, task: int, question: int | None, service: float) -> Any:
        """A worker labels ``task`` (or answers gold ``question``) for ``service`` time units,
        then submits."""
        self.busy[worker] = True
        yield self.env.timeout(service)
        self.busy[worker] = False
        self._deliver(worker, task, question)

    def _choose(self, worker: int) -> tuple[int | None, int | None]:
        """(task, gold question) for an arriving idle worker: a gold question by
        ``gold.rate`` or when the policy asks for one, else the requester's task (``None``:
        nothing for them)."""
        if self.gold is not None and self.gold.wants(worker):
            return GOLD, self.gold.pick(worker)
        task = self.requester.assign(worker)
        if task == GOLD and self.gold is not None:
            return GOLD, self.gold.pick(worker)
        return task, None

    def _unable(self) -> None:
        """An arriving worker may not work: end the run if the money is spent, stop if no
        worker can ever work again."""
        wf = self.workforce
        if wf.out_of_money():
            self.ledger.stop_buying()  # the money budget ends the run (the curve early)
            self._next_refresh = min(self._next_refresh, self.budget)
            self._due()
            return
        reason = wf.exhausted()
        if reason is not None:
            raise MarketStuckError(f"the market is stuck: {reason}; "
                                   f"{self.budget - self.assigned} of {self.budget} labels "
                                   "of budget left")

    def worker_arrivals(self) -> Any:
        """Poisson arrivals of uniformly chosen workers (or chosen by ``arrivals.weights``);
        stops when the budget is handed out."""
        rng = self.streams.arrivals
        m = self.scenario.workers.count
        rate = self.scenario.workers.arrivals.rate
        service_mean = self.scenario.workers.service.mean
        weights = self.scenario.workers.arrivals.weights
        cumulative = None if weights is None else np.cumsum(np.asarray(weights) / sum(weights))
        while self.assigned < self.budget:
            if cumulative is None:
                gap, worker = rng.exponential(1.0 / rate), int(rng.integers(m))
            else:  # who works a lot: arrivals weighted (a weight-0 worker never arrives)
                gap = rng.exponential(1.0 / rate)
                worker = min(int(np.searchsorted(cumulative, rng.random(), side="right")), m - 1)
            service = rng.exponential(service_mean) if service_mean > 0 else 0.0
            yield self.env.timeout(gap)
            if self.busy[worker]:
                continue
            if not self.workforce.may_work(worker):
                self._unable()
                continue
            task, question = self._choose(worker)
            if task is None:
                self._refused.add(worker)
                if len(self._refused) >= self.workforce.n_available():
                    self._stuck()
                continue
            self._refused.clear()
            self.workforce.hand_out(worker, float(self.env.now))
            if service > 0:
                self.env.process(self.worker_visit(worker, task, question, service))
            else:
                self._deliver(worker, task, question)

    def _stuck(self) -> None:
        """Every worker who may work, idle, was offered nothing since the last hand-out: stop,
        don't spin, and say why (:func:`~marketsim.market.stuck.stuck_error`)."""
        kind = ("replay" if isinstance(self.requester, ReplayRequester)
                else policy_label(self.policy) if self.worker_aware
                else type(self.requester).__name__)
        raise stuck_error(self.scenario, self.ledger, self.workforce, self.gold,
                          sorted(self._refused), kind, self.worker_aware, self.budget)

    def write_graphml(self, path: Any) -> None:
        """Export who labelled what (task nodes ``t<i>``, worker nodes ``w<j>``) as GraphML."""
        write_graphml(self.graph, path)

    def run(self) -> list[CurvePoint]:
        """Seed the initial graph, start the processes, and run until the budget is spent."""
        w = self.world
        keep = self.workforce.initial(w.initial_workers)
        tasks, workers, labels, scores = (w.initial_tasks, w.initial_workers, w.initial_labels,
                                          w.initial_scores)
        if not keep.all():  # capacity or money cut a random initial graph
            tasks, workers, labels = tasks[keep], workers[keep], labels[keep]
            scores = None if scores is None else scores[keep]
        for i, j in zip(tasks.tolist(), workers.tolist(), strict=True):
            self.requester.mark(i, j)
        self._next_refresh = self.assigned
        self._record(tasks, workers, labels, scores)
        if self.assigned == 0 and not self._refresh_due.triggered:  # empty start
            self._refresh_due.succeed()
        self.env.process(self.inference_service())
        self.env.process(self.worker_arrivals())
        self.env.run(until=self.finished)
        return self.curve
