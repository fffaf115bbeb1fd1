"""A twin's design curve: the calibrated scenario run at exactly k labels per task (the
``fixed-overlap`` policy with ``overlap = k``, the same world and streams as the "as collected"
arm's replicate) — or, cheaper, k of each task's as-collected labels drawn as the real curve
draws them — and as collected, its labels aggregated as the real file's are
(:mod:`marketsim.aggregation.design_curve`); and the choice, among ``calibrate``'s candidate
worlds, of the twin nearest the real curve (:mod:`marketsim.aggregation.curve_choice`).

``calibrate`` judges its candidates on drawn designs: one market per replicate and candidate
instead of one per design (a fixed-overlap market hands out a label in about a millisecond:
simulating RTE's five designs exactly costs 4 s a replicate, eight candidates times three
replicates 100 s). ``benchmarks/twin_design_curve.py`` measures the chosen twin at exactly k,
as issue #40's acceptance asks, and prints both (docs/models.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from marketsim.aggregation.curve_choice import choose_on_curve
from marketsim.aggregation.design_curve import (
    DesignCurve,
    References,
    errors,
    keep_k_per_task,
    subset,
)
from marketsim.scenario.calibration import REPLICATES, Calibration, check_text
from marketsim.scenario.calibration_text import calibrated_text
from marketsim.scenario.specs import Scenario
from marketsim.study.twin import simulated_labels

#: Replicates each candidate's curve is simulated for in ``calibrate``'s choice (replicate
#: numbers after the written scenario's, so the choice and the check draw different markets).
CURVE_REPLICATES = 3


def design_scenario(scenario: Scenario, k: int) -> Scenario:
    """``scenario`` with one arm buying exactly ``k`` labels per task (the initial graph's one
    included): fixed overlap ``k``, a budget of ``k`` labels per task. Its market refits
    majority vote, the cheapest inference: fixed overlap buys the same labels whatever the
    posterior says, and the curve aggregates them itself."""
    arm = {"name": f"exactly {k} per task", "initial": "one-per-task",
           "policy": {"name": "fixed-overlap", "overlap": k}, "inference": {"method": "mv"}}
    return scenario.replace({"budget.edges": k * scenario.tasks.count}).with_arms(arm)


def twin_curve(scenario: Scenario, ks: tuple[int, ...], replicates: range,
               against_truth: bool, *, exact: bool = True, seed: int = 0) -> DesignCurve:
    """The errors of the scenario's twin at ``ks`` labels per task and as collected (its
    first arm), one run per replicate, against the world's true classes (``against_truth``)
    or each method's answer on the replicate's as-collected labels. ``exact``: each k is a
    market of its own at exactly k labels per task (:func:`design_scenario`); else k of each
    task's as-collected labels drawn at random (seeded by ``seed`` and the replicate), as the
    real curve is drawn: one market per replicate instead of one per design."""
    designs = [design_scenario(scenario, k) for k in ks] if exact else []
    runs = []
    for replicate in replicates:
        full, truth, _, _ = simulated_labels(scenario, replicate)
        refs = References(truth, truth, "truth") if against_truth else References.of(full, None)
        if exact:
            at_k = [simulated_labels(d, replicate)[0] for d in designs]
        else:
            rng = np.random.default_rng([seed, replicate])
            at_k = [subset(full, keep_k_per_task(full.tasks, k, rng)) for k in ks]
        runs.append([errors(labels, refs) for labels in [*at_k, full]])
    both = np.array(runs, dtype=np.float64).transpose(1, 0, 2)  # (points, replicates, 2)
    return DesignCurve.from_runs(ks, both[..., 0], both[..., 1], refs.against)


def choose_twin(cal: Calibration, real: DesignCurve, seed: int,
                replicates: range = range(REPLICATES, REPLICATES + CURVE_REPLICATES),
                advance: Callable[[], object] | None = None) -> Calibration:
    """``cal`` with the eligible candidate whose twin is nearest ``real`` picked (``pick``)
    and the choice kept (``curve``). ``advance`` is called once per candidate simulated (a
    progress bar's)."""
    against_truth = real.against == "truth"
    names, curves = [], []
    for index in cal.eligible:
        name = cal.candidates[index].name
        text = calibrated_text(replace(cal, pick=index, curve=None), "", seed)
        curves.append(twin_curve(check_text(text, f"<twin: {name}>"), real.ks, replicates,
                                 against_truth, exact=False, seed=seed))
        names.append(name)
        if advance is not None:
            advance()
    choice = choose_on_curve(real, tuple(names), cal.eligible, tuple(curves))
    return replace(cal, pick=choice.chosen, curve=choice)
