"""The scenario ``marketsim calibrate`` writes: a fitted crowd (:mod:`marketsim.aggregation.
world_fit`) as a scenario file that runs as it is, its choices explained in its comments.

The world is GLAD's (``workers.model = "glad"``), kept **per worker**: every worker's
``alpha_j`` (``[workers.glad] alpha``) and share of the labels (``[workers.arrivals]
weights``), so the twin is this crowd rather than a distribution fitted to it (a requester asks
what would have happened with *their* workers; the budget can then be raised beyond the data,
the same workers working in the same proportions). Task difficulty is log-normal with the
fitted ``sigma`` when it lowers the BIC, else ``sigma = 0`` (equal tasks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.aggregation.world_fit import WorldFit
from marketsim.policies.registry import market_problem
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.scenario.toml_out import dumps

#: Replicates the written scenario asks for (the acceptance check's number).
REPLICATES = 10
#: Gold questions of the explore-exploit arm (no other arm asks for any: rate 0).
GOLD_COUNT = 30


@dataclass(frozen=True)
class Calibration:
    """What the written scenario is made of."""

    name: str
    n_tasks: int
    n_classes: int
    n_labels: int
    prior: np.ndarray
    share: np.ndarray
    glad: WorldFit
    flat: WorldFit
    truth_source: str

    @property
    def chosen(self) -> WorldFit:
        """The fit the scenario uses: with difficulty when its BIC is lower."""
        return self.glad if self.glad.bic < self.flat.bic else self.flat


def _round(values: np.ndarray, digits: int = 6) -> list[float]:
    return [float(round(float(v), digits)) for v in values]


def scenario_document(cal: Calibration, seed: int) -> dict[str, Any]:
    """The scenario as a TOML document."""
    fit = cal.chosen
    edges = cal.n_labels
    prior = cal.prior / cal.prior.sum()
    arm = {"policy": "uniform", "inference": "ds"}
    others = [{"name": name, "policy": name, "inference": "ds"}
              for name in ("entropy-greedy", "explore-exploit")
              if not market_problem(name, False, cal.n_classes)]
    return {
        "scenario": {"name": cal.name, "seed": seed, "replicates": REPLICATES},
        "tasks": {"count": cal.n_tasks, "classes": cal.n_classes, "prior": _round(prior, 12)},
        "workers": {
            "count": int(cal.share.size), "model": "glad",
            "arrivals": {"rate": 1.0, "weights": _round(cal.share, 9)},
            "glad": {"difficulty": "lognormal", "sigma": float(round(fit.sigma, 6)),
                     "alpha": _round(fit.alpha, 6)},
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
    g, f = cal.glad, cal.flat
    with_difficulty = cal.chosen is g
    per_task = cal.n_labels / cal.n_tasks
    return [
        "Written by marketsim calibrate: a twin of a real crowd, fitted to its labels.",
        f"command: {command}",
        f"data: {cal.n_tasks} tasks, {cal.share.size} workers, {cal.n_labels} labels "
        f"({per_task:.2f} per task), {cal.n_classes} classes; each label's chance of being "
        f"right from {cal.truth_source}.",
        "world: GLAD (workers.model = 'glad'): a label is right with probability "
        "sigmoid(alpha_j * beta_i),",
        "  else a uniformly chosen wrong class; log beta_i ~ N(0, sigma^2) (task difficulty).",
        "kept per worker, not summarised: each worker's alpha_j ([workers.glad] alpha) and "
        "share of the labels",
        "  ([workers.arrivals] weights), because the question is what *this* crowd would do "
        "with another",
        "  budget or policy; a fitted distribution would lose who is good and who works a lot.",
        f"difficulty: log-likelihood {g.log_likelihood:.2f} with (sigma = {g.sigma:.4f}), "
        f"{f.log_likelihood:.2f} without;",
        f"  BIC {g.bic:.2f} with, {f.bic:.2f} without: "
        + ("difficulty kept (lower BIC)." if with_difficulty
           else "difficulty dropped (sigma = 0, equal tasks: no lower BIC)."),
        "labels per task: the 'as collected' arm spends the file's label count with the "
        "uniform policy,",
        "  one label per task first (initial = 'one-per-task'), then one round of distinct "
        "tasks per refresh",
        f"  (batch = tasks.count), so every task gets about {per_task:.2f}.",
        "arms: 'as collected' reproduces how the data were collected; entropy-greedy and "
        "explore-exploit",
        "  (its gold questions: [gold], rate 0, no other arm asks) give the comparison; raise "
        "budget.edges",
        "  to ask what more labels would buy.",
    ]


def calibrated_text(cal: Calibration, command: str, seed: int = 0) -> str:
    """The scenario file: comment header, then the document (checked to validate)."""
    text = dumps(scenario_document(cal, seed))
    lines = "".join(f"# {line}\n" for line in header(cal, command))
    return lines + "\n" + text


def check_text(text: str, source: str) -> Scenario:
    """The written text parsed and validated as a scenario (what ``run`` would read)."""
    import tomllib

    return parse_scenario(tomllib.loads(text), source)
