"""The scenario ``marketsim calibrate`` writes: a fitted crowd (:mod:`marketsim.aggregation.
confusion_fit`) as a scenario file that runs as it is, its choices explained in its comments.

The world is per-worker confusion matrices (``workers.model = "confusion"``, ``design =
"per-worker"``), kept **per worker**: every worker's matrix (``[workers.confusion] matrices``)
and labels in the file, as the cards of an arrival deck (``[workers.arrivals] weights`` with
``order = "deck"``), so the twin is this crowd rather than a distribution fitted to it (a
requester asks what would have happened with *their* workers; the budget can then be raised
beyond the data, the same workers working in the same proportions). At the file's budget every
worker gives exactly the labels they gave; at fewer labels per task each worker's count is drawn
without replacement from the file's, as drawing k of each task's real labels draws it
(independent arrivals by share would spread the counts wider and, on a crowd of many one-label
workers, meet too many distinct workers: docs/explanation/models/calibration/sparse-crowd.md).
The candidate worlds are compared with independent arrivals by share (``deck = False``), as
they were before the deck; the chosen one is then run again with the deck, and that is the
curve printed and saved (the deck made calibrate write other near-tied worlds, as often worse
as better: the same page).
Of the candidate worlds (one ability or a full matrix per worker; with or without
look-alike tasks; with or without task difficulty; or a mixture of 2 to 4 task types, each
worker with one matrix per type: :mod:`marketsim.aggregation.task_types`) the number of task
types is chosen (:mod:`marketsim.aggregation.type_selection`: by the errors each number's twin
reproduces where the file has a truth, else by held-out likelihood), then the world with that
many types nearest the data's design curve (:mod:`marketsim.aggregation.curve_choice`; without
that choice, the lowest BIC) is written.
When the label file has a time column, ``[workers.arrivals] rate`` is the labels' Poisson rate
(:mod:`marketsim.aggregation.arrival_fit`) in the file's time unit, which becomes the unit of
simulated time; without one, the rate is 1 (simulated time then means nothing real).
A mixed file's models (a ``source`` column naming them) are fitted after the humans' world, each
as a ``[[machines]]`` table of the ``classifier`` kind (:mod:`marketsim.aggregation.machine_fit`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from marketsim.aggregation.arrival_fit import ArrivalFit
from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.curve_choice import CurveChoice, curve_record
from marketsim.aggregation.machine_fit import MachineFit
from marketsim.aggregation.task_types import TypesFit
from marketsim.aggregation.type_selection import HeldOut, MomentChoice, noise_kept
from marketsim.policies.registry import POLICIES, market_problem
from marketsim.scenario.market_specs import HeaderSpec
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.scenario.validation import validate
from marketsim.workers.confusion import ConfusionWorkers

#: Replicates the written scenario asks for (the acceptance check's number).
REPLICATES = 10
#: Gold questions of the explore-exploit arm (no other arm asks for any: rate 0).
GOLD_COUNT = 30
#: Digits a probability is written with (rows then sum to 1 within the parser's 1e-6).
DIGITS = 9
#: Every arm's inference: Dawid–Skene with the class prior re-estimated, as it is run on the
#: real labels (a requester does not know the prior; the market's default, the scenario's
#: true prior, made the twin's D&S 3.6 points better than the real one on ZenCrowd_in's
#: 78/22 classes).
INFERENCE = {"method": "ds", "class_prior": "estimate"}

#: A candidate world: one matrix per worker (with task effects) or a mixture of task types.
World = ConfusionFit | TypesFit


@dataclass(frozen=True)
class Calibration:
    """What the written scenario is made of: the data's sizes, class prior and each worker's
    labels, and every candidate world fitted."""

    name: str
    n_tasks: int
    n_classes: int
    n_labels: int
    prior: np.ndarray
    #: Each worker's labels in the file (whole numbers summing to ``n_labels``): the written
    #: twin's arrival deck (``[workers.arrivals] weights`` with ``order = "deck"``).
    worker_labels: np.ndarray
    fits: tuple[ConfusionFit, ...]
    truth_source: str
    #: The file's labels per task as ``(labels, tasks)`` pairs, increasing: what the "as
    #: collected" arm gives its tasks (``fixed-overlap``'s ``overlaps``; one count: uniform,
    #: whose even rounds give every task exactly that many, as when the acceptance was met).
    labels_per_task: tuple[tuple[int, int], ...]
    #: The arrival process fitted to the file's time column (``None``: the file has none).
    arrivals: ArrivalFit | None = None
    #: The mixtures of task types fitted (2 to 4 types; none: not tried).
    types: tuple[TypesFit, ...] = ()
    #: The number of task types asked for (``calibrate --task-types K``); None: chosen.
    forced_types: int | None = None
    #: The cross-validation that chose the number of types (None: not run).
    held_out: HeldOut | None = None
    #: The choice by the twins' simulated errors (None: not run; with neither, by BIC).
    moments: MomentChoice | None = None
    #: The crowd-shrunk worlds (:func:`~marketsim.aggregation.crowd_worlds.crowd_worlds`, then
    #: those with difficulty estimated on the design curve, :mod:`~marketsim.aggregation.
    #: curve_difficulty`): candidates listed with their BIC, chosen only on the design curve
    #: (docs/explanation/models/calibration/calibrate.md).
    crowd_fits: tuple[ConfusionFit, ...] = ()
    #: The candidate written, by index (None: the lowest BIC of the eligible ones).
    pick: int | None = None
    #: The choice on the design curve that set ``pick`` (None: not made).
    curve: CurveChoice | None = None
    #: The models of a mixed file, each fitted as a ``[[machines]]`` table (none: humans only).
    machines: tuple[MachineFit, ...] = ()
    #: The arrivals written: drawn independently by each worker's share of the labels, as the
    #: candidate worlds run while one is chosen, or (``True``, the scenario ``calibrate``
    #: writes: :func:`~marketsim.study.twin_curve.written_twin`) a deck of their labels.
    deck: bool = False

    def __post_init__(self) -> None:
        labels = np.asarray(self.worker_labels)
        if labels.dtype.kind not in "iu" or int(labels.sum()) != self.n_labels:
            raise ValueError(f"worker_labels must be whole counts summing to the {self.n_labels} "
                             f"labels (got {labels.dtype} summing to {labels.sum()})")

    @property
    def difficulty_world(self) -> ConfusionFit:
        """The humans' world a model's ``rho`` is fitted against: the chosen one when it has
        a task difficulty, else the one-matrix world with difficulty of lowest BIC (the twin's
        humans then find every task as hard, and ``rho`` is unread:
        docs/explanation/models/machines.md)."""
        chosen = self.chosen
        if isinstance(chosen, ConfusionFit) and chosen.sigma > 0:
            return chosen
        hard = [f for f in self.fits if f.with_difficulty]
        return min(hard or self.fits, key=lambda f: f.bic)

    @property
    def candidates(self) -> tuple[World, ...]:
        """Every world fitted: the one-matrix worlds, the crowd-shrunk ones (those with
        difficulty on the design curve last), then the task-type mixtures."""
        return (*self.fits, *self.crowd_fits, *self.types)

    @property
    def n_types(self) -> int | None:
        """The number of task types the world has: asked for, else chosen by the twins'
        errors or by cross-validation; None: any (the lowest BIC of all candidates)."""
        if self.forced_types is not None:
            return self.forced_types
        if self.moments is not None:
            return self.moments.chosen
        return None if self.held_out is None else self.held_out.chosen

    @property
    def judged_types(self) -> tuple[int, ...]:
        """The numbers of task types whose worlds the design curve judges: the one asked for
        or chosen, and those the twins' errors did not decide against
        (:func:`~marketsim.aggregation.type_selection.noise_kept`: nearer the real errors by
        more than the margin, within the replicates' noise); empty: any."""
        wanted = self.n_types
        if wanted is None:
            return ()
        kept = () if self.forced_types is not None or self.moments is None else \
            noise_kept(self.moments)
        return (wanted, *kept)

    @property
    def eligible(self) -> tuple[int, ...]:
        """The candidates (indices) with the numbers of task types asked for or chosen
        (:attr:`judged_types`; the crowd-shrunk worlds have one type), and always those with
        task difficulty estimated on the design curve (the number of types was chosen without
        them: the other way to give a crowd's labels the noise they share)."""
        judged, n_one = self.judged_types, len(self.fits) + len(self.crowd_fits)
        ones = tuple(range(n_one))
        if not judged:
            return tuple(range(len(self.candidates)))
        typed = tuple(n_one + i for i, f in enumerate(self.types) if f.n_types in judged)
        if 1 in judged:
            return (*ones, *typed)
        on_curve = tuple(len(self.fits) + i for i, f in enumerate(self.crowd_fits)
                         if f.on_curve)
        return (*typed, *on_curve) if typed else ones

    @property
    def chosen(self) -> World:
        """The world the scenario uses: ``pick`` (chosen on the design curve), else the
        candidate with the lowest BIC (the first of equals, so a one-matrix world wins a tie)
        among the eligible ones but the crowd-shrunk worlds (their BIC is of the marginal
        likelihood: listed, chosen only on the curve)."""
        if self.pick is not None:
            return self.candidates[self.pick]
        crowd = range(len(self.fits), len(self.fits) + len(self.crowd_fits))
        return min((self.candidates[i] for i in self.eligible if i not in crowd),
                   key=lambda f: f.bic)


def labels_per_task(tasks: np.ndarray, n_tasks: int) -> tuple[tuple[int, int], ...]:
    """A file's labels per task as ``(labels, tasks)`` pairs, increasing (``tasks``: each
    label's task)."""
    counts, how_many = np.unique(np.bincount(tasks, minlength=n_tasks), return_counts=True)
    return tuple((int(c), int(n)) for c, n in zip(counts, how_many, strict=True))


def _round(values: np.ndarray, digits: int = 6) -> list[float]:
    return [float(round(float(v), digits)) for v in values]


def _rows(matrix: np.ndarray) -> list[list[float]]:
    """A stochastic matrix as rows of rounded probabilities (each still summing to 1)."""
    out = []
    for row in np.asarray(matrix, dtype=np.float64):
        r = np.round(row / row.sum(), DIGITS)
        r[int(np.argmax(r))] += 1.0 - r.sum()
        out.append([float(round(float(v), DIGITS)) for v in r])
    return out


def world_table(fit: World) -> dict[str, Any]:
    """``[workers.confusion]`` of a fitted world (the task effects only where fitted)."""
    table: dict[str, Any] = {"design": "per-worker"}
    if isinstance(fit, TypesFit):
        table["type_shares"] = _rows(fit.shares)
        table["type_matrices"] = [[_rows(m) for m in per_type] for per_type in fit.matrices]
        return table
    if fit.sigma > 0:
        table["sigma"] = float(round(fit.sigma, 6))
    if not np.allclose(fit.lookalike, np.eye(fit.lookalike.shape[0])):
        table["lookalike"] = _rows(fit.lookalike)
    if fit.follow < 1.0:
        table["lookalike_follow"] = float(round(fit.follow, 6))
    if fit.pull is not None:
        table |= {"pull": _rows(fit.pull), "pull_strengths": _round(np.array(
            fit.pull_strengths)), "pull_weights": _rows(np.array([fit.pull_weights]))[0]}
    table["matrices"] = [_rows(m) for m in fit.confusion]
    return table


def scenario_document(cal: Calibration, seed: int) -> dict[str, Any]:
    """The scenario as a TOML document."""
    edges = cal.n_labels
    prior = cal.prior / cal.prior.sum()
    arrivals: dict[str, Any] = {
        "rate": 1.0 if cal.arrivals is None else float(f"{cal.arrivals.rate:.9g}"),
        "weights": [int(c) for c in cal.worker_labels] if cal.deck
        else _round(cal.worker_labels / cal.n_labels, 9)}
    if cal.deck:
        arrivals["order"] = "deck"
    overlaps = [[labels, tasks] for labels, tasks in cal.labels_per_task]
    arm = {"policy": "uniform" if len(overlaps) == 1 else {  # even rounds: the one count
        "name": "fixed-overlap", "overlaps": overlaps}, "inference": INFERENCE}
    others = [{"name": name, "policy": name, "inference": INFERENCE}
              for name in ("entropy-greedy", "explore-exploit")
              if not market_problem(POLICIES[name], False, cal.n_classes)]
    return {
        "scenario": {"name": cal.name, "seed": seed, "replicates": REPLICATES},
        "tasks": {"count": cal.n_tasks, "classes": cal.n_classes, "prior": _round(prior, 12)},
        "workers": {
            "count": int(cal.worker_labels.size), "model": ConfusionWorkers.name,
            "arrivals": arrivals,
            str(ConfusionWorkers.table): world_table(cal.chosen),
        },
        "budget": {"edges": edges, "initial": "one-per-task", "batch": cal.n_tasks},
        "gold": {"count": GOLD_COUNT, "rate": 0.0},
        "arms": [
            {"name": "as collected", **arm, "initial": "one-per-task"},
            *others,
        ],
        **({"machines": [m.table() for m in cal.machines]} if cal.machines else {}),
    }


def fit_record(cal: Calibration) -> dict[str, Any]:
    """The world's part of ``<out>.fit.json``: the chosen world and every candidate."""
    chosen = cal.chosen
    if isinstance(chosen, TypesFit):
        world = {"difficulty_sigma": 0.0, "lookalike": np.eye(cal.n_classes).tolist(),
                 "task_types": chosen.n_types, "type_shares": chosen.shares.tolist()}
    else:
        world = {"difficulty_sigma": chosen.sigma, "lookalike": chosen.lookalike.tolist(),
                 "task_types": 1, "type_shares": None}
    held = cal.held_out
    populations = [f for f in cal.crowd_fits if f.crowd is not None]
    if populations:  # what design = "crowd" reads, for a new crowd of the same kind
        crowd = min(populations, key=lambda f: f.bic).crowd
        assert crowd is not None
        world |= {"crowd_matrix": crowd.matrix.tolist(),
                  "crowd_concentration": crowd.concentration}
    return {
        "world": chosen.name, **world,
        "candidates": [{"world": f.name, "log_likelihood": f.log_likelihood,
                        "parameters": f.n_params, "bic": f.bic} for f in cal.candidates],
        "held_out": None if held is None else {
            "folds": len(held.per_fold[0]) if held.per_fold else 0,
            "log_likelihood_per_types": list(held.totals),
            "per_fold": [list(row) for row in held.per_fold], "gain": held.gain,
            "standard_error": held.standard_error, "task_types": held.chosen,
            "note": held.note},
        "simulated_moments": None if cal.moments is None else {
            "replicates": cal.moments.replicates,
            "real_majority_vote_error": cal.moments.real[0],
            "real_dawid_skene_error": cal.moments.real[1],
            "twin_majority_vote_error_per_types": [v for v, _ in cal.moments.twin],
            "twin_dawid_skene_error_per_types": [d for _, d in cal.moments.twin],
            "twin_dawid_skene_sd_per_types": list(cal.moments.twin_sd),
            "discrepancy_points_per_types": list(cal.moments.discrepancy),
            "task_types": cal.moments.chosen, "note": cal.moments.note},
        "design_curve": None if cal.curve is None else curve_record(cal.curve),
        **({"machines": machines_record(cal)} if cal.machines else {})}


def machines_record(cal: Calibration) -> dict[str, Any]:
    """The models' part of ``<out>.fit.json``: the humans' world ``rho`` was fitted against
    and each model's fitted options, the answers they were fitted from and its measures."""
    world = cal.difficulty_world
    return {"humans_world": world.name, "humans_difficulty_sigma": world.sigma,
            "rho_read_by_twin": world is cal.chosen,
            "models": [{**asdict(m), "implied_ece": m.implied_ece} for m in cal.machines]}


def check_header(table: dict[str, Any]) -> None:
    """Values of the ``[scenario]`` table (``name``, ``seed``) validated as the parser will
    validate the written file: ``calibrate`` checks its ``--name`` and ``--seed`` with this
    before it fits anything. InputError naming the key."""
    validate(HeaderSpec, {**table, "replicates": REPLICATES}, "", prefix=("scenario",))


def check_text(text: str, source: str) -> Scenario:
    """The written text parsed and validated as a scenario (what ``run`` would read)."""
    import tomllib

    return parse_scenario(tomllib.loads(text), source)
