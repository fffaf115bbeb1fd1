"""The crowd of a run in words, for ``report.md``'s "Setup": the world each replicate draws
(its worker model's own words, :meth:`~marketsim.workers.base.WorkerModel.describe`, with the
numbers of the run's resolved scenario), a replayed data set, and the workers' arrivals,
labelling times and dynamics.

Every value is read from the run's typed resolved scenario (``run.json`` read back as a
:class:`~marketsim.scenario.specs.Scenario`), so these words never re-declare a default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from marketsim.report.formatting import num
from marketsim.scenario.crowd_specs import TaskMeansSpec, TasksSpec, WorkersSpec
from marketsim.scenario.machine_specs import machine_annotator
from marketsim.scenario.specs import Scenario
from marketsim.workers.words import pct

Record = Mapping[str, Any]


def setting(table: Any, spec: type[BaseModel], key: str) -> Any:
    """``key`` of a table given as plain data, or the default ``spec`` declares for it when
    the table leaves it out (a hand-written document, a Python object's settings)."""
    if isinstance(table, Mapping) and key in table:
        return table[key]
    return spec.model_fields[key].default


def g(x: Any) -> str:
    """A number as the scenario gives it (``0.25``, ``2``, ``1e-05``); anything else as text."""
    return f"{x:g}" if isinstance(x, int | float) and not isinstance(x, bool) else str(x)


def listed(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def world_text(setup: Scenario) -> str:
    """The world each replicate draws, in the words of its worker model, with the resolved
    scenario's numbers."""
    tasks, workers = setup.tasks, setup.workers
    return workers.worker_model.describe(
        num(tasks.count), num(workers.count), tasks.classes, tuple(tasks.prior or ()),
        workers.ability, tasks.means or TaskMeansSpec()) + features_text(tasks)


def replay_text(setup: Scenario) -> str:
    """A replayed data set: the recorded answers, not a simulated crowd."""
    replay = setup.replay
    if replay is None:
        return ""
    name = (f"the reference data set *{replay.dataset}*" if replay.dataset else
            f"the labels file `{replay.labels}` (truth `{replay.truth}`)")
    return (f"The crowd is not simulated: the run replays {name}, **{num(setup.tasks.count)} "
            f"tasks** with **{setup.tasks.classes} classes** and "
            f"**{num(setup.workers.count)} workers**. An arriving worker can only be given a "
            "task they answered in the file, and gives the answer recorded there; the error is "
            "measured against the data set's truth (tasks without one are left out). Every "
            "replicate replays the same answers in a new order of arrivals.")


def arrivals_text(workers: WorkersSpec) -> str:
    """Arrival rate and, when given, each worker's share of the arrivals."""
    out = f"Workers arrive at rate {g(workers.arrivals.rate)} per unit of simulated time"
    weights = workers.arrivals.weights
    if weights:
        low, high = min(weights) / sum(weights), max(weights) / sum(weights)
        spread = (f"equal shares of {pct(low)}" if high - low < 1e-6 else
                  f"shares from {pct(low)} to {pct(high)}")
        if workers.arrivals.order == "deck":
            out += (f" (arrivals are the cards of a shuffled deck holding each worker their "
                    f"weight's number of times, reshuffled when used up: {spread})")
        else:
            out += (f" (an arrival is worker j with probability proportional to their weight, "
                    f"given per worker: {spread})")
    return out


def service_text(workers: WorkersSpec) -> str:
    """How long answers take, each worker's speed and abandonment (``[workers.service]``)."""
    service, spread = workers.service.mean, workers.service.speed_spread
    abandon = workers.service.abandon
    out = ("answer at once" if not service else
           f"take on average {service:g} units of simulated time per label")
    if spread:
        out += (f", each worker at their own speed (their mean time is {service:g} times a "
                f"log-normal factor of mean 1 and spread {spread:g})")
    if abandon:
        out += (f"; a worker abandons a hand-out with probability {abandon:g} (it is not paid, "
                "and the task goes to the next worker)")
    return out


def dynamics_text(workers: WorkersSpec) -> str:
    """A sentence on learning, fatigue and drift (``[workers.dynamics]``), or ``""``."""
    dyn = workers.dynamics
    if dyn is None:
        return ""
    parts = []
    if dyn.learning:
        parts.append(f"learn (the logit of their chance of being right rises by up to "
                     f"{dyn.learning:g}, 63 % of it after {dyn.learning_labels:g} answers)")
    if dyn.fatigue:
        parts.append(f"tire (it falls by {dyn.fatigue:g} per answer already given in a session"
                     + (f"; a session restarts after {dyn.rest:g} time units away)" if dyn.rest
                        else ")"))
    if dyn.drift:
        parts.append(f"drift (a random walk of it, standard deviation {dyn.drift:g} per answer)")
    if not parts:
        return " Workers' dynamics are declared with every coefficient 0."
    return f" Workers change as they work: they {listed(parts)}."


def features_text(tasks: TasksSpec) -> str:
    """Binary task features (Jin & Zhang 2010), or ``""``."""
    features = tasks.features
    if features is None:
        return ""
    how = ("fixed class-conditional probabilities" if features.probabilities else
           f"class-conditional probabilities drawn per replicate uniformly within "
           f"±{features.informativeness / 2:g} of 1/2")
    return (f" Every task also carries {features.count} binary features with {how} "
            "(Jin & Zhang 2010); estimators that take features (ds-features) get them.")


def machines_text(setup: Scenario) -> list[str]:
    """The machine annotators a policy may ask beside the crowd, each in its kind's words
    (:meth:`~marketsim.machines.base.MachineAnnotator.describe`); nothing without them."""
    if not setup.machines:
        return []
    n = len(setup.machines)
    who = "one machine annotator" if n == 1 else f"{n} machine annotators"
    head = (f"Beside the human crowd, {who} may be asked (always available, never tired). A "
            "call is a label like a human's: it counts against the labels of the budget, is "
            "paid when it is sent and its answer arrives after the machine's latency; the "
            "`cascade` and `verify` policies ask them, the other policies never do:")
    return [head, "", *(f"- {machine_annotator(m).describe()}" for m in setup.machines), ""]
