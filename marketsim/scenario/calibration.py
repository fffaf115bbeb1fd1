"""The scenario ``marketsim calibrate`` writes: a fitted crowd (:mod:`marketsim.aggregation.
confusion_fit`) as a scenario file that runs as it is, its choices explained in its comments.

The world is per-worker confusion matrices (``workers.model = "confusion"``, ``design =
"per-worker"``), kept **per worker**: every worker's matrix (``[workers.confusion] matrices``)
and share of the labels (``[workers.arrivals] weights``), so the twin is this crowd rather than
a distribution fitted to it (a requester asks what would have happened with *their* workers;
the budget can then be raised beyond the data, the same workers working in the same
proportions). Of the candidate worlds (one ability or a full matrix per worker; with or without
look-alike tasks; with or without task difficulty; or a mixture of 2 to 4 task types, each
worker with one matrix per type: :mod:`marketsim.aggregation.task_types`) the number of task
types is chosen (:mod:`marketsim.aggregation.type_selection`: by the errors each number's twin
reproduces where the file has a truth, else by held-out likelihood), then the world with the
lowest BIC among those with that many types is written.
When the label file has a time column, ``[workers.arrivals] rate`` is the labels' Poisson rate
(:mod:`marketsim.aggregation.arrival_fit`) in the file's time unit, which becomes the unit of
simulated time; without one, the rate is 1 (simulated time then means nothing real).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.aggregation.arrival_fit import POOR_FIT_CV, ArrivalFit
from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.task_types import TypesFit
from marketsim.aggregation.type_selection import MOMENT_MARGIN, HeldOut, MomentChoice
from marketsim.policies.registry import POLICIES, market_problem
from marketsim.scenario.market_specs import HeaderSpec
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.scenario.toml_out import comment, dumps
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
    """What the written scenario is made of: the data's sizes, class prior and label shares,
    and every candidate world fitted."""

    name: str
    n_tasks: int
    n_classes: int
    n_labels: int
    prior: np.ndarray
    share: np.ndarray
    fits: tuple[ConfusionFit, ...]
    truth_source: str
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

    @property
    def candidates(self) -> tuple[World, ...]:
        """Every world fitted: the one-matrix worlds, then the task-type mixtures."""
        return (*self.fits, *self.types)

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
    def chosen(self) -> World:
        """The world the scenario uses: the candidate with the lowest BIC (the first of
        equals, so a one-matrix world wins a tie) among those with the number of task types
        asked for or chosen, if any."""
        eligible: tuple[World, ...] = self.candidates
        wanted = self.n_types
        if wanted == 1:
            eligible = self.fits
        elif wanted is not None:
            eligible = tuple(f for f in self.types if f.n_types == wanted) or self.fits
        return min(eligible, key=lambda f: f.bic)


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
    table["matrices"] = [_rows(m) for m in fit.confusion]
    return table


def scenario_document(cal: Calibration, seed: int) -> dict[str, Any]:
    """The scenario as a TOML document."""
    edges = cal.n_labels
    prior = cal.prior / cal.prior.sum()
    arm = {"policy": "uniform", "inference": INFERENCE}
    others = [{"name": name, "policy": name, "inference": INFERENCE}
              for name in ("entropy-greedy", "explore-exploit")
              if not market_problem(POLICIES[name], False, cal.n_classes)]
    return {
        "scenario": {"name": cal.name, "seed": seed, "replicates": REPLICATES},
        "tasks": {"count": cal.n_tasks, "classes": cal.n_classes, "prior": _round(prior, 12)},
        "workers": {
            "count": int(cal.share.size), "model": ConfusionWorkers.name,
            "arrivals": {"rate": 1.0 if cal.arrivals is None else float(f"{cal.arrivals.rate:.9g}"),
                         "weights": _round(cal.share, 9)},
            str(ConfusionWorkers.table): world_table(cal.chosen),
        },
        "budget": {"edges": edges, "initial": "one-per-task", "batch": cal.n_tasks},
        "gold": {"count": GOLD_COUNT, "rate": 0.0},
        "arms": [
            {"name": "as collected", **arm, "initial": "one-per-task"},
            *others,
        ],
    }


def header(cal: Calibration, command: str) -> list[str]:
    """The comment lines at the top of the file: the command, the data, the choices."""
    chosen = cal.chosen
    per_task = cal.n_labels / cal.n_tasks
    k = cal.n_classes
    lines = [
        "Written by marketsim calibrate: a twin of a real crowd, fitted to its labels.",
        f"command: {command}",
        f"data: {cal.n_tasks} tasks, {cal.share.size} workers, {cal.n_labels} labels "
        f"({per_task:.2f} per task), {k} classes; each task's class from {cal.truth_source}.",
        "world: per-worker confusion matrices (workers.model = 'confusion', design = "
        "'per-worker'): a task of class c",
        "  looks like class s ~ lookalike[c] to every worker (look-alike tasks: errors the "
        "crowd shares), has inverse",
        "  difficulty beta with log beta ~ N(0, sigma^2), and worker j answers l with "
        "probability pi_j[s, l]^beta, normalised.",
    ]
    if cal.types:
        lines += [
            "  or task types (Welinder et al. 2010): a task of class c has type z ~ "
            "type_shares[c] (or one row for every class),",
            "  and worker j answers it from row c of their own matrix for that type, "
            "type_matrices[z][j]; each type's rows",
            "  shrunk toward the worker's pooled matrix (EM from seeded starts; one type is "
            "the per-worker world above).",
        ]
    if cal.forced_types is not None:
        among = f" among those with --task-types {cal.forced_types}"
    elif cal.moments is not None:
        among = (f" among those with {cal.moments.chosen} type(s), chosen by the errors "
                 "each number of types' twin reproduces")
    elif cal.held_out is not None:
        among = f" among those with {cal.held_out.chosen} type(s), chosen by held-out likelihood"
    else:
        among = ""
    lines.append("candidate worlds (fitted by maximum marginal likelihood of the labels given "
                 f"the tasks' classes; lowest BIC chosen{among}):")
    width = max(len(f.name) for f in cal.candidates)
    for f in cal.candidates:
        mark = "  <- chosen" if f is chosen else ""
        lines.append(f"  {f.name:<{width}}  log-lik {f.log_likelihood:10.2f}  "
                     f"params {f.n_params:5d}  BIC {f.bic:10.2f}{_extra(f, k)}{mark}")
    lines += held_out_lines(cal.held_out) + moment_lines(cal.moments)
    lines += [
        "kept per worker, not summarised (nor as communities, which would draw new members "
        "each replicate): each",
        "  worker's matrix ([workers.confusion] matrices) and share of the labels "
        "([workers.arrivals] weights), because",
        "  the question is what *this* crowd would do with another budget or policy.",
        "labels per task: the 'as collected' arm spends the file's label count with the "
        "uniform policy,",
        "  one label per task first (initial = 'one-per-task'), then one round of distinct "
        "tasks per refresh",
        f"  (batch = tasks.count), so every task gets about {per_task:.2f}.",
        "inference: Dawid-Skene with the class prior re-estimated (class_prior = 'estimate'), "
        "as on the real labels:",
        "  the requester does not know the prior.",
        "arms: 'as collected' reproduces how the data were collected; entropy-greedy and "
        "explore-exploit",
        "  (its gold questions: [gold], rate 0, no other arm asks) give the comparison; raise "
        "budget.edges",
        "  to ask what more labels would buy.",
    ]
    return lines + time_lines(cal)


def held_out_lines(held: HeldOut | None) -> list[str]:
    """The header's account of the number of task types chosen by cross-validation."""
    if held is None:
        return []
    if not held.totals:
        return [f"task types by held-out likelihood: {held.note}."]
    per_k = ", ".join(f"{k} {v:.2f}" for k, v in enumerate(held.totals, start=1))
    return [f"task types by held-out likelihood ({len(held.per_fold[0])}-fold cross-validation "
            "over tasks, shares shared by the classes;",
            "  more types only when their gain over one type exceeds one standard error): "
            "summed held-out log-lik per K:",
            f"  {per_k}; {held.note}."]


