"""The "Setup" section of ``report.md``: the simulated market of a run (tasks, workers and
their accuracy or score model, features, budget, batches, replicates; prices or qualification
tiers, capacity, sessions, a money budget, gold questions and blocking, the scenario's and each
arm's own) in words for a student, from the resolved scenario the run used."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marketsim.record.summary_model import Summary
from marketsim.report.formatting import count_of, num
from marketsim.scenario.worker_models import worker_model_facts


def crowd_text(workers: Mapping[str, Any], ability_txt: str) -> str:
    """How the resolved scenario's class-label workers answer, model by model."""
    model = workers.get("model", "one-coin")
    if model == "spammer-hammer":
        share = workers.get("hammer_fraction")
        return (f"each worker is drawn once as a hammer, who always gives the true class, with "
                f"probability {share:g}, else a spammer, who answers uniformly at random."
                if isinstance(share, int | float) else "hammers and spammers (see the scenario).")
    if model == "confusion":
        table = workers.get("confusion") or {}
        design = table.get("design", "see the scenario")
        how = "given per worker" if design == "per-worker" else f"drawn once ({design} design)"
        effects = " Some tasks look like another class to every worker (lookalike)." \
            if table.get("lookalike") else ""
        if table.get("sigma"):
            effects += f" Tasks differ in difficulty (log-normal, sigma {table['sigma']:g})."
        return (f"each worker has a K × K confusion matrix {how}: the chance of each answer "
                f"given the true class.{effects}")
    if model == "communities":
        return ("workers belong to communities sharing a confusion bias (Venanzi et al. "
                "2014); each member's matrix is drawn around its community's.")
    if model == "one-coin":
        return (f"{ability_txt}. A one-coin worker gives the true class with probability p and "
                "otherwise a wrong class at random.")
    return "see the scenario."


def score_setup(setup: Mapping[str, Any]) -> str:
    """The continuous-score world (Hoiem's bad-annotator model) in words."""
    tasks = setup.get("tasks") or {}
    workers = setup.get("workers") or {}
    gs = workers.get("gaussian_scores") or {}
    means = tasks.get("means") or {}
    good, sigma = gs.get("good_fraction"), gs.get("sigma")
    a, b = means.get("alpha"), means.get("beta")
    mu_txt = (f"Beta({a:g}, {b:g})" if all(isinstance(v, int | float) for v in (a, b))
              else "a Beta distribution")
    type_txt = (f"{100 * good:g} % of them are good and score a task as its true mean plus "
                f"Gaussian noise of standard deviation {sigma:g} (clipped to [0, 1]); the others "
                "are bad and score uniformly at random on [0, 1]"
                if isinstance(good, int | float) and isinstance(sigma, int | float)
                else "good annotators score near the true mean, bad ones at random")
    return (f"Each replicate draws a fresh world of **{num(tasks.get('count'))} tasks**, each "
            f"with a true mean score drawn from {mu_txt} on [0, 1], and "
            f"**{num(workers.get('count'))} annotators** (the gaussian-scores model of Hoiem's "
            "bad-annotator problem): "
            f"{type_txt}. Nobody is told who is good.")


def _number(x: Any) -> str:
    return f"{x:g}" if isinstance(x, int | float) else str(x)


def prices_text(workers: Mapping[str, Any]) -> str:
    """What a label costs: per qualification tier, or a flat price other than 1."""
    tiers = workers.get("tiers")
    if isinstance(tiers, Mapping) and tiers.get("prices"):
        cuts, prices = list(tiers.get("cuts") or []), list(tiers["prices"])
        bands = []
        for i, price in enumerate(prices):
            low = f"{_number(cuts[i - 1])}" if i else None
            high = f"{_number(cuts[i])}" if i < len(cuts) else None
            where = (f"below {high}" if low is None else f"{low} or more" if high is None
                     else f"from {low} to below {high}")
            bands.append(f"tier {i} (score {where}) {_number(price)}")
        return (f"Workers are sorted into {len(prices)} qualification tiers by a noisy "
                f"qualification score, their hidden accuracy plus N(0, "
                f"{_number(tiers.get('noise'))}²) noise, and a label (gold answers included) "
                f"costs the worker's tier price: {'; '.join(bands)}.")
    price = workers.get("price")
    if isinstance(price, int | float) and price != 1:
        return f"Every label (gold answers included) costs {_number(price)}."
    return ""


