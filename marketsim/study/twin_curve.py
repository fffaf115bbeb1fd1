"""A twin's design curve: the calibrated scenario at exactly k labels per task (in the "as
collected" arm's world of the replicate, k distinct workers per task drawn as the
``fixed-overlap`` market with ``overlap = k`` hands them out, by the design sampler of
:mod:`marketsim.study.design_sampler`, or bought by that market itself) — or k of each task's
as-collected labels drawn as the real curve draws them —
and as collected (the file's labels per task, drawn by the same sampler where it can stand in
for the arm's market: :func:`~marketsim.study.twin.as_collected`), its labels aggregated as the
real file's are (:mod:`marketsim.aggregation.design_curve`); and the choice, among
``calibrate``'s candidate worlds, of the twin nearest the real curve
(:mod:`marketsim.aggregation.curve_choice`).

``calibrate`` judges its candidates at exactly k, the designs a requester asks the twin about
(and issue #40's acceptance measures): drawing k of the as-collected labels makes the twin's
majority vote about a point worse at k = 3 and 5 on RTE than exactly k labels per task do, which
changes which world is nearest (docs/explanation/models/calibration/design-curve.md). Every
candidate runs :data:`CURVE_REPLICATES` replicates; those within noise of the nearest
(:func:`~marketsim.aggregation.curve_choice.finalists`) run up to :data:`FINAL_REPLICATES`
before the choice (fewer on a large file: :func:`curve_replicates`). Only the candidates
that reproduce the as-collected Dawid–Skene error within one draw's spread are eligible
(:func:`~marketsim.aggregation.curve_choice.collected_z`); those the choice would weigh were
they eligible and that miss the bound by no more than their few replicates' noise
(:func:`~marketsim.aggregation.curve_choice.contenders`) run on to :data:`FINAL_REPLICATES`
too, and are judged on those."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from marketsim.aggregation.curve_choice import (
    choose_on_curve,
    contenders,
    finalists,
    runs_for,
)
from marketsim.aggregation.design_curve import (
    DesignCurve,
    References,
    errors,
    keep_k_per_task,
    subset,
)
from marketsim.aggregation.mapping import Mapper, mapped
from marketsim.data.labels import LabelSet
from marketsim.scenario.calibration import REPLICATES, Calibration, check_text
from marketsim.scenario.calibration_text import calibrated_text
from marketsim.scenario.specs import Scenario
from marketsim.study.design_sampler import (
    design_counts,
    design_world,
    labels_at_k,
    sampler_problem,
)
from marketsim.study.twin import as_collected, simulated_labels
from marketsim.workers.base import World

#: Replicates each candidate's curve is simulated for in ``calibrate``'s choice (replicate
#: numbers after the written scenario's, so the choice and the check draw different markets).
CURVE_REPLICATES = 3
#: Replicates of the finalists (the candidates within noise of the nearest) in all.
FINAL_REPLICATES = 10
#: The parts the written twin's replicates are run in (:func:`written_twin`): one per process
#: of ``calibrate --jobs 2``, the machine this was measured on.
WRITTEN_CHUNKS = 2


def design_scenario(scenario: Scenario, k: int) -> Scenario:
    """``scenario`` with one arm buying ``k`` labels per task (the initial graph's one
    included; a task the first arm gives fewer as collected: its own count,
    :func:`~marketsim.study.design_sampler.design_counts`): fixed overlap ``k`` (or the capped
    counts as its ``overlaps``), a budget of those labels. Its market refits majority vote,
    the cheapest inference: fixed overlap buys the same labels whatever the posterior says,
    and the curve aggregates them itself."""
    per_task = design_counts(scenario, k)
    if bool((per_task == k).all()):
        policy: dict[str, object] = {"name": "fixed-overlap", "overlap": k}
        name = f"exactly {k} per task"
    else:  # dealt as the first arm's counts are, so each task keeps its own capped count
        counts, tasks = np.unique(per_task, return_counts=True)
        policy = {"name": "fixed-overlap",
                  "overlaps": [[int(c), int(t)] for c, t in zip(counts, tasks, strict=True)]}
        name = f"{k} per task, at most each task's own"
    arm = {"name": name, "initial": "one-per-task", "policy": policy,
           "inference": {"method": "mv"}}
    return scenario.replace({"budget.edges": int(per_task.sum())}).with_arms(arm)


def twin_curve(scenario: Scenario, ks: tuple[int, ...], replicates: range,
               against_truth: bool, *, exact: bool = True, seed: int = 0,
               market: bool = False, mix: tuple[float, ...] | None = None) -> DesignCurve:
    """The twin's curve of :func:`twin_runs`."""
    runs = twin_runs(scenario, ks, replicates, against_truth, mix, exact=exact, seed=seed,
                     market=market)
    return DesignCurve.from_runs(ks, runs[..., 0], runs[..., 1], against(against_truth))