def moment_lines(moments: MomentChoice | None) -> list[str]:
    """The header's account of the number of task types chosen by the twins' errors."""
    if moments is None:
        return []
    real_vote, real_ds = moments.real
    per_k = "; ".join(f"{k}: {100 * v:.2f} / {100 * d:.2f} (gap {g:.2f})" for k, ((v, d), g)
                      in enumerate(zip(moments.twin, moments.discrepancy, strict=True), start=1))
    return [f"task types by the errors each one's twin reproduces ({moments.replicates} "
            "replicates after the scenario's own; majority vote / Dawid-Skene, %,",
            f"  real {100 * real_vote:.2f} / {100 * real_ds:.2f}; summed gap in points; more types "
            "only for a gap smaller by over two standard errors, at least "
            f"{MOMENT_MARGIN:g}):",
            f"  {per_k}; {moments.note}."]


def _extra(fit: World, k: int) -> str:
    """What a candidate's line adds: its difficulty and look-alikes, or its type shares."""
    if isinstance(fit, TypesFit):
        return ", type shares " + " / ".join(" ".join(f"{v:.3f}" for v in row)
                                             for row in fit.shares)
    return (f", sigma {fit.sigma:.4f}" if fit.sigma > 0 else "") + (
        ", lookalike diagonal " + " ".join(f"{v:.3f}" for v in np.diag(fit.lookalike))
        if not np.allclose(fit.lookalike, np.eye(k)) else "")


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
            "task_types": cal.moments.chosen, "note": cal.moments.note}}