def gold_text(gold: Mapping[str, Any] | None, blocking: Mapping[str, Any] | None) -> str:
    """Gold (control) questions and the blocking rule in words ("" when neither is on)."""
    parts = []
    if gold:
        rate = gold.get("rate") or 0
        parts.append(
            f"{num(gold.get('count'))} gold (control) questions with known classes are mixed "
            "in: " + (f"an arriving worker answers one with probability {_number(rate)} "
                      f"(about one arrival in {num(1 / rate)})" if rate else
                      "a worker answers one when the policy asks for it")
            + "; gold answers are paid and count towards the label budget but are not task "
            "labels" + ("; methods that can use them fit them with their classes known"
                        if gold.get("in_inference", True) else ""))
    if blocking:
        acc = blocking.get("min_accuracy")
        acc_txt = f"{100 * acc:g} %" if isinstance(acc, int | float) else str(acc)
        parts.append(f"a worker whose gold answers are less than {acc_txt} correct after "
                     f"{num(blocking.get('after'))} or more of them is blocked for good")
    return "; ".join(parts)


def rules_text(setup: Mapping[str, Any]) -> list[str]:
    """The market's rules beyond the crowd, as a paragraph: prices or tiers, capacity,
    sessions, the money budget, and gold and blocking (the scenario's, then each arm's own)."""
    workers = setup.get("workers") or {}
    budget = setup.get("budget") or {}
    sentences = [t for t in (prices_text(workers),) if t]
    capacity, session = workers.get("capacity"), workers.get("session_mean")
    if capacity is not None:
        sentences.append(f"Each worker gives at most {num(capacity)} labels (gold answers "
                         "included), then stops for good.")
    if session is not None:
        sentences.append(f"Each worker leaves the market for good after {_number(session)} "
                         "labels on average (gold included; a geometric session length).")
    if budget.get("money") is not None:
        sentences.append(f"The requester may spend at most **{_number(budget['money'])} in "
                         "money** (gold included); the run ends when no worker who may still "
                         "work can be paid.")
    shared = gold_text(setup.get("gold"), setup.get("blocking"))
    if shared:
        sentences.append(f"For every arm: {shared}.")
    own: dict[str, list[str]] = {}
    for arm in setup.get("arms") or []:
        if isinstance(arm, Mapping) and (arm.get("gold") or arm.get("blocking")):
            text = gold_text(arm.get("gold") or setup.get("gold"),
                             arm.get("blocking") or setup.get("blocking"))
            own.setdefault(text, []).append(str(arm.get("name")))
    for text, names in own.items():
        who = ", ".join(f"*{n}*" for n in names)
        sentences.append(f"Arm{'s' if len(names) > 1 else ''} {who} "
                         f"{'have their' if len(names) > 1 else 'has its'} own rule: {text}.")
    if own and not shared:
        sentences.append("The other arms use no gold questions and block no one.")
    return [" ".join(sentences), ""] if sentences else []


def service_text(workers: Mapping[str, Any]) -> str:
    """How long answers take, each worker's speed and abandonment (``[workers.service]``)."""
    service = workers.get("service_mean", 0.0)
    extra = workers.get("service")
    extra = extra if isinstance(extra, Mapping) else {}
    out = ("answer at once" if not service else
           f"take on average {service:g} units of simulated time per label")
    if extra.get("speed_spread"):
        out += (f", each worker at their own speed (their mean time is {service:g} times a "
                f"log-normal factor of mean 1 and spread {extra['speed_spread']:g})")
    if extra.get("abandon"):
        out += (f"; a worker abandons a hand-out with probability {extra['abandon']:g} (it is "
                "not paid, and the task goes to the next worker)")
    return out


def dynamics_text(workers: Mapping[str, Any]) -> str:
    """A sentence on learning, fatigue and drift (``[workers.dynamics]``), or ``""``."""
    dyn = workers.get("dynamics")
    if not isinstance(dyn, Mapping):
        return ""
    parts = []
    if dyn.get("learning"):
        parts.append(f"learn (the logit of their chance of being right rises by up to "
                     f"{dyn['learning']:g}, 63 % of it after {dyn.get('learning_labels', 50):g} "
                     "answers)")
    if dyn.get("fatigue"):
        rest = dyn.get("rest")
        parts.append(f"tire (it falls by {dyn['fatigue']:g} per answer already given in a "
                     "session" + (f"; a session restarts after {rest:g} time units away)"
                                  if rest else ")"))
    if dyn.get("drift"):
        parts.append(f"drift (a random walk of it, standard deviation {dyn['drift']:g} per "
                     "answer)")
    if not parts:
        return " Workers' dynamics are declared with every coefficient 0."
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f" Workers change as they work: they {listed}."