def against(against_truth: bool) -> str:
    """What a twin's errors are counted against (as :class:`References` says it)."""
    return "truth" if against_truth else "full-data answer"


def twin_runs(scenario: Scenario, ks: tuple[int, ...], replicates: range,
              against_truth: bool, mix: tuple[float, ...] | None = None, *,
              exact: bool = True, seed: int = 0, market: bool = False) -> np.ndarray:
    """The errors of the scenario's twin at ``ks`` labels per task and as collected (its
    first arm: :func:`~marketsim.study.twin.as_collected`), one run per replicate, against
    the world's true classes (``against_truth``) or each method's answer on the replicate's
    as-collected labels. ``exact``: exactly k labels per task in the replicate's world, drawn
    by the design sampler
    (:mod:`marketsim.study.design_sampler`), or, with ``market`` or where the sampler cannot
    stand in, bought by a market of its own (:func:`design_scenario`); else k of each task's
    as-collected labels drawn at random (seeded by ``seed`` and the replicate), as the real
    curve is drawn. Against the truth, ``mix`` weights each class's error by its share (the
    real file's judged tasks': :func:`~marketsim.aggregation.design_curve.judged_mix`).
    (points, replicates, 2): majority vote's, then Dawid–Skene's."""
    runs = []
    for replicate in replicates:
        full, truth, _, world = as_collected(scenario, replicate, market)
        refs = (References(truth, truth, "truth", mix) if against_truth
                else References.of(full, None))
        if exact:
            at_k = exact_labels(scenario, ks, replicate, market, world)
        else:
            rng = np.random.default_rng([seed, replicate])
            at_k = [subset(full, keep_k_per_task(full.tasks, k, rng)) for k in ks]
        runs.append([errors(labels, refs) for labels in [*at_k, full]])
    return np.array(runs, dtype=np.float64).reshape(len(replicates), len(ks) + 1,
                                                    2).transpose(1, 0, 2)


def exact_labels(scenario: Scenario, ks: tuple[int, ...], replicate: int,
                 market: bool = False, world: World | None = None) -> list[LabelSet]:
    """The twin's labels at exactly each of ``ks`` per task in replicate ``replicate``'s
    world (``world``: already drawn): the design sampler's, or (``market``, or a crowd the
    sampler cannot stand in for: :func:`~marketsim.study.design_sampler.sampler_problem`)
    each a fixed-overlap market's."""
    if not market:
        world = design_world(scenario, replicate) if world is None else world
        if sampler_problem(scenario, world) is None:
            return [labels_at_k(scenario, world, replicate, k) for k in ks]
    return [simulated_labels(design_scenario(scenario, k), replicate, times=False)[0]
            for k in ks]


def curve_replicates(n_tasks: int) -> tuple[int, int]:
    """The replicates every candidate's twin of ``n_tasks`` tasks runs, and its finalists in
    all: :data:`CURVE_REPLICATES` and :data:`FINAL_REPLICATES`, or as few as the noise the
    choice needs (:func:`~marketsim.aggregation.curve_choice.runs_for`: a twin's points are
    judged against its world's truth on every task)."""
    return runs_for(n_tasks, CURVE_REPLICATES), runs_for(n_tasks, FINAL_REPLICATES)


def curve_units(cal: Calibration) -> int:
    """The progress units :func:`choose_twin` advances: one per candidate, and one per
    candidate run on (at most all of them)."""
    return 2 * len(cal.eligible)


