"""The "Setup" section of ``report.md``: the simulated market of a run (tasks, workers and
their answer model, features, arrivals and labelling times, budget, initial graph, batches,
replicates; prices or qualification tiers with the platform's fee, capacity, sessions, a money
budget, gold questions and blocking, the scenario's and each arm's own) in words for a student,
from the resolved scenario the run used. The crowd's words are
:mod:`~marketsim.report.crowd_text`'s, the market's rules :mod:`~marketsim.report.market_text`'s.
"""

from __future__ import annotations

from marketsim.record.summary_model import Summary
from marketsim.report.crowd_text import (
    arrivals_text,
    dynamics_text,
    machines_text,
    replay_text,
    service_text,
    world_text,
)
from marketsim.report.formatting import count_of, num
from marketsim.report.market_text import engine_text, initial_text, rules_text
from marketsim.scenario.specs import Scenario


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
    budget = setup.budget
    model = setup.workers.model_class
    refit_txt, error_txt = model.refit_words, model.error_words
    crowd = setup.workers
    crowd_txt = f" {arrivals_text(crowd)} and {service_text(crowd)}.{dynamics_text(crowd)}"
    replicates = summary.replicates
    out += [
        f"{replay_text(setup) if setup.replay is not None else world_text(setup)}{crowd_txt}",
        "",
        *machines_text(setup),
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
