"""The "Setup" section of ``report.md``: the simulated market of a run (tasks, workers and
their answer model, features, arrivals and labelling times, budget, initial graph, batches,
replicates; prices or qualification tiers with the platform's fee, capacity, sessions, a money
budget, gold questions and blocking, the scenario's and each arm's own) in words for a student,
from the resolved scenario the run used. The crowd's words are
:mod:`~marketsim.report.crowd_text`'s, the market's rules :mod:`~marketsim.report.market_text`'s.
"""

from __future__ import annotations

from typing import Any

from marketsim.record.summary_model import Summary
from marketsim.report.crowd_text import (
    arrivals_text,
    crowd_text,
    dynamics_text,
    features_text,
    replay_text,
    score_setup,
    service_text,
)
from marketsim.report.formatting import count_of, num
from marketsim.report.market_text import engine_text, initial_text, rules_text
from marketsim.scenario.specs import Scenario


def world_text(setup: Scenario, record: dict[str, Any]) -> str:
    """The world each replicate draws (or the data set a replay replays), in words
    (``record``: ``setup`` as plain data, what the crowd's words read)."""
    tasks, workers = setup.tasks, setup.workers
    if setup.replay is not None:
        return replay_text(record)
    if workers.facts.scores:
        return score_setup(record)
    prior_txt = ", ".join(f"class {i + 1} {100 * p:g} %" for i, p in enumerate(tasks.prior or ()))
    return (f"Each replicate draws a fresh world of **{num(tasks.count)} tasks** with "
            f"**{tasks.classes} classes** (class prior: {prior_txt or 'uniform'}) and "
            f"**{num(workers.count)} workers** who answer under the {workers.model} model: "
            f"{crowd_text(record['workers'], tasks.classes)}{features_text(record['tasks'])}")


def setup_section(setup: Scenario | None, summary: Summary) -> list[str]:
    """"Setup": the world, the budget and batches, the inference refits and the replicates in
    words (only the seed and replicate count when the run's scenario is unknown)."""
    out = ["## Setup", ""]
    if setup is None:
        out += [
            f"The run folder has no `run.json` or readable `scenario.toml`, so only what "
            f"`curves.csv` holds is known: seed {summary.seed}, "
            f"{count_of(summary.replicates, 'replicate')}.", "",
        ]
        return out
    record = setup.model_dump(mode="json")
    workers, budget = record["workers"], setup.budget
    scores = setup.workers.facts.scores
    refit_txt = ("re-estimates every task's mean and every annotator's probability of being "
                 "good" if scores else "re-estimates every task's class and every worker's "
                 "accuracy")
    error_txt = ("The headline error is the root-mean-square error (RMSE) of the estimated task "
                 "means against the true ones; a task without any score counts with the mean "
                 "of the task-mean distribution." if scores else
                 "The task error rate is the fraction of tasks whose estimated class is wrong.")
    crowd_txt = f" {arrivals_text(workers)} and {service_text(workers)}.{dynamics_text(workers)}"
    replicates = summary.replicates
    out += [
        f"{world_text(setup, record)}{crowd_txt}",
        "",
        f"The requester has a **budget of {num(budget.edges)} labels** (edges of the "
        f"task–worker graph); {initial_text(setup)}. Labels are bought in batches of "
        f"**{num(budget.batch)}**; after each batch the inference service {refit_txt}, "
        f"and the policy decides where the next batch goes. {error_txt}{engine_text(setup)}",
        "",
        *rules_text(setup),
        f"Every arm (policy + inference method) is run on the same **{replicates} replicate "
        f"world{'' if replicates == 1 else 's'}** (common random numbers, "
        f"**seed {summary.seed}**), so differences between arms are not due to luck of "
        f"the draw of tasks and workers.",
        "",
    ]
    return out
