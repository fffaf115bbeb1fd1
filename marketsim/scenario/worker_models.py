"""What each worker model is, as facts the parser, the reports and the command line read:
whether its labels are classes or scores, its headline error, the inference methods that fit
it, and its options (the ``[workers.<model>]`` table of a model that takes some).

The behaviour (the world draw and the per-label answer) lives in
:mod:`marketsim.market.answers`, one module per model, registered by the same names in
:mod:`marketsim.market.worker_models`; these facts sit below the market so that the scenario
layer and the reports can read them without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Self

from pydantic import model_validator

from marketsim.aggregation.registry import CLASS_METHODS, SCORE_METHODS
from marketsim.options import F
from marketsim.scenario.table import FloatMatrices, FloatMatrixSets, FloatRows, Floats, Table
from marketsim.scenario.validation import KeyProblem

CONFUSION_DESIGNS = ("diagonal-uniform", "dirichlet", "per-worker")
#: Keys of ``[workers.confusion]`` that only one design reads.
CONFUSION_DESIGN_KEYS = {"diagonal-uniform": ("low", "high"),
                         "dirichlet": ("concentration", "diagonal_weight"),
                         "per-worker": ("matrices", "type_shares", "type_matrices")}
#: How far a row of probabilities may sum from 1.
ROW_TOLERANCE = 1e-6


def check_stochastic(key: str, rows: tuple[tuple[float, ...], ...]) -> None:
    """Raise KeyProblem unless every row holds probabilities summing to 1."""
    for row in rows:
        if any(not 0.0 <= v <= 1.0 for v in row):
            raise KeyProblem(key, f"entries must be probabilities in [0, 1], got {list(row)}")
        if abs(sum(row) - 1.0) > ROW_TOLERANCE:
            raise KeyProblem(key, f"rows must sum to 1, got {list(row)} (sum {sum(row):.9g})")


class TaskEffects(Table):
    """What makes real errors shared, for the confusion-matrix models (declared once here,
    read by ``[workers.confusion]`` and ``[workers.communities]``): tasks that look like
    another class to the whole crowd, and tasks of different difficulty. Both are off by
    default (every task looks like its class and is equally hard)."""

    sigma: float = F(0.0, "task difficulty: log βᵢ ~ N(0, sigma²) and worker j answers l with "
                     "probability ∝ π_j[s, l]^βᵢ (βᵢ → 0 a guess); 0 = equally hard tasks",
                     ge=0, le=10, recorded_at_default=False)
    lookalike: FloatRows | None = F(
        None, "K×K rows summing to 1: a task of true class c looks like class s to every "
        "worker with probability lookalike[c][s] (workers answer from row s)",
        shown="the identity", recorded_at_default=False)

    @model_validator(mode="after")
    def _lookalike_rows(self) -> Self:
        if self.lookalike is not None:
            check_stochastic("lookalike", self.lookalike)
        return self

    @property
    def has_effects(self) -> bool:
        """Difficulty or look-alikes are asked for (else answers come from the rows as they
        are, with the random draws of the plain model)."""
        return self.sigma > 0 or self.lookalike is not None


class ConfusionSpec(TaskEffects):
    """``[workers.confusion]`` (`model = "confusion"` only)

    Per-worker K×K confusion matrices. ``diagonal-uniform``: each diagonal entry uniform on
    [low, high], the rest of the row spread evenly (Zhang et al.'s synthetic design; for K = 2
    exactly their setup). ``dirichlet``: row c drawn from Dirichlet(concentration·(1 +
    diagonal_weight·e_c)). ``per-worker``: every worker's matrix given (``matrices``, as
    `marketsim calibrate` writes it). Any design may add look-alike tasks and task
    difficulty (``lookalike``, ``sigma``)."""

    design: Literal[CONFUSION_DESIGNS] = F(  # type: ignore[valid-type]
        "diagonal-uniform", "diagonal uniform on [low, high] with the rest of the row spread "
        "evenly (Zhang et al.), or Dirichlet rows")
    low: float = F(0.3, "`diagonal-uniform`: lower end of the diagonal", ge=0, le=1)
    high: float = F(0.9, "`diagonal-uniform`: upper end of the diagonal (≥ low)", ge=0, le=1)
    concentration: float = F(1.0, "`dirichlet`: row c ~ Dirichlet(concentration·(1 + "
                             "diagonal_weight·e_c))", gt=0, le=1e6)
    diagonal_weight: float = F(4.0, "`dirichlet`: weight of the diagonal", ge=0, le=1e6)
    matrices: FloatMatrices | None = F(
        None, "`per-worker`: one K×K matrix per worker (workers.count of them), row c the "
        "worker's answer probabilities on a task of class c", shown="required with "
        "`per-worker` (unless type_matrices)", recorded_at_default=False)
    type_shares: FloatRows | None = F(
        None, "`per-worker` task types: a task of class c has type z with probability "
        "type_shares[c][z] (K rows, one per class) or type_shares[0][z] (one row for every "
        "class); drawn once per replicate", shown="one type of task",
        recorded_at_default=False)
    type_matrices: FloatMatrixSets | None = F(
        None, "`per-worker` with type_shares, instead of matrices: one set of workers.count "
        "K×K matrices per task type; worker j answers a type-z task of class c from row c of "
        "type_matrices[z][j]", shown="required with type_shares", recorded_at_default=False)

    @model_validator(mode="after")
    def _design_keys(self) -> Self:
        for design, keys in CONFUSION_DESIGN_KEYS.items():
            wrong = [k for k in keys if k in self.model_fields_set and self.design != design]
            if wrong:
                raise KeyProblem(wrong[0], f"applies only to design '{design}', not "
                                 f"{self.design!r}")
        if self.high < self.low:
            raise KeyProblem("high", f"must be >= workers.confusion.low ({self.low:g})")
        if self.design == "per-worker":
            self._per_worker_keys()
        return self

    def _per_worker_keys(self) -> None:
        """``matrices``, or ``type_shares`` with ``type_matrices``, stochastic and matching."""
        if (self.type_shares is None) != (self.type_matrices is None):
            given, missing = (("type_shares", "type_matrices") if self.type_matrices is None
                              else ("type_matrices", "type_shares"))
            raise KeyProblem(missing, f"is required with {given} (task types need both)")
        if self.type_matrices is not None and self.matrices is not None:
            raise KeyProblem("type_matrices", "replaces matrices (one set per task type); give "
                             "one of them")
        if self.matrices is None and self.type_matrices is None:
            raise KeyProblem("matrices", "is required with design = 'per-worker'")
        for matrix in self.matrices or ():
            check_stochastic("matrices", matrix)
        if self.type_shares is None or self.type_matrices is None:
            return
        check_stochastic("type_shares", self.type_shares)
        n_types = len(self.type_matrices)
        if any(len(row) != n_types for row in self.type_shares):
            raise KeyProblem("type_shares", f"rows must have one share per task type "
                             f"({n_types}, the sets of type_matrices)")
        for matrices in self.type_matrices:
            for matrix in matrices:
                check_stochastic("type_matrices", matrix)

    @property
    def has_effects(self) -> bool:
        """Difficulty, look-alikes or task types are asked for."""
        return super().has_effects or self.type_shares is not None

    def as_written(self) -> dict[str, Any]:
        """The design and the keys that design reads."""
        unread = {k for d, keys in CONFUSION_DESIGN_KEYS.items() if d != self.design
                  for k in keys}
        return {k: v for k, v in super().as_written().items() if k not in unread}


class SpammerHammerSpec(Table):
    """``[workers.spammer_hammer]`` (`model = "spammer-hammer"` only)"""

    hammer_fraction: float = F(0.3, "each worker is perfect with this probability, else "
                               "uniformly random", ge=0, le=1)


class GaussianScoresSpec(Table):
    """``[workers.gaussian_scores]`` (`model = "gaussian-scores"` only)

    Seed 001's annotators: ``round(good_fraction * count)`` good ones score task i as
    ``N(mu_i, sigma^2)`` clipped to [0, 1], the rest uniformly."""

    good_fraction: float = F(0.7, "exactly round(good_fraction × count) annotators, chosen at "
                             "random, are good", ge=0, le=1)
    sigma: float = F(0.1, "a good annotator scores task i as N(μᵢ, sigma²) clipped to [0, 1]; "
                     "a bad one uniformly on [0, 1]", gt=0, le=10)


DIFFICULTY_DISTRIBUTIONS = ("lognormal", "gamma")
#: Keys of ``[workers.glad]`` that only one difficulty distribution reads.
DIFFICULTY_KEYS = {"lognormal": ("sigma",), "gamma": ("shape",)}
#: Largest ``|alpha_j|`` of ``[workers.glad] alpha`` (σ(50) is 1 to double precision).
MAX_ALPHA = 50.0


class GladSpec(Table):
    """``[workers.glad]`` (`model = "glad"` only)

    GLAD's generative model (Whitehill et al. 2009): worker j answers task i correctly with
    probability σ(α_j·β_i), else a uniformly chosen wrong class. β_i > 0 is the task's inverse
    difficulty (β = 1 a typical task, β → 0 a coin flip for everyone), drawn once per replicate
    from ``difficulty``; α_j is the worker's ability: σ(α_j) is their accuracy on a typical
    task, drawn as α_j = logit(p_j) with p_j from `[workers.ability]` unless ``alpha`` lists
    one per worker (as `marketsim calibrate` wrote before it chose among worlds)."""

    difficulty: Literal[DIFFICULTY_DISTRIBUTIONS] = F(  # type: ignore[valid-type]
        "lognormal", "distribution of the tasks' inverse difficulty βᵢ: log βᵢ ~ N(0, sigma²), "
        "or βᵢ ~ Gamma(shape, scale 1/shape) (mean 1)")
    sigma: float = F(1.0, "`lognormal`: standard deviation of log βᵢ; 0 = every task equally "
                     "hard (βᵢ = 1)", ge=0, le=10)
    shape: float = F(2.0, "`gamma`: shape of βᵢ ~ Gamma(shape, 1/shape); large = equal tasks; "
                     "at least 0.001 (below it virtually every βᵢ underflows to 0: every task "
                     "a coin flip, and the difficulty's quantiles are no longer numbers)",
                     ge=1e-3, le=1e6)
    alpha: Floats | None = F(None, "one α_j per worker (workers.count numbers in [-50, 50]); "
                             "else α_j = logit(p_j), p_j drawn from [workers.ability]",
                             shown="from [workers.ability]")

    @model_validator(mode="after")
    def _glad_keys(self) -> Self:
        for difficulty, keys in DIFFICULTY_KEYS.items():
            wrong = [k for k in keys
                     if k in self.model_fields_set and self.difficulty != difficulty]
            if wrong:
                raise KeyProblem(wrong[0], f"applies only to difficulty '{difficulty}', not "
                                 f"{self.difficulty!r}")
        if self.alpha is not None and any(not abs(a) <= MAX_ALPHA for a in self.alpha):
            raise KeyProblem("alpha", f"entries must lie in [-{MAX_ALPHA:g}, {MAX_ALPHA:g}]")
        return self

    def as_written(self) -> dict[str, Any]:
        """The difficulty and the key that distribution reads."""
        unread = {k for d, keys in DIFFICULTY_KEYS.items() if d != self.difficulty
                  for k in keys}
        return {k: v for k, v in super().as_written().items() if k not in unread}


class CommunitiesSpec(TaskEffects):
    """``[workers.communities]`` (`model = "communities"` only)

    Communities of workers who share a confusion bias (Venanzi, Guiver, Kazai, Kohli &
    Shokouhi, WWW 2014): worker j belongs to community m_j ~ Categorical(weights); community m
    has the K×K matrix ``confusion[m]``; row c of the worker's own matrix is
    Dirichlet(concentration·confusion[m][c]), a perturbation of the community's (its mean;
    large ``concentration``: every member answers like the community). Drawn once per
    replicate. Look-alike tasks and difficulty (``lookalike``, ``sigma``) as in
    `[workers.confusion]`."""

    confusion: FloatMatrices | None = F(
        None, "one K×K matrix per community, rows summing to 1", shown="required")
    weights: Floats | None = F(None, "each community's share of the workers (one number > 0 "
                               "per community)", shown="equal shares")
    concentration: float = F(100.0, "members' rows ~ Dirichlet(concentration × the "
                             "community's row)", gt=0, le=1e9)

    @model_validator(mode="after")
    def _community_keys(self) -> Self:
        for matrix in self.confusion or ():
            check_stochastic("confusion", matrix)
        if self.weights is not None:
            if any(not 0 < w < 1e300 for w in self.weights):
                raise KeyProblem("weights", f"entries must be finite numbers > 0, got "
                                 f"{list(self.weights)}")
            if self.confusion is not None and len(self.weights) != len(self.confusion):
                raise KeyProblem("weights", f"must have one entry per community "
                                 f"({len(self.confusion)}), got {len(self.weights)}")
        return self


@dataclass(frozen=True)
class WorkerModelFacts:
    """A worker model's facts: its ``labels`` kind, its headline error column of
    ``curves.csv`` (``metric``) and the inference method an arm without one runs."""

    name: str
    labels: Literal["classes", "scores"]
    metric: Literal["error_rate", "rmse"]
    default_method: str
    #: The ``[workers.<table>]`` of the model's options, if it takes some.
    table: str | None = None

    @property
    def scores(self) -> bool:
        """Labels are scores in [0, 1] (score methods, no classes), not class labels."""
        return self.labels == "scores"

    @property
    def methods(self) -> tuple[str, ...]:
        """The inference methods that fit this model's labels."""
        return SCORE_METHODS if self.scores else CLASS_METHODS


def _classes(name: str, table: str | None = None) -> WorkerModelFacts:
    return WorkerModelFacts(name, "classes", "error_rate", "one-coin-shifted-beta", table)


#: Every worker model by its ``workers.model`` name.
WORKER_MODEL_FACTS: dict[str, WorkerModelFacts] = {
    "one-coin": _classes("one-coin"),
    "confusion": _classes("confusion", "confusion"),
    "spammer-hammer": _classes("spammer-hammer", "spammer_hammer"),
    "gaussian-scores": WorkerModelFacts("gaussian-scores", "scores", "rmse", "gaussian-em",
                                        "gaussian_scores"),
    "glad": _classes("glad", "glad"),
    "communities": _classes("communities", "communities"),
}


def worker_model_facts(name: object) -> WorkerModelFacts:
    """The facts of the model called ``name`` (a class-label model's when ``name`` is none:
    replay markets and files written before the key existed)."""
    return WORKER_MODEL_FACTS.get(str(name), WORKER_MODEL_FACTS["one-coin"])