def types_summary(cal: Calibration) -> str:
    """One line for the printed fit: the BIC and log-likelihood of 1 type (the best
    one-matrix world) and of each mixture of task types."""
    one = min(cal.fits, key=lambda f: f.bic)
    parts = [f"1 type ({one.name}) BIC {one.bic:.1f}, log-lik {one.log_likelihood:.1f}"]
    parts += [f"{f.name} BIC {f.bic:.1f}, log-lik {f.log_likelihood:.1f}" for f in cal.types]
    text = "task types: " + "; ".join(parts)
    held = cal.held_out
    if held is not None:
        text += "\nheld-out log-lik per K: " + (", ".join(
            f"{k}: {v:.1f}" for k, v in enumerate(held.totals, start=1)) or "not run") \
            + f" ({held.note})"
    if cal.moments is not None:
        text += "\ntwins' errors per K (majority vote / Dawid-Skene): " + ", ".join(
            f"{k}: {100 * v:.2f} / {100 * d:.2f} %" for k, (v, d)
            in enumerate(cal.moments.twin, start=1)) + f" ({cal.moments.note})"
    return text


def time_lines(cal: Calibration) -> list[str]:
    """The header's account of simulated time: the fitted arrival rate and its unit, or that
    the file had no times."""
    fit = cal.arrivals
    if fit is None:
        return []
    unit = fit.unit
    what = ("ISO-8601 date-times, read in hours" if fit.kind == "date-times"
            else "numbers, read in their own unit")
    g = fit.gaps
    lines = [
        f"time: 1 unit of simulated time = 1 {unit} of the file (column {fit.column!r}: {what}).",
        f"  [workers.arrivals] rate = {fit.rate:.6g} labels per {unit}: the maximum-likelihood "
        f"Poisson rate, {g.n_labels - 1} gaps",
        f"  over the labels' span of {g.span:.6g} {unit}s; the real gaps have mean {g.mean:.6g} "
        f"and coefficient of variation {g.cv:.3f}",
        "  (a Poisson process has 1)"
        + (f": above {POOR_FIT_CV:g}, the real crowd is bursty and the Poisson fit is poor — the "
           "twin gets the" if fit.poor else "."),
    ]
    if fit.poor:
        lines.append("  long-run rate right, not the bursts, so its times to a target are "
                     "those of a steady crowd.")
    lines += [
        "  The initial graph (one label per task) is in place at time 0, so the twin's clock "
        "starts once every",
        f"  task has a label: its times to a target leave out the ~{cal.n_tasks / fit.rate:.6g} "
        f"{unit}s ({cal.n_tasks} labels / rate)",
        "  the real crowd took for those.",
    ]
    return lines


def calibrated_text(cal: Calibration, command: str, seed: int = 0) -> str:
    """The scenario file: comment header, then the document (checked to validate)."""
    text = dumps(scenario_document(cal, seed))
    lines = "".join(f"{comment(line)}\n" for line in header(cal, command))
    return lines + "\n" + text


def check_header(table: dict[str, Any]) -> None:
    """Values of the ``[scenario]`` table (``name``, ``seed``) validated as the parser will
    validate the written file: ``calibrate`` checks its ``--name`` and ``--seed`` with this
    before it fits anything. InputError naming the key."""
    validate(HeaderSpec, {**table, "replicates": REPLICATES}, "", prefix=("scenario",))


def check_text(text: str, source: str) -> Scenario:
    """The written text parsed and validated as a scenario (what ``run`` would read)."""
    import tomllib

    return parse_scenario(tomllib.loads(text), source)
