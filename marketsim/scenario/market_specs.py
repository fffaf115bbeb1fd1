"""How a scenario's market buys: ``[scenario]``, ``[budget]``, ``[gold]``, ``[blocking]`` and
``[output]``, each table its own spec (rules across tables: :mod:`marketsim.scenario.resolve`).
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from marketsim.options import F
from marketsim.scenario.crowd_specs import MAX_PRICE, MIN_PRICE
from marketsim.scenario.validation import KeyProblem
from marketsim.tables import Table

INITIAL_GRAPHS = ("one-per-task", "bernoulli", "none")


class HeaderSpec(Table):
    """``[scenario]``

    The study's name, seed and replicate count, and the engine that simulates its markets
    (here because it is how the whole study is simulated, not a property of its crowd, budget
    or arms)."""

    name: str = F(None, "shown in reports; the run folder is `reports/<slug of name>/"
                  "<timestamp>/` (the slug is cut to 60 characters)", shown="file name",
                  min_length=1)
    seed: int = F(0, "every random stream is spawned from it with "
                  "`numpy.random.SeedSequence`", ge=0, le=2**63 - 1)
    replicates: int = F(1, "independent worlds; every arm runs on each", ge=1, le=100_000)
    engine: Literal["events", "blocks"] = F(
        "events", "how a market is simulated: `events`, label by label in SimPy (every "
        "mechanic); `blocks`, everything between two refreshes handed out at once (the same "
        "model, other random draws, many times faster; no labelling time, gold, worker rules, "
        "worker-aware policies or graph: docs/explanation/models/block-engine.md)")


class BudgetSpec(Table):
    """``[budget]`` (required unless `[replay]`)

    Total labels (initial ones included), the initial graph, the refresh batch and the money
    to spend."""

    edges: int = F(None, "total labels, initial ones and machine calls' answers included: "
                   "tasks ≤ edges ≤ tasks × workers (with `[replay]`: ≤ the labels in the "
                   "file, default all)",
                   shown="required", ge=1, le=10_000_000_000)
    initial: Literal[INITIAL_GRAPHS] = F(  # type: ignore[valid-type]
        "one-per-task", "initial graph: one label per task, workers assigned round-robin; each "
        "task–worker pair with probability `initial_probability` (cut to `edges`); or empty")
    batch: int = F(100, "labels between two refreshes of the inference service (the paper: "
                   "280)", ge=1, le=10_000_000_000)
    initial_probability: float = F(0.2, "the pair probability of `\"bernoulli\"`", ge=0, le=1)
    money: float | None = F(None, "money to spend at most, gold included: a worker whose "
                            "price exceeds the money left gets no work, and the run ends "
                            "(its curve early) when no worker can be paid", shown="no limit",
                            gt=0, le=1e15)
    fee: float = F(0.0, "the platform's fee: a fraction of every payment (gold included) the "
                   "requester pays on top of the worker's price, counted in every money figure "
                   "(e.g. 0.2: MTurk's 20 %)", ge=0, le=10)
    min_price: float | None = F(None, "the platform's minimum price of a label: a "
                                "workers.price (or tier price) below it is refused",
                                shown="none", ge=MIN_PRICE, le=MAX_PRICE)


class GoldSpec(Table):
    """``[gold]``: gold (control) questions with known answers (class markets, no `[replay]`)

    An arriving worker gets one with probability ``rate``; the answers enter the EM fit with
    the classes clamped when ``in_inference``."""

    count: int = F(..., "gold questions, classes drawn from tasks.prior once per replicate, "
                   "answered by the world's worker model as items of their own (their own "
                   "difficulty, look-alike class, task type); a worker answers each at most "
                   "once",
                   ge=1, le=10_000_000)
    rate: float = F(0.0, "probability that an arriving worker gets a gold question instead of "
                    "a task (any policy; a worker-aware policy may also ask for gold)",
                    ge=0, le=1)
    in_inference: bool = F(True, "gold answers enter the EM fit with their classes known "
                           "(EM methods only; others ignore gold)")


class BlockingSpec(Table):
    """``[blocking]``: block workers by their gold accuracy (needs `[gold]`)"""

    after: int = F(..., "gold answers a worker must have given before the rule applies",
                   ge=1, le=10_000_000)
    min_accuracy: float = F(..., "a worker whose fraction of correct gold answers is below "
                            "this is blocked: they never receive another task", ge=0, le=1)


class OutputSpec(Table):
    """``[output]``

    Keep the networkx task–worker graph, export it as GraphML."""

    graph: bool = F(True, "keep the networkx bipartite task–worker graph of each unit (memory "
                    "grows with the budget)")
    graphml: bool = F(False, "also export replicate 0's graph of each arm as GraphML (needs "
                      "`graph = true`)")

    @model_validator(mode="after")
    def _graphml_needs_graph(self) -> Self:
        if self.graphml and not self.graph:
            raise KeyProblem("graphml", "needs output.graph = true (the graph is what gets "
                             "exported)")
        return self


class ReportSpec(Table):
    """``[report]``: what the reports show"""

    targets: list[Annotated[float, Field(gt=0, le=1)]] | None = F(
        None, "the target errors (error rates, or RMSEs) whose labels, money and simulated "
        "time the reports and `summary.json` give, and the plots draw, instead of 0.05 and "
        "0.01", shown="[0.05, 0.01]", min_length=1, max_length=6)
