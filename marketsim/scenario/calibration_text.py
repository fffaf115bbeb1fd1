"""The words of the scenario ``marketsim calibrate`` writes: its comment header (the command,
every candidate world with its log-likelihood and BIC, how the number of task types and the
world were chosen, the labels per task and the arrival rate) and the one-line summary the
command prints, then the file itself (:func:`calibrated_text`: the header above the document
of :func:`~marketsim.scenario.calibration.scenario_document`)."""

from __future__ import annotations

import numpy as np

from marketsim.aggregation.arrival_fit import POOR_FIT_CV
from marketsim.aggregation.curve_choice import header_lines
from marketsim.aggregation.design_curve import mix_lines, short_task_lines
from marketsim.aggregation.task_types import TypesFit
from marketsim.aggregation.type_selection import MOMENT_MARGIN, HeldOut, MomentChoice
from marketsim.scenario.calibration import Calibration, World, scenario_document
from marketsim.scenario.toml_out import comment, dumps

#: How the written twin's arrivals are drawn (``Calibration.deck``).
_DECK_LINES = (
    "arrivals from a deck (order = 'deck'): each worker's labels are cards of one deck, so at "
    "the file's budget",
    "  each worker gives exactly their labels, and at fewer labels per task their count is "
    "drawn without replacement;",
    "  the candidates above were compared with independent arrivals by each worker's share, "
    "and the chosen one's",
    "  design curve (printed, and in the .fit.json) was run again with the deck.",
)


