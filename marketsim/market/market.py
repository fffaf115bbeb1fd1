"""The SimPy market of one (replicate, arm) unit.

Processes (small generators, state on the model; see SimPy's own examples):

- ``worker_arrivals``: workers of the pool arrive as a Poisson process, uniformly chosen;
- ``worker_visit``: an arriving idle worker asks the requester for a task, labels it during an
  exponential service time, and submits the answer;
- ``inference_service``: every ``batch`` received labels it refits the arm's estimator, lets the
  recorder sample the error, and asks the policy for a new ranking (the requester hands out
  tasks from the latest, possibly stale, ranking in the meantime).

The record of who labelled what is a networkx bipartite graph; inference runs on the
:class:`~marketsim.market.label_log.LabelLog` arrays kept in step with it. In a continuous-score
market (``gaussian-scores``) every label carries a score, the service fits a score method and
the recorder measures the RMSE of the task means (see :mod:`marketsim.market.score_metrics`).
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
from marketsim.aggregation.continuous import plain_means
from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.metrics import error_rate, estimated_skill
from marketsim.market.label_log import LabelLog
from marketsim.market.replay import ReplayRequester
from marketsim.market.score_metrics import good_call_accuracy, good_proba_error, task_mean_rmse
from marketsim.market.scores import draw_score
from marketsim.market.world import World, one_coin_confusion
from marketsim.policies.base import AssignmentPolicy, MarketInfo, MarketState
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


def estimated_confusion(estimator: BaseAggregator, skill: np.ndarray, k: int) -> np.ndarray:
    """Per-worker confusion matrices: ``confusion_`` when the model has them, else the one-coin
    matrices implied by the estimated accuracies."""
    if hasattr(estimator, "confusion_"):
        return np.asarray(estimator.confusion_)

    return one_coin_confusion(np.asarray(skill, dtype=np.float64), k)


def _takes_features(estimator: BaseAggregator) -> bool:
    """Whether ``estimator.fit`` has a ``features`` parameter (named, not swallowed by
    ``**kwargs``)."""
    params = inspect.signature(type(estimator).fit).parameters
    return "features" in params and params["features"].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    )


class Requester:
    """Hands out tasks from the current ranking: each round gives distinct tasks, and a worker
    never gets a task they already hold or labelled."""

    def __init__(self, n_tasks: int, n_workers: int) -> None:
        self.n_tasks = n_tasks
        self.done_pairs: set[int] = set()
        self.n_workers = n_workers
        self.ranking = np.arange(n_tasks)
        self.cursor = 0
        self.given = np.zeros(n_tasks, dtype=bool)

    def new_round(self, ranking: np.ndarray) -> None:
        """Start a round from a fresh ranking."""
        self.ranking = np.asarray(ranking, dtype=np.int64)
        self.cursor = 0
        self.given[:] = False

    def mark(self, task: int, worker: int) -> None:
        """Remember that ``worker`` holds or labelled ``task``."""
        self.done_pairs.add(task * self.n_workers + worker)

    def assign(self, worker: int) -> int | None:
        """Next task for ``worker``, or ``None`` if none is left for them this round."""
        for _ in range(2):
            ranking, given, pairs, m = self.ranking, self.given, self.done_pairs, self.n_workers
            while self.cursor < len(ranking) and given[ranking[self.cursor]]:
                self.cursor += 1
            for pos in range(self.cursor, len(ranking)):
                task = int(ranking[pos])
                if not given[task] and task * m + worker not in pairs:
                    given[task] = True
                    self.mark(task, worker)
                    return task
            # The ranking is used up this round: start a new pass over it.
            self.cursor = 0
            self.given[:] = False
        return None


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
        self.requester: Requester | ReplayRequester = (
            Requester(n, m) if replay is None else ReplayRequester(replay)
        )
        self._answers: dict[int, int] | None = None
        if replay is not None:
            keys = replay.pair_keys.tolist()
            self._answers = dict(zip(keys, replay.labels.labels.tolist(), strict=True))
        self.graph: nx.Graph | None = nx.Graph() if keep_graph else None
        if self.graph is not None:
            self.graph.add_nodes_from((f"t{i}" for i in range(n)), bipartite=0)
            self.graph.add_nodes_from((f"w{j}" for j in range(m)), bipartite=1)
        self.busy = np.zeros(m, dtype=bool)
        self._cumulative = None if world.one_coin else np.cumsum(world.confusion, axis=2)
        self.assigned = 0
        self.curve: list[CurvePoint] = []
        self.not_converged = 0
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
        policy.bind(
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
            )
        )

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
        """A worker submits their answer for ``task`` (one-coin: right with their ability,
        else a uniformly chosen wrong class). Scalar code: this runs once per label."""
        rng = self.streams.answers
        if self.world.continuous:
            self._receive_score(task, worker)
            return
        truth = int(self.world.truth[task])
        if self._answers is not None:
            label = self._answers[task * self.log.n_workers + worker]
        elif self.world.one_coin:
            label = truth
            if rng.random() >= self.world.confusion[worker, truth, truth]:
                k = self.n_classes
                label = 1 - truth if k == 2 else (truth + int(rng.integers(1, k))) % k
        else:
            row = self._cumulative[worker, truth]
            label = min(int(np.searchsorted(row, rng.random(), side="right")), len(row) - 1)
        self.log.append(task, worker, label)
        if self.graph is not None:
            self.graph.add_edge(f"t{task}", f"w{worker}", label=label, time=float(self.env.now))
        if self.log.size >= self._next_refresh and not self._refresh_due.triggered:
            self._refresh_due.succeed()

    def _receive_score(self, task: int, worker: int) -> None:
        """A continuous-score answer (seed 001): good annotators ``clip(N(mu_i, sigma^2))``,
        bad ones uniform on [0, 1]."""
        w = self.world
        assert w.means is not None and w.good is not None
        score = draw_score(float(w.means[task]), bool(w.good[worker]), w.sigma,
                           self.streams.answers)
        self.log.append(task, worker, 0, score)
        if self.graph is not None:
            self.graph.add_edge(f"t{task}", f"w{worker}", label=0, score=score,
                                time=float(self.env.now))
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
            # Early refits see few labels per task; the error curve is the market's verdict,
            # so the (costly) identifiability diagnostic is not even computed.
            with identifiability_checks(False):
                if self.warm_start and self.proba is not None and hasattr(est, "max_iter"):
                    est.fit(labels, init_proba=self.proba, **self._fit_kwargs)
                else:
                    est.fit(labels, **self._fit_kwargs)
        # A market refits every batch: non-convergence is counted, not shouted.
        self.not_converged += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        for w in caught:
            if not issubclass(w.category, ConvergenceWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return est

    def refresh(self) -> None:
        """Refit the estimator on all labels so far, sample the recorder, re-rank tasks."""
        started = time.perf_counter()
        labels = self.log.view()
        est = self._fit(labels)
        self.estimator = est
        self.inference_seconds += time.perf_counter() - started
        if self.world.continuous:
            point, state = self._sample_scores(est, labels)
        else:
            point, state = self._sample_classes(est, labels)
        self.curve.append(point)
        if self.on_refresh is not None:
            self.on_refresh(point)
        if labels.n_labels < self.budget:
            ranked = time.perf_counter()
            self.requester.new_round(self.policy.rank(state, self.streams.policy))
            self.policy_seconds += time.perf_counter() - ranked

    def _sample_scores(self, est: Any, labels: Any) -> tuple[CurvePoint, MarketState]:
        """Recorder and policy view of a continuous-score market."""
        w = self.world
        assert w.means is not None and w.good is not None
        assert self.scenario.tasks.means is not None
        fill = self.scenario.tasks.means.mean
        means = np.asarray(est.means_, dtype=np.float64)
        good_proba = np.asarray(est.good_proba_, dtype=np.float64)
        seen = labels.worker_degree > 0
        rmse = task_mean_rmse(means, w.means, fill)
        point = CurvePoint(
            edges=labels.n_labels,
            error_rate=rmse,
            ability_error=good_proba_error(good_proba, w.good, seen),
            sim_time=float(self.env.now),
            rmse=rmse,
            plain_rmse=task_mean_rmse(plain_means(labels), w.means, fill),
            good_accuracy=good_call_accuracy(good_proba, w.good, seen),
        )
        state = MarketState(
            labels, np.ones((labels.n_tasks, 1)), good_proba, labels.n_labels, self.budget,
            means=means, good_proba=good_proba, sigma=float(est.sigma_),
        )
        return point, state

    def _sample_classes(self, est: Any, labels: Any) -> tuple[CurvePoint, MarketState]:
        """Recorder and policy view of a market with class labels."""
        self.proba = est.proba_
        skill = estimated_skill(est, labels)
        seen = labels.worker_degree > 0
        ability_error = (
            float(np.mean(np.abs(skill[seen] - self.world.ability[seen]))) if seen.any() else 0.0
        )
        confusion = estimated_confusion(est, skill, self.n_classes)
        confusion_error = (
            float(np.mean(np.abs(confusion[seen] - self.world.confusion[seen])))
            if seen.any() else 0.0
        )
        point = CurvePoint(
            edges=labels.n_labels,
            error_rate=error_rate(est.labels_, self.world.truth),
            ability_error=ability_error,
            confusion_error=confusion_error,
            sim_time=float(self.env.now),
        )
        return point, MarketState(labels, est.proba_, skill, labels.n_labels, self.budget)

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
                continue
            self.assigned += 1
            if service > 0:
                self.env.process(self.worker_visit(worker, task, service))
            else:
                self.receive(task, worker)

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