def setup_section(setup: Mapping[str, Any] | None, summary: Summary) -> list[str]:
    """"Setup": the world, the budget and batches, the inference refits and the replicates in
    words (only the seed and replicate count when the run's scenario is unknown)."""
    out = ["## Setup", ""]
    if not setup:
        out += [
            f"The run folder has no `run.json` or readable `scenario.toml`, so only what "
            f"`curves.csv` holds is known: seed {summary.seed}, "
            f"{count_of(summary.replicates, 'replicate')}.", "",
        ]
        return out
    tasks = setup.get("tasks") or {}
    workers = setup.get("workers") or {}
    ability = workers.get("ability") or {}
    budget = setup.get("budget") or {}
    k = tasks.get("classes", 2)
    prior = tasks.get("prior") or []
    prior_txt = ", ".join(f"class {i + 1} {100 * p:g} %" for i, p in enumerate(prior))
    n_tasks, n_workers = tasks.get("count"), workers.get("count")
    a, b, low = ability.get("alpha"), ability.get("beta"), ability.get("low")
    ability_txt = "see the scenario"
    if isinstance(a, int | float) and isinstance(b, int | float) and isinstance(low, int | float):
        mean_p = low + (1 - low) * a / (a + b)
        ability_txt = (
            f"each worker's accuracy (chance of giving the true class) is drawn once as "
            f"p = {low:g} + {1 - low:g} · Beta({a:g}, {b:g}), so p lies between {low:g} and 1 "
            f"with mean {mean_p:.3f}"
        )
    scores = worker_model_facts(workers.get("model")).scores
    world_txt = score_setup(setup) if scores else (
        f"Each replicate draws a fresh world of **{num(n_tasks)} tasks** with **{k} classes** "
        f"(class prior: {prior_txt or 'uniform'}) and **{num(n_workers)} workers** who answer "
        f"under the {workers.get('model', 'one-coin')} model: "
        f"{crowd_text(workers, ability_txt)}"
    )
    features = tasks.get("features")
    if isinstance(features, Mapping):
        probs = features.get("probabilities")
        how = ("fixed class-conditional probabilities" if probs else
               f"class-conditional probabilities drawn per replicate uniformly within "
               f"±{features.get('informativeness', 0) / 2:g} of 1/2")
        world_txt += (f" Every task also carries {features.get('count')} binary features with "
                      f"{how} (Jin & Zhang 2010); estimators that take features (ds-features) "
                      "get them.")
    refit_txt = ("re-estimates every task's mean and every annotator's probability of being "
                 "good" if scores else "re-estimates every task's class and every worker's "
                 "accuracy")
    error_txt = ("The headline error is the root-mean-square error (RMSE) of the estimated task "
                 "means against the true ones; a task without any score counts with the mean "
                 "of the task-mean distribution." if scores else
                 "The task error rate is the fraction of tasks whose estimated class is wrong.")
    service_txt = service_text(workers)
    initial = budget.get("initial")
    initial_txt = {
        "one-per-task": f"every task first gets one label (the {num(n_tasks)} initial labels "
                        "count towards the budget)",
        "none": "no labels are given before the policy starts",
    }.get(str(initial), f"initial graph: {initial}")
    out += [
        f"{world_txt} Workers arrive at rate {workers.get('arrival_rate', 1.0):g} per unit of "
        f"simulated time and {service_txt}.{dynamics_text(workers)}",
        "",
        f"The requester has a **budget of {num(budget.get('edges'))} labels** (edges of the "
        f"task–worker graph); {initial_txt}. Labels are bought in batches of "
        f"**{num(budget.get('batch'))}**; after each batch the inference service {refit_txt}, "
        f"and the policy decides where the next batch goes. {error_txt}",
        "",
        *rules_text(setup),
        f"Every arm (policy + inference method) is run on the same "
        f"**{summary.replicates} replicate "
        f"world{'' if summary.replicates == 1 else 's'}** (common random numbers, "
        f"**seed {summary.seed}**), so differences between arms are not due to luck of "
        f"the draw of tasks and workers.",
        "",
    ]
    return out
