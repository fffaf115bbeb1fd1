"""The crowd of a run in words, for ``report.md``'s "Setup": how each worker model answers
(one function per model, with the numbers of the run's resolved scenario), the task effects
of the confusion-matrix models (look-alike tasks, difficulty, task types), GLAD's task
difficulty, a replayed data set, and the workers' arrivals, labelling times and dynamics.

Every value is read from the run's resolved scenario as plain data (``Scenario.model_dump``);
a key left out reads as the default the scenario's model declares (:func:`setting`), so these
words never re-declare a default."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from marketsim.report.formatting import num
from marketsim.scenario.crowd_specs import (
    AbilitySpec,
    ArrivalsSpec,
    FeaturesSpec,
    ServiceSpec,
    TaskMeansSpec,
    WorkersSpec,
)
from marketsim.scenario.dynamics_specs import DynamicsSpec
from marketsim.scenario.worker_models import (
    CommunitiesSpec,
    ConfusionSpec,
    GaussianScoresSpec,
    GladSpec,
    SpammerHammerSpec,
    TaskEffects,
)

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


def pct(x: float) -> str:
    """A probability as a percentage (``21.5 %``)."""
    return f"{100 * x:.3g} %"


def listed(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _mean_diagonal(matrices: Any) -> float | None:
    """The mean chance of the true class over a list of K×K matrices (None if not matrices)."""
    try:
        diag = [m[c][c] for m in matrices for c in range(len(m))]
    except (TypeError, IndexError, KeyError):
        return None
    return sum(diag) / len(diag) if diag else None


def ability_text(workers: Record) -> str:
    """The shifted-Beta draw of each worker's accuracy ``p`` (``[workers.ability]``)."""
    ability = table_of(workers, "ability")
    a, b, low = (setting(ability, AbilitySpec, k) for k in ("alpha", "beta", "low"))
    mean_p = low + (1 - low) * a / (a + b)
    return (f"each worker's accuracy (chance of giving the true class) is drawn once as "
            f"p = {low:g} + {1 - low:g} · Beta({a:g}, {b:g}), so p lies between {low:g} and 1 "
            f"with mean {mean_p:.3f}")


def one_coin_text(workers: Record, k: int) -> str:
    """``one-coin``: right with probability p, else a uniformly chosen wrong class."""
    return (f"{ability_text(workers)}. A one-coin worker gives the true class with probability "
            "p and otherwise a wrong class at random.")


def spammer_hammer_text(workers: Record, k: int) -> str:
    """``spammer-hammer``: perfect or uniformly random workers."""
    share = setting(table_of(workers, "spammer_hammer"), SpammerHammerSpec, "hammer_fraction")
    return (f"each worker is drawn once as a hammer, who always gives the true class, with "
            f"probability {share:g}, else a spammer, who answers uniformly at random.")


def effects_text(table: Record, spec: type[TaskEffects]) -> str:
    """Look-alike tasks and task difficulty of a confusion-matrix model ("" when off)."""
    out = ""
    lookalike = setting(table, spec, "lookalike")
    if lookalike:
        rows = "; ".join(f"class {c + 1} as " + ", ".join(
            f"class {s + 1} {pct(p)}" for s, p in enumerate(row) if p) for c, row in
            enumerate(lookalike))
        out += (" Look-alike tasks: a task of true class c looks like class s to every worker, "
                f"who then answers from row s of their matrix, with probability ({rows}).")
    sigma = setting(table, spec, "sigma")
    if sigma:
        out += (f" Tasks differ in difficulty: each task's β is drawn once with log β ~ "
                f"N(0, sigma²), sigma = {sigma:g}, and a worker answers l with probability "
                "proportional to their matrix entry to the power β (β near 0: a guess).")
    return out


def _types_text(conf: Record) -> str:
    """Task types of a ``per-worker`` confusion crowd (Welinder et al. 2010), or ""."""
    shares, sets = conf.get("type_shares"), conf.get("type_matrices")
    if not shares or not sets:
        return ""
    n = len(sets)
    rows = [", ".join(pct(s) for s in row) for row in shares]
    share_txt = (f"{rows[0]} for every class" if len(rows) == 1 else
                 "; ".join(f"class {c + 1}: {r}" for c, r in enumerate(rows)))
    diag = [_mean_diagonal(m) for m in sets]
    diag_txt = ", ".join(f"type {z + 1} {d:.3f}" for z, d in enumerate(diag) if d is not None)
    return (f" Tasks come in {n} types (Welinder et al. 2010), drawn once per replicate: the "
            f"shares of types 1 to {n} are {share_txt}; each worker has one matrix per type and "
            f"answers a task from the matrix of its type (mean chance of the true class: "
            f"{diag_txt}).")