def choose_twin(cal: Calibration, real: DesignCurve, seed: int,
                replicates: range | None = None,
                advance: Callable[[], object] | None = None,
                final_replicates: int | None = None,
                mapper: Mapper | None = None) -> Calibration:
    """``cal`` with the eligible candidate whose twin is nearest ``real`` picked (``pick``)
    and the choice kept (``curve``). Each candidate runs ``replicates`` at exactly k labels
    per task; the finalists (within noise of the nearest; else the nearest alone) and the
    contenders (not eligible on noise alone: :func:`~marketsim.aggregation.curve_choice.contenders`)
    run on to ``final_replicates`` in all and the choice is made again, until the nearest
    has run on (the chosen twin is always judged on ``final_replicates``). By default
    :data:`CURVE_REPLICATES` and :data:`FINAL_REPLICATES`, fewer on a large file, whose
    twins' points are less noisy (:func:`curve_replicates`). ``advance`` is called
    :func:`curve_units` times in all (a progress bar's). The runs are made by ``mapper``
    (:mod:`~marketsim.aggregation.mapping`: each from its own seeds)."""
    if replicates is None:
        replicates = range(REPLICATES, REPLICATES + curve_replicates(cal.n_tasks)[0])
    if final_replicates is None:
        final_replicates = curve_replicates(cal.n_tasks)[1]
    tick = advance if advance is not None else (lambda: None)
    against_truth = real.against == "truth"
    names = [cal.candidates[index].name for index in cal.eligible]
    first = mapped(mapper, candidate_runs, [(cal, index, seed, real.ks, replicates,
                                             against_truth, real.mix)
                                            for index in cal.eligible], tick)
    scenarios = [scenario for scenario, _ in first]
    runs = [r for _, r in first]
    choice = choose_on_curve(real, tuple(names), cal.eligible, curves(real, runs),
                             real.judged or cal.n_tasks)
    more = range(replicates.stop, replicates.start + final_replicates)
    extended = 0
    while len(more):  # until the nearest has run on: a lucky few replicates do not win
        terms = 2 * len(real.designs)
        near = finalists(choice.judged_distances, terms) or (choice.best,)
        near += tuple(p for p in contenders(choice, terms, final_replicates) if p not in near)
        todo = [p for p in near if runs[p].shape[1] < final_replicates]
        if not todo:
            break
        further = mapped(mapper, twin_runs, [(scenarios[p], real.ks, more, against_truth,
                                              real.mix) for p in todo], tick)
        for position, extra in zip(todo, further, strict=True):
            runs[position] = np.concatenate([runs[position], extra], axis=1)
        extended += len(todo)
        choice = choose_on_curve(real, tuple(names), cal.eligible, curves(real, runs),
                             real.judged or cal.n_tasks)
    for _ in range(curve_units(cal) - len(cal.eligible) - extended):
        tick()
    return replace(cal, pick=choice.chosen, curve=choice)


def written_twin(cal: Calibration, real: DesignCurve, seed: int,
                 advance: Callable[[], object] | None = None,
                 mapper: Mapper | None = None, first_replicate: int = REPLICATES
                 ) -> Calibration:
    """``cal`` as ``calibrate`` writes it: arrivals from the deck (``deck``), and the chosen
    world's curve run again so, on the replicates it was chosen on (from ``first_replicate``,
    :func:`choose_twin`'s first), in :data:`WRITTEN_CHUNKS` parts the ``mapper`` may run side
    by side (each replicate from its own seeds: the same curve at any number of jobs). The
    candidates were compared with independent arrivals by share (:func:`choose_twin`); the
    printed and saved curve is the written scenario's. ``advance`` is called once a part."""
    written = replace(cal, deck=True)
    if cal.curve is None:
        for _ in range(WRITTEN_CHUNKS):
            (advance or (lambda: None))()
        return written
    scenario = check_text(calibrated_text(replace(written, curve=None), "", seed),
                          f"<twin: {cal.chosen.name}>")
    bounds = np.linspace(first_replicate, first_replicate + cal.curve.twins[cal.curve.best].runs,
                         WRITTEN_CHUNKS + 1).round().astype(int)
    chunks = [range(start, stop) for start, stop in zip(bounds[:-1], bounds[1:], strict=True)]
    parts = mapped(mapper, twin_runs, [(scenario, real.ks, chunk, real.against == "truth",
                                        real.mix) for chunk in chunks], advance)
    runs = np.concatenate([p for p in parts if p.size], axis=1)
    return replace(written, curve=replace(cal.curve, written=curves(real, [runs])[0]))


def candidate_runs(cal: Calibration, index: int, seed: int, ks: tuple[int, ...],
                   replicates: range, against_truth: bool,
                   mix: tuple[float, ...] | None = None) -> tuple[Scenario, np.ndarray]:
    """Candidate ``index``'s scenario (as ``calibrate`` would write it) and its twin's runs
    (:func:`twin_runs`, weighted to ``mix``)."""
    text = calibrated_text(replace(cal, pick=index, curve=None), "", seed)
    scenario = check_text(text, f"<twin: {cal.candidates[index].name}>")
    return scenario, twin_runs(scenario, ks, replicates, against_truth, mix)


def curves(real: DesignCurve, runs: list[np.ndarray]) -> tuple[DesignCurve, ...]:
    """Each candidate's curve of its runs (points, replicates, 2)."""
    return tuple(DesignCurve.from_runs(real.ks, r[..., 0], r[..., 1], real.against)
                 for r in runs)
