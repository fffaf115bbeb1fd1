"""A twin's labels: one arm of a scenario run through the market, and the labels it bought
with the world's true classes and the simulated time each came in (``marketsim calibrate``
compares them with the real labels)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from marketsim.aggregation.majority_vote import fractional_tie_error
from marketsim.aggregation.metrics import error_rate
from marketsim.aggregation.type_selection import MOMENT_REPLICATES, MomentChoice, choose_by_moments
from marketsim.data.labels import LabelSet
from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.scenario.calibration import REPLICATES, Calibration, check_text
from marketsim.scenario.calibration_text import calibrated_text
from marketsim.scenario.specs import Scenario
from marketsim.study.design_sampler import collected_labels, design_world
from marketsim.study.runner import market_setup
from marketsim.study.seeds import initial_graph_rng, unit_streams, world_rng
from marketsim.workers.base import World


def twin_world(scenario: Scenario, replicate: int = 0, arm: int = 0) -> World:
    """The world of replicate ``replicate`` as arm ``arm``'s unit draws it (``marketsim run``'s
    streams)."""
    spec = scenario.arms[arm]
    return draw_world(scenario.crowd, world_rng(scenario.seed, replicate),
                      spec.initial_graph(scenario.budget),
                      None if spec.initial is None
                      else initial_graph_rng(scenario.seed, replicate, spec.initial))


def simulated_labels(scenario: Scenario, replicate: int = 0, arm: int = 0, times: bool = True
                     ) -> tuple[LabelSet, np.ndarray, float, np.ndarray]:
    """The labels arm ``arm`` of replicate ``replicate`` bought, the world's true classes, the
    arm's final error rate (the same world and streams as ``marketsim run``'s unit) and the
    simulated times the labels came in (sorted; the initial graph's at 0), read from the
    market's label graph (``times=False``: no graph is kept, the times are empty — the
    networkx graph costs more than the rest of a small market)."""
    spec = scenario.arms[arm]
    world = twin_world(scenario, replicate, arm)
    policy = spec.policy.build(allow_imports=False, source=scenario.source)
    market = Market(market_setup(scenario.for_arm(spec)), world, policy,
                    estimator_factory(scenario.crowd, spec.inference),
                    unit_streams(scenario.seed, replicate, arm),
                    warm_start=spec.inference.warm_starts, keep_graph=times)
    curve = market.run()
    came = np.zeros(0) if market.graph is None else np.sort(np.fromiter(
        (t for _, _, t in market.graph.edges(data="time")), np.float64))
    return market.log.view(), world.truth, float(curve[-1].error_rate), came


def collected_scenario(scenario: Scenario) -> Scenario:
    """``scenario`` whose first arm (as collected) refits majority vote when its policy is
    ``uniform``: a uniform ranking is a random permutation that never reads the posterior, so
    the labels bought are the same, and the market skips a Dawid–Skene refit per round (the
    caller aggregates the labels itself: :func:`final_error`)."""
    if scenario.arms[0].policy.name != "uniform":
        return scenario
    arm = dict(scenario.document()["arms"][0])
    return scenario.with_arms({**arm, "inference": {"method": "mv"}})


def final_error(scenario: Scenario, labels: LabelSet, truth: np.ndarray,
                replicate: int, mix: tuple[float, ...] | None = None) -> float:
    """The error of the first arm's inference fitted on ``labels`` (from scratch, as the
    market's last refit is without ``warm_start``; seeded by the arm's inference stream),
    each class weighted to ``mix`` where given
    (:func:`~marketsim.aggregation.metrics.stratified_mean`)."""
    est = estimator_factory(scenario.crowd, scenario.arms[0].inference)()
    if hasattr(est, "random_state"):
        est.set_params(random_state=unit_streams(scenario.seed, replicate, 0).inference)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(labels)
    return error_rate(est.labels_, truth, mix)


def as_collected(scenario: Scenario, replicate: int, market: bool = False
                 ) -> tuple[LabelSet, np.ndarray, float | None, World | None]:
    """The labels the first arm (as collected) buys in replicate ``replicate``, the world's
    true classes, the arm's final error when a market ran (else ``None``: the caller fits it)
    and the replicate's world where it was drawn here (every design of the replicate shares
    it): the sampler's (:func:`~marketsim.study.design_sampler.collected_labels`) unless
    ``market`` or it cannot stand in, else the arm's market (refitting majority vote where the
    arm's labels do not depend on its method: :func:`collected_scenario`)."""
    world = None if market else design_world(scenario, replicate)
    if world is not None:
        labels = collected_labels(scenario, world, replicate)
        if labels is not None:
            return labels, world.truth, None, world
    collected = collected_scenario(scenario)
    labels, truth, error, _ = simulated_labels(collected, replicate, times=False)
    return labels, truth, None if collected is not scenario else error, world