def confusion_text(workers: Record, k: int) -> str:
    """``confusion``: per-worker K×K matrices of the design the scenario names, with task
    types, look-alike tasks and difficulty when asked for."""
    conf = table_of(workers, "confusion")
    design = setting(conf, ConfusionSpec, "design")
    if design == "diagonal-uniform":
        low, high = setting(conf, ConfusionSpec, "low"), setting(conf, ConfusionSpec, "high")
        how = (f"drawn once per replicate (diagonal-uniform design, Zhang et al.): the chance of "
               f"the true class uniform on [{low:g}, {high:g}], the rest of the row spread "
               "evenly over the wrong classes")
    elif design == "dirichlet":
        conc = setting(conf, ConfusionSpec, "concentration")
        weight = setting(conf, ConfusionSpec, "diagonal_weight")
        how = (f"drawn once per replicate (dirichlet design): row c ~ Dirichlet({conc:g} · "
               f"(1 + {weight:g} · e_c)), the diagonal weighted {weight:g}")
    else:
        mean = _mean_diagonal(conf.get("matrices"))
        how = "given per worker in the scenario (per-worker design)" + (
            f", mean chance of the true class {mean:.3f}" if mean is not None else "")
    return (f"each worker has a K × K confusion matrix, the chance of each answer given the "
            f"true class, {how}.{_types_text(conf)}{effects_text(conf, ConfusionSpec)}")


def communities_text(workers: Record, k: int) -> str:
    """``communities``: workers sharing a community's confusion bias (Venanzi et al. 2014)."""
    com = table_of(workers, "communities")
    mats = setting(com, CommunitiesSpec, "confusion") or []
    weights = setting(com, CommunitiesSpec, "weights")
    conc = setting(com, CommunitiesSpec, "concentration")
    m = len(mats)
    total = sum(weights) if weights else 0.0
    shares = (", ".join(pct(w / total) for w in weights) if weights and total > 0
              else "equal")
    diag = [_mean_diagonal([mat]) for mat in mats]
    diag_txt = ", ".join(f"{d:.3f}" for d in diag if d is not None)
    return (f"workers belong to {m} communit{'y' if m == 1 else 'ies'} sharing a confusion "
            f"bias (Venanzi et al. 2014), drawn once per replicate with shares {shares}; each "
            f"community has its own K × K matrix (mean chance of the true class: {diag_txt}) "
            f"and each member's row c is drawn from Dirichlet({conc:g} × the community's row c)."
            f"{effects_text(com, CommunitiesSpec)}")


def glad_text(workers: Record, k: int) -> str:
    """``glad``: right with probability σ(α_j·β_i) on tasks of drawn inverse difficulty β_i."""
    glad = table_of(workers, "glad")
    difficulty = setting(glad, GladSpec, "difficulty")
    if difficulty == "gamma":
        shape = setting(glad, GladSpec, "shape")
        beta_txt = f"β ~ Gamma(shape, scale 1/shape) with shape = {shape:g} (mean 1)"
    else:
        sigma = setting(glad, GladSpec, "sigma")
        beta_txt = (f"log β ~ N(0, sigma²) with sigma = {sigma:g}" if sigma else
                    "β = 1 for every task (sigma 0: every task equally hard)")
    alpha = setting(glad, GladSpec, "alpha")
    if alpha:
        alpha_txt = (f"each worker's ability α_j is given in the scenario ({len(alpha)} values "
                     f"from {min(alpha):g} to {max(alpha):g})")
    else:
        alpha_txt = f"α_j = logit(p_j), where {ability_text(workers)}"
    return (f"worker j answers task i correctly with probability σ(α_j · β_i) and otherwise "
            f"gives a wrong class at random (GLAD, Whitehill et al. 2009). Each task's inverse "
            f"difficulty β_i is drawn once per replicate, {beta_txt} (β near 0: a coin flip "
            f"for everyone); {alpha_txt}.")


#: The words of each class-label worker model, by its ``workers.model`` name.
CROWD_TEXT: dict[str, Callable[[Record, int], str]] = {
    "one-coin": one_coin_text, "confusion": confusion_text,
    "spammer-hammer": spammer_hammer_text, "glad": glad_text,
    "communities": communities_text,
}


def crowd_text(workers: Record, k: int = 2) -> str:
    """How the resolved scenario's class-label workers answer, with its numbers."""
    model = setting(workers, WorkersSpec, "model")
    words = CROWD_TEXT.get(str(model))
    if words is None:
        return f"workers answer under the {model} model, which this report does not describe."
    return words(workers, k)


def score_setup(setup: Record) -> str:
    """The continuous-score world (Hoiem's bad-annotator model) in words."""
    tasks = setup.get("tasks") or {}
    workers = setup.get("workers") or {}
    gs = table_of(workers, "gaussian_scores")
    means = tasks.get("means") or {}
    good, sigma = (setting(gs, GaussianScoresSpec, k) for k in ("good_fraction", "sigma"))
    a, b = (setting(means, TaskMeansSpec, k) for k in ("alpha", "beta"))
    return (f"Each replicate draws a fresh world of **{num(tasks.get('count'))} tasks**, each "
            f"with a true mean score drawn from Beta({g(a)}, {g(b)}) on [0, 1], and "
            f"**{num(workers.get('count'))} annotators** (the gaussian-scores model of Hoiem's "
            f"bad-annotator problem): {100 * good:g} % of them are good and score a task as its "
            f"true mean plus Gaussian noise of standard deviation {sigma:g} (clipped to [0, 1]); "
            "the others are bad and score uniformly at random on [0, 1]. Nobody is told who "
            "is good.")


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
