"""The crowd of a run in words, for ``report.md``'s "Setup": the world each replicate draws
(its worker model's own words, :meth:`~marketsim.workers.base.WorkerModel.describe`, with the
numbers of the run's resolved scenario), a replayed data set, and the workers' arrivals,
labelling times and dynamics.

Every value is read from the run's resolved scenario as plain data (``Scenario.model_dump``);
a key left out reads as the default the scenario's model declares (:func:`setting`), so these
words never re-declare a default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from marketsim.report.formatting import num
from marketsim.scenario.crowd_specs import (
    AbilitySpec,
    ArrivalsSpec,
    FeaturesSpec,
    ServiceSpec,
    TaskMeansSpec,
    TasksSpec,
)
from marketsim.workers.base import WorkerModel
from marketsim.workers.dynamics import DynamicsSpec
from marketsim.workers.registry import WORKER_MODELS, worker_model
from marketsim.workers.words import pct

Record = Mapping[str, Any]


def setting(table: Any, spec: type[BaseModel], key: str) -> Any:
    """``key`` of a recorded table, or the default ``spec`` declares for it when the record
    leaves it out (keys recorded only when set)."""
    if isinstance(table, Mapping) and key in table:
        return table[key]
    return spec.model_fields[key].default


def table_of(workers: Record, key: str) -> Record:
    """The recorded sub-table ``workers[key]`` (empty when it is not recorded)."""
    value = workers.get(key)
    return value if isinstance(value, Mapping) else {}


def g(x: Any) -> str:
    """A number as the scenario gives it (``0.25``, ``2``, ``1e-05``); anything else as text."""
    return f"{x:g}" if isinstance(x, int | float) and not isinstance(x, bool) else str(x)


def listed(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def recorded_model(workers: Record) -> WorkerModel | None:
    """The worker model, with its options, of a run's recorded ``workers``
    (``Scenario.to_dict()``: a model's ``recorded_flat`` key written flat, a table left out at
    its defaults); ``None`` for a model this version does not know."""
    name = workers.get("model")
    if name is not None and name not in WORKER_MODELS:
        return None
    cls = worker_model(name)
    if cls.table is None:
        return cls()
    table = dict(table_of(workers, cls.table))
    if cls.recorded_flat is not None and cls.recorded_flat in workers:
        table[cls.recorded_flat] = workers[cls.recorded_flat]
    known = {k: v for k, v in table.items() if k in cls.Options.model_fields}
    # as recorded (every key, those its variant does not read included): read, not re-checked
    return cls(cls.Options.model_construct(**known))


def world_text(setup: Record) -> str:
    """The world each replicate draws, in the words of its worker model, with the resolved
    scenario's numbers."""
    tasks = setup.get("tasks") or {}
    workers = setup.get("workers") or {}
    model = recorded_model(workers)
    if model is None:
        return (f"Each replicate draws a fresh world of **{num(tasks.get('count'))} tasks** and "
                f"**{num(workers.get('count'))} workers** who answer under the "
                f"{workers.get('model')} model, which this report does not describe.")
    ability = AbilitySpec.model_validate(table_of(workers, "ability"))
    means = TaskMeansSpec.model_validate(table_of(tasks, "means"))
    k = setting(tasks, TasksSpec, "classes")
    return model.describe(num(tasks.get("count")), num(workers.get("count")), k,
                          tuple(tasks.get("prior") or ()), ability, means) + features_text(tasks)


def replay_text(setup: Record) -> str:
    """A replayed data set: the recorded answers, not a simulated crowd."""
    replay = setup.get("replay") or {}
    tasks, workers = setup.get("tasks") or {}, setup.get("workers") or {}
    name = (f"the reference data set *{replay['dataset']}*" if replay.get("dataset") else
            f"the labels file `{replay.get('labels')}` (truth `{replay.get('truth')}`)")
    return (f"The crowd is not simulated: the run replays {name}, **{num(tasks.get('count'))} "
            f"tasks** with **{tasks.get('classes')} classes** and **{num(workers.get('count'))} "
            "workers**. An arriving worker can only be given a task they answered in the file, "
            "and gives the answer recorded there; the error is measured against the data set's "
            "truth (tasks without one are left out). Every replicate replays the same answers "
            "in a new order of arrivals.")


def arrivals_text(workers: Record) -> str:
    """Arrival rate and, when given, each worker's share of the arrivals."""
    rate = setting(table_of(workers, "arrivals"), ArrivalsSpec, "rate")
    out = f"Workers arrive at rate {g(rate)} per unit of simulated time"
    weights = setting(table_of(workers, "arrivals"), ArrivalsSpec, "weights")
    if weights:
        low, high = min(weights) / sum(weights), max(weights) / sum(weights)
        spread = (f"equal shares of {pct(low)}" if high - low < 1e-6 else
                  f"shares from {pct(low)} to {pct(high)}")
        out += (f" (an arrival is worker j with probability proportional to their weight, given "
                f"per worker: {spread})")
    return out


def service_text(workers: Record) -> str:
    """How long answers take, each worker's speed and abandonment (``[workers.service]``)."""
    extra = table_of(workers, "service")
    service = setting(extra, ServiceSpec, "mean")
    spread = setting(extra, ServiceSpec, "speed_spread")
    abandon = setting(extra, ServiceSpec, "abandon")
    out = ("answer at once" if not service else
           f"take on average {service:g} units of simulated time per label")
    if spread:
        out += (f", each worker at their own speed (their mean time is {service:g} times a "
                f"log-normal factor of mean 1 and spread {spread:g})")
    if abandon:
        out += (f"; a worker abandons a hand-out with probability {abandon:g} (it is not paid, "
                "and the task goes to the next worker)")
    return out


def dynamics_text(workers: Record) -> str:
    """A sentence on learning, fatigue and drift (``[workers.dynamics]``), or ``""``."""
    dyn = workers.get("dynamics")
    if not isinstance(dyn, Mapping):
        return ""
    learning, labels, fatigue, rest, drift = (setting(dyn, DynamicsSpec, k) for k in (
        "learning", "learning_labels", "fatigue", "rest", "drift"))
    parts = []
    if learning:
        parts.append(f"learn (the logit of their chance of being right rises by up to "
                     f"{learning:g}, 63 % of it after {labels:g} answers)")
    if fatigue:
        parts.append(f"tire (it falls by {fatigue:g} per answer already given in a session"
                     + (f"; a session restarts after {rest:g} time units away)" if rest
                        else ")"))
    if drift:
        parts.append(f"drift (a random walk of it, standard deviation {drift:g} per answer)")
    if not parts:
        return " Workers' dynamics are declared with every coefficient 0."
    return f" Workers change as they work: they {listed(parts)}."


def features_text(tasks: Record) -> str:
    """Binary task features (Jin & Zhang 2010), or ``""``."""
    features = tasks.get("features")
    if not isinstance(features, Mapping):
        return ""
    probs = features.get("probabilities")
    how = ("fixed class-conditional probabilities" if probs else
           f"class-conditional probabilities drawn per replicate uniformly within "
           f"±{setting(features, FeaturesSpec, 'informativeness') / 2:g} of 1/2")
    return (f" Every task also carries {features.get('count')} binary features with {how} "
            "(Jin & Zhang 2010); estimators that take features (ds-features) get them.")