def twin_errors(scenario: Scenario, replicates: range,
                advance: Callable[[], object] | None = None, market: bool = False,
                mix: tuple[float, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The "as collected" arm's majority-vote error (ties counted fractionally) and final
    error per replicate of ``replicates`` (its labels: :func:`as_collected`), each class
    weighted to ``mix`` where given (the real judged tasks':
    :func:`~marketsim.aggregation.design_curve.judged_mix`): what ``calibrate`` compares
    with the real labels' when it chooses the number of task types (``advance``: called
    once per replicate)."""
    vote, final = [], []
    for replicate in replicates:
        labels, truth, error, _ = as_collected(scenario, replicate, market)
        if error is None or mix is not None:  # the arm's own method, fitted on its labels
            error = final_error(scenario, labels, truth, replicate, mix)
        counts = np.zeros((labels.n_tasks, scenario.tasks.classes))
        np.add.at(counts, (labels.tasks, labels.labels), 1.0)
        vote.append(fractional_tie_error(counts, truth, mix))
        final.append(error)
        if advance is not None:
            advance()
    return np.asarray(vote), np.asarray(final)


def errors_per_types(cal: Calibration, seed: int, replicates: range,
                     advance: Callable[[], object] | None = None,
                     mix: tuple[float, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`twin_errors` of the world each number of task types proposes (1 to the most
    fitted; row ``K - 1``): the scenario ``calibrate`` would write with ``--task-types K``
    (``advance``: called once per twin simulated; ``mix``: as :func:`twin_errors`')."""
    rows = [twin_errors(check_text(calibrated_text(replace(cal, forced_types=k), ""),
                                   f"<twin with {k} task type(s)>"), replicates, advance,
                        mix=mix)
            for k in type_counts(cal)]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def moment_choice(cal: Calibration, data: LabelSet, ref: np.ndarray, known: np.ndarray,
                  real_error: float, seed: int, advance: Callable[[], object] | None = None,
                  mix: tuple[float, ...] | None = None) -> MomentChoice:
    """The number of task types whose twin best reproduces the real labels' majority-vote and
    Dawid–Skene errors (``real_error``) on the tasks with a truth (``known``, their classes in
    ``ref``): :data:`MOMENT_REPLICATES` replicates after the written scenario's for each number
    (``advance`` called once a twin), its errors weighted to the real curve's class ``mix``
    where it has one."""
    counts = np.zeros((data.n_tasks, cal.n_classes))
    np.add.at(counts, (data.tasks, data.labels), 1.0)
    real_vote = fractional_tie_error(counts, np.where(known, ref, -1))
    vote, final = errors_per_types(cal, seed, range(REPLICATES, REPLICATES + MOMENT_REPLICATES),
                                   advance, mix)
    return choose_by_moments(real_vote, real_error, vote, final)


def type_counts(cal: Calibration) -> range:
    """The numbers of task types :func:`errors_per_types` simulates: 1 to the most fitted."""
    return range(1, max((f.n_types for f in cal.types), default=1) + 1)