def header(cal: Calibration, command: str) -> list[str]:
    """The comment lines at the top of the file: the command, the data, the choices."""
    chosen = cal.chosen
    per_task = cal.n_labels / cal.n_tasks
    k = cal.n_classes
    lines = [
        "Written by marketsim calibrate: a twin of a real crowd, fitted to its labels.",
        f"command: {command}",
        f"data: {cal.n_tasks} tasks, {cal.worker_labels.size} workers, {cal.n_labels} labels "
        f"({per_task:.2f} per task), {k} classes; each task's class from {cal.truth_source}.",
        "world: per-worker confusion matrices (workers.model = 'confusion', design = "
        "'per-worker'): a task of class c",
        "  looks like class s ~ lookalike[c] to every worker (look-alike tasks: errors the "
        "crowd shares), has inverse",
        "  difficulty beta with log beta ~ N(0, sigma^2), and worker j answers l with "
        "probability pi_j[s, l]^beta, normalised.",
        "  crowd-shrunk worlds: each pi_j[c] ~ Dirichlet(concentration * crowd[c]) around one "
        "crowd matrix (Paun et al. 2018),",
        "  fitted by empirical Bayes; pi_j is the worker's posterior mean (listed, not chosen "
        "by BIC), or, 'the crowd's spread",
        "  restored', its deviation from the crowd scaled by sqrt((concentration + n) / n) "
        "for n labels (Louis 1984).",
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
    if any(f.pull is not None for f in cal.crowd_fits):
        lines += ["  ambiguous tasks (Tian & Zhu 2015): a task of class c pulls toward p ~ "
                  "pull[c] with a strength a of its own,",
                  "  and every worker answers p with probability a, else from row c (fitted "
                  "by EM, the rows shrunk by one label or",
                  "  toward the crowd's population; its share and strength scaled on the "
                  "design curve)."]
    if cal.forced_types is not None:
        among = f" among those with --task-types {cal.forced_types}"
    elif cal.moments is not None:
        among = (f" among those with {' or '.join(map(str, cal.judged_types))} type(s), "
                 "chosen by the errors each number of types' twin reproduces"
                 + (" (more types where they were nearer those errors, within the "
                    "replicates' noise)" if len(cal.judged_types) > 1 else ""))
    elif cal.held_out is not None:
        among = f" among those with {cal.held_out.chosen} type(s), chosen by held-out likelihood"
    else:
        among = ""
    how = "nearest the design curve" if cal.curve is not None else "lowest BIC"
    lines.append("candidate worlds (fitted by maximum marginal likelihood of the labels given "
                 f"the tasks' classes; {how} chosen{among}):")
    width = max(len(f.name) for f in cal.candidates)
    for f in cal.candidates:
        mark = "  <- chosen" if f is chosen else ""
        lines.append(f"  {f.name:<{width}}  log-lik {f.log_likelihood:10.2f}  "
                     f"params {f.n_params:5d}  BIC {f.bic:10.2f}{_extra(f, k)}{mark}")
    lines += held_out_lines(cal.held_out) + moment_lines(cal.moments)
    lines += [] if cal.curve is None else [
        *header_lines(cal.curve), *short_task_lines(cal.curve.real.ks, cal.labels_per_task),
        *mix_lines(cal.curve.real)]
    lines += [
        "kept per worker, not summarised (nor as communities, which would draw new members "
        "each replicate): each",
        "  worker's matrix ([workers.confusion] matrices) and labels in the file "
        "([workers.arrivals] weights), because",
        "  the question is what *this* crowd would do with another budget or policy.",
        *(_DECK_LINES if cal.deck else ()),
        *_per_task_lines(cal.labels_per_task),
        "inference: Dawid-Skene with the class prior re-estimated (class_prior = 'estimate'), "
        "as on the real labels:",
        "  the requester does not know the prior.",
        "arms: 'as collected' reproduces how the data were collected; entropy-greedy and "
        "explore-exploit",
        "  (its gold questions: [gold], rate 0, no other arm asks) give the comparison; raise "
        "budget.edges",
        "  to ask what more labels would buy.",
    ]
    return lines + time_lines(cal) + machine_lines(cal)


def machine_lines(cal: Calibration) -> list[str]:
    """The header's account of a mixed file's models: how each was fitted, its options."""
    if not cal.machines:
        return []
    world = cal.difficulty_world
    lines = [
        "models (the file's source column): each a [[machines]] table of kind 'classifier', "
        "fitted by maximum likelihood",
        "  under the classifier's own model (docs/explanation/models/machines.md) after the "
        "humans' world, on its "
        "first answer per task:",
        "  accuracy, rho (its errors' correlation with the humans' task difficulty, from the "
        f"world {world.name!r},",
        f"  sigma {world.sigma:.4f}), insight and overconfidence (from its confidences); price, "
        "latency and rate limit",
        "  are not in a label file: set them.",
    ]
    if world is not cal.chosen:
        lines.append("  The chosen world has no task difficulty: the twin's humans find every "
                     "task as hard, so rho is unread.")
    return lines + [f"  {line}" for line in model_summaries(cal)]


def model_summaries(cal: Calibration) -> list[str]:
    """One line per model: its answers, fitted options and measures."""
    lines = []
    for m in cal.machines:
        ece = "" if m.measured_ece is None else f", ECE {m.measured_ece:.3f}"
        implied = m.implied_ece
        fitted_ece = "" if implied is None else f" (calibration error {implied:.3f})"
        changed = f", {m.changed} tasks answered differently when asked again" \
            if m.changed else ""
        lines.append(
            f"{m.name}: {m.answers} answers ({m.with_confidence} with a confidence; "
            f"{m.repeats} repeats dropped{changed}): accuracy {m.accuracy:.4f}, rho "
            f"{m.rho:.3f}, insight {m.insight:.3f}, overconfidence {m.overconfidence:.3f}"
            f"{fitted_ece}; measured against {m.against}: accuracy {m.measured_accuracy:.4f}"
            f"{ece}")
    return lines


def _per_task_lines(pairs: tuple[tuple[int, int], ...]) -> list[str]:
    """The header's labels per task: one count by uniform's even rounds, several by
    fixed-overlap's overlaps."""
    if len(pairs) == 1:
        return ["labels per task: the 'as collected' arm spends the file's label count with "
                "the uniform policy,",
                "  one label per task first (initial = 'one-per-task'), then rounds that hand "
                "every task out once",
                f"  (batch = tasks.count), so every task gets {pairs[0][0]}, as in the file."]
    return ["labels per task: the 'as collected' arm gives the tasks the file's labels per "
            "task (fixed-overlap's overlaps:",
            f"  {_spread(pairs)}), one label per task first (initial = 'one-per-task'), the "
            "rest in task",
            "  order to workers who have not labelled the task: the file's label count in all."]


def _spread(pairs: tuple[tuple[int, int], ...]) -> str:
    """A labels-per-task distribution in a few words: every pair up to four, else the
    range and the commonest count."""
    if len(pairs) <= 4:
        return ", ".join(f"{tasks} task(s) get {labels}" for labels, tasks in pairs)
    common = max(pairs, key=lambda p: p[1])
    return (f"{pairs[0][0]} to {pairs[-1][0]} labels a task, {common[1]} task(s) get "
            f"{common[0]}")


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
    crowd = "" if fit.crowd is None else f", concentration {fit.crowd.concentration:.2f}"
    return crowd + (f", sigma {fit.sigma:.4f}" if fit.sigma > 0 else "") + (
        ", lookalike diagonal " + " ".join(f"{v:.3f}" for v in np.diag(fit.lookalike))
        if not np.allclose(fit.lookalike, np.eye(k)) else "") + (
        f", each label following it with probability {fit.follow:.3f}" if fit.follow < 1
        else "") + (
        "" if fit.pull is None else ", pull share " + " ".join(
            f"{1 - v:.3f}" for v in np.diag(fit.pull)) + ", mean strength "
        f"{np.dot(fit.pull_strengths, fit.pull_weights):.2f}")


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
    if cal.machines:
        text += "\nmodels fitted as [[machines]]:\n" + "\n".join(
            f"  {line}" for line in model_summaries(cal))
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
