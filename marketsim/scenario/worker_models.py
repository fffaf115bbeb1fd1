"""What each worker model is, as facts the parser, the reports and the command line read:
whether its labels are classes or scores, its headline error, and the inference methods that
fit it.

The behaviour (the world draw and the per-label answer) lives in
:mod:`marketsim.market.answers`, one module per model, registered by the same names in
:mod:`marketsim.market.worker_models`; these facts sit below the market so that the scenario
layer and the reports can read them without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from marketsim.aggregation.registry import CLASS_METHODS, SCORE_METHODS


@dataclass(frozen=True)
class WorkerModelFacts:
    """A worker model's facts: its ``labels`` kind, its headline error column of
    ``curves.csv`` (``metric``) and the inference method an arm without one runs."""

    name: str
    labels: Literal["classes", "scores"]
    metric: Literal["error_rate", "rmse"]
    default_method: str

    @property
    def scores(self) -> bool:
        """Labels are scores in [0, 1] (score methods, no classes), not class labels."""
        return self.labels == "scores"

    @property
    def methods(self) -> tuple[str, ...]:
        """The inference methods that fit this model's labels."""
        return SCORE_METHODS if self.scores else CLASS_METHODS


def _classes(name: str) -> WorkerModelFacts:
    return WorkerModelFacts(name, "classes", "error_rate", "one-coin-shifted-beta")


#: Every worker model by its ``workers.model`` name.
WORKER_MODEL_FACTS: dict[str, WorkerModelFacts] = {
    "one-coin": _classes("one-coin"),
    "confusion": _classes("confusion"),
    "spammer-hammer": _classes("spammer-hammer"),
    "gaussian-scores": WorkerModelFacts("gaussian-scores", "scores", "rmse", "gaussian-em"),
}


def worker_model_facts(name: object) -> WorkerModelFacts:
    """The facts of the model called ``name`` (a class-label model's when ``name`` is none:
    replay markets and files written before the key existed)."""
    return WORKER_MODEL_FACTS.get(str(name), WORKER_MODEL_FACTS["one-coin"])
