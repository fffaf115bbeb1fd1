"""The SimPy market of one (replicate, arm) unit.

Processes (small generators, state on the model; see SimPy's own examples):

- ``worker_arrivals``: workers of the pool arrive as a Poisson process, uniformly chosen;
- ``worker_visit``: an arriving idle worker asks the requester for a task, labels it during an
  exponential service time, and submits the answer;
- ``inference_service``: every ``batch`` received labels it refits the arm's estimator, lets the
  recorder sample the error, and asks the policy for a new ranking (the requester hands out
  tasks from the latest, possibly stale, ranking in the meantime).

The record of who labelled what is a networkx bipartite graph; inference runs on the
:class:`~marketsim.market.label_log.LabelLog` arrays kept in step with it. The parts live next
door: answers per worker model in :mod:`marketsim.market.answers`, task hand-out in
:mod:`marketsim.market.requester` (and :mod:`marketsim.market.replay`), the measurements in
:mod:`marketsim.market.recorder`, and the checks around every call into the policy in
:mod:`marketsim.market.policy_guard`. In a continuous-score market (``gaussian-scores``) every
label carries a score and the service fits a score method.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import simpy
from sklearn.exceptions import ConvergenceWarning

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.spectral import SpectralFallbackWarning
from marketsim.errors import MarketStuckError
from marketsim.market.answers import AnswerModel
from marketsim.market.answers.confusion import ConfusionAnswers
from marketsim.market.answers.gaussian_scores import ScoreAnswers
from marketsim.market.answers.one_coin import OneCoinAnswers
from marketsim.market.answers.replay import ReplayAnswers
from marketsim.market.label_log import LabelLog
from marketsim.market.policy_guard import call_policy, checked_ranking, frozen_arrays
from marketsim.market.recorder import Recorder
from marketsim.market.replay import ReplayRequester
from marketsim.market.requester import Requester, TaskRequester
from marketsim.market.world import World
from marketsim.policies.base import AssignmentPolicy, MarketInfo
from marketsim.record.curves import CurvePoint
from marketsim.scenario.replay import ReplayData
from marketsim.scenario.specs import Scenario


@dataclass(frozen=True)
class Streams:
    """The independent random streams of one unit."""

    arrivals: np.random.Generator
    answers: np.random.Generator
    policy: np.random.Generator
    inference: np.random.Generator


def _takes_features(estimator: BaseAggregator) -> bool:
    """Whether ``estimator.fit`` has a ``features`` parameter (named, not swallowed by
    ``**kwargs``)."""
    params = inspect.signature(type(estimator).fit).parameters
    return "features" in params and params["features"].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    )


def answer_model(
    world: World, n_classes: int, rng: np.random.Generator, replay: ReplayData | None
) -> AnswerModel:
    """The per-label answers of the world's worker model (the file's answers in a replay)."""
    if replay is not None:
        return ReplayAnswers(replay)
    if world.continuous:
        assert world.means is not None and world.good is not None
        return ScoreAnswers(world.means, world.good, world.sigma, rng)
    if world.one_coin:
        return OneCoinAnswers(world.truth, world.confusion, n_classes, rng)
    return ConfusionAnswers(world.truth, world.confusion, rng)


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
        self.budget = scenario.budget.edges
        self.batch = scenario.budget.batch
        self.env = simpy.Environment()
        self.log = LabelLog(n, m, k, self.budget, scores=world.continuous)
        self.requester: TaskRequester = (
            Requester(n, m) if replay is None else ReplayRequester(replay)
        )
        self.answers = answer_model(world, k, streams.answers, replay)
        self.recorder = Recorder(scenario, world)
        self.graph: nx.Graph | None = nx.Graph() if keep_graph else None
        if self.graph is not None:
            self.graph.add_nodes_from((f"t{i}" for i in range(n)), bipartite=0)
            self.graph.add_nodes_from((f"w{j}" for j in range(m)), bipartite=1)
        self.busy = np.zeros(m, dtype=bool)
        self.assigned = 0
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
        if world.features is not None and _takes_features(make_estimator()):
            self._fit_kwargs["features"] = world.features
        ab = scenario.workers.ability
        info = frozen_arrays(  # read-only copies: the world is shared by every arm
            MarketInfo(
                n_tasks=n,
                n_workers=m,
                n_classes=k,
                class_prior=np.asarray(scenario.tasks.prior),
                ability_alpha=ab.alpha,
                ability_beta=ab.beta,
                ability_low=ab.low,
                inference=make_estimator,
                truth=world.truth if getattr(policy, "needs_truth", False) else None,
                true_confusion=world.confusion if getattr(policy, "needs_truth", False) else None,
            )
        )
        call_policy(policy, "bind", lambda: policy.bind(info))

    # --- label bookkeeping -------------------------------------------------------------------
    def _record(
        self,
        tasks: np.ndarray,
        workers: np.ndarray,
        labels: np.ndarray,
        scores: np.ndarray | None = None,
    ) -> None:
        self.log.extend(tasks, workers, labels, scores)
        if self.graph is not None:
            now = float(self.env.now)
            extra = (np.full(len(tasks), np.nan) if scores is None else scores).tolist()
            self.graph.add_edges_from(
                (f"t{i}", f"w{j}", {"label": int(z), "time": now}
                 | ({} if scores is None else {"score": x}))
                for i, j, z, x in zip(tasks, workers, labels, extra, strict=True)
            )
        if self.log.size >= self._next_refresh and not self._refresh_due.triggered:
            self._refresh_due.succeed()

    def receive(self, task: int, worker: int) -> None:
        """A worker submits their answer for ``task``, drawn by the world's answer model.
        Scalar code: this runs once per label."""
        label, score = self.answers.answer(task, worker)
        self.log.append(task, worker, label, score)
        if self.graph is not None:
            now = float(self.env.now)
            if score is None:
                self.graph.add_edge(f"t{task}", f"w{worker}", label=label, time=now)
            else:
                self.graph.add_edge(f"t{task}", f"w{worker}", label=label, score=score, time=now)
        if self.log.size >= self._next_refresh and not self._refresh_due.triggered:
            self._refresh_due.succeed()

    # --- inference ---------------------------------------------------------------------------
    def _fit(self, labels: Any) -> BaseAggregator:
        """A fresh estimator fitted on ``labels`` (with the task features when it takes them);
        convergence warnings are counted, others passed on."""
        est = self.make_estimator()
        if hasattr(est, "random_state"):
            est.set_params(random_state=self.streams.inference)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            warnings.simplefilter("always", SpectralFallbackWarning)
            # Early refits see few labels per task; the error curve is the market's verdict,
            # so the (costly) identifiability diagnostic is not even computed.
            with identifiability_checks(False):
                if self.warm_start and self.proba is not None and hasattr(est, "max_iter"):
                    est.fit(labels, init_proba=self.proba, **self._fit_kwargs)
                else:
                    est.fit(labels, **self._fit_kwargs)
        # A market refits every batch, from a sparse graph at first: non-convergence and the
        # spectral initialiser's fallback to majority vote are counted, not shouted.
        counted = (ConvergenceWarning, SpectralFallbackWarning)
        self.not_converged += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        self.init_fallbacks += sum(issubclass(w.category, SpectralFallbackWarning) for w in caught)
        for w in caught:
            if not issubclass(w.category, counted):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return est

    def refresh(self) -> None:
        """Refit the estimator on all labels so far, sample the recorder, re-rank tasks."""
        started = time.perf_counter()
        # A read-only copy: neither the estimator nor the policy can change the market's labels.
        labels = frozen_arrays(self.log.view())
        est = self._fit(labels)
        self.estimator = est
        self.inference_seconds += time.perf_counter() - started
        point, state = self.recorder.sample(est, labels, float(self.env.now))
        if not self.world.continuous:
            self.proba = est.proba_
        self.curve.append(point)
        if self.on_refresh is not None:
            self.on_refresh(point)
        if labels.n_labels < self.budget:
            ranked = time.perf_counter()
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
            self.refresh()
            if self.log.size >= self.budget:
                self.finished.succeed()
                return
            self._next_refresh = min(self.log.size + self.batch, self.budget)
            if self.log.size >= self._next_refresh:
                self._refresh_due.succeed()

    def worker_visit(self, worker: int, task: int, service: float) -> Any:
        """A worker labels ``task`` for ``service`` time units, then submits."""
        self.busy[worker] = True
        yield self.env.timeout(service)
        self.busy[worker] = False
        self.receive(task, worker)

    def worker_arrivals(self) -> Any:
        """Poisson arrivals of uniformly chosen workers; stops when the budget is handed out."""
        rng = self.streams.arrivals
        m = self.scenario.workers.count
        rate = self.scenario.workers.arrival_rate
        service_mean = self.scenario.workers.service_mean
        while self.assigned < self.budget:
            gap, worker = rng.exponential(1.0 / rate), int(rng.integers(m))
            service = rng.exponential(service_mean) if service_mean > 0 else 0.0
            yield self.env.timeout(gap)
            if self.busy[worker]:
                continue
            task = self.requester.assign(worker)
            if task is None:
                self._refused.add(worker)
                if len(self._refused) == m:
                    self._stuck()
                continue
            self._refused.clear()
            self.assigned += 1
            if service > 0:
                self.env.process(self.worker_visit(worker, task, service))
            else:
                self.receive(task, worker)

    def _stuck(self) -> None:
        """Every worker, idle, was offered nothing since the last hand-out: stop, don't spin."""
        raise MarketStuckError(
            f"the market is stuck: all {self.scenario.workers.count} workers arrived idle and "
            f"were offered no task, with {self.budget - self.assigned} of {self.budget} labels "
            f"of budget left ({type(self.requester).__name__} has no task any worker may take)"
        )

    def write_graphml(self, path: Any) -> None:
        """Export who labelled what (task nodes ``t<i>``, worker nodes ``w<j>``) as GraphML."""
        if self.graph is None:
            raise ValueError("this market does not keep its graph (output.graph = false)")
        nx.write_graphml(self.graph, path)

    def run(self) -> list[CurvePoint]:
        """Seed the initial graph, start the processes, and run until the budget is spent."""
        w = self.world
        for i, j in zip(w.initial_tasks.tolist(), w.initial_workers.tolist(), strict=True):
            self.requester.mark(i, j)
        self.assigned = len(w.initial_tasks)
        self._next_refresh = self.assigned
        self._record(w.initial_tasks, w.initial_workers, w.initial_labels, w.initial_scores)
        if self.assigned == 0 and not self._refresh_due.triggered:  # empty start
            self._refresh_due.succeed()
        self.env.process(self.inference_service())
        self.env.process(self.worker_arrivals())
        self.env.run(until=self.finished)
        return self.curve
