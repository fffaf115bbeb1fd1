"""Cascade: every task goes to the machine annotators first, and to humans only when the
models are unsure or disagree (issue #41)."""

from __future__ import annotations

import numpy as np

from marketsim.options import F
from marketsim.policies.machine_first import NamedMachinesFirst, NamedMachinesOptions
from marketsim.tables import Strings


class CascadeOptions(NamedMachinesOptions):
    """``cascade`` (models first, humans where they are unsure or disagree)."""

    machines: Strings = F((), "the machines asked about every task, by name (empty: "
                                  "every machine of the scenario)", shown="all")
    threshold: float = F(0.8, "a task goes to humans when a model's confidence in its answer is "
                         "below this (0: never for confidence)", ge=0, le=1)
    on_disagreement: bool = F(True, "a task also goes to humans when the models' answers "
                              "differ")


class CascadePolicy(NamedMachinesFirst[CascadeOptions]):
    """Models first; humans on the tasks where a model is unsure or the models disagree."""

    name = "cascade"
    Options = CascadeOptions
    description = (
        "Cascade asks the machine annotators (`machines`, all by default) about every task "
        "first; once a task's answers are in it is closed on them, unless a model's confidence "
        "is below `threshold` or (with `on_disagreement`) the models' answers differ: then "
        "humans label it until `agree` of their answers agree, at most `max_overlap` labels. "
        "The requester stops spending once every task is closed; the arm's inference method "
        "aggregates the models' and the humans' labels together."
    )

    @classmethod
    def setting(cls, options: CascadeOptions) -> str:
        """Which machines answer first and when a task goes to humans."""
        asked = options.asked()
        also = " or the models disagree" if options.on_disagreement else ""
        return (f"{asked} answers each task first; a task goes to humans when a confidence is "
                f"below {options.threshold:g}{also}")

    @classmethod
    def rule(cls, options: CascadeOptions) -> str:
        """The routing and the humans' rule, as a clause."""
        return f"tasks the models are unsure of go to humans, who then {cls.quorum(options)}"


    def route(self, tasks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Humans where a confidence is below ``threshold`` (or missing), or, with
        ``on_disagreement``, where the models' answers differ."""
        agree, lowest = self.models_agree(tasks)
        unsure = ~(lowest >= self.options.threshold)  # NaN (no answer): unsure
        return unsure | (~agree if self.options.on_disagreement else False)
