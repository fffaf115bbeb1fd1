"""A classifier or language model (``kind = "classifier"``): right on a task when its latent
hardness is below the threshold its accuracy sets, with a confidence computed from a noisy
view of that hardness.

Per task ``i`` it draws once (per replicate) a standard normal hardness
``h_i = ρ·z_i + √(1−ρ²)·(√s·f_i + √(1−s)·e_i)``: ``z_i`` the humans' task difficulty as
normal scores (left out, ρ unread, in a world whose humans find every task equally hard),
``f_i`` its family's shared latent (share ``s = shared``; none without a family) and ``e_i``
its own. A call's latent is ``ℓ = √(1−τ)·h_i + √τ·ε`` with ``ε`` fresh per call (``τ =
temperature``: at 0 the same answer every time, above 0 a within-task correlation ``1 − τ``);
it is right when ``ℓ < Φ⁻¹(a)``, ``a`` the accuracy on the task's true class (``accuracy``, or
the diagonal of ``confusion``), so its accuracy is ``a`` on average and its errors are the
hardest tasks. Wrong, it gives the task's wrong class, drawn once from the off-diagonal of its
confusion row (uniform with ``accuracy``) by a uniform that is its family's with probability
``s``: family members make the same mistakes.

Its confidence reads what it knows of the call: a signal ``S = ℓ + σ·η`` (``η`` standard
normal, drawn and kept like ``ε``; ``σ² = 1/r² − 1``, ``r = insight`` the signal's
correlation with ``ℓ``). The calibrated confidence is ``q = P(right | S) = Φ((Φ⁻¹(a) − r²·S)
/ √(1 − r²))``; ``overconfidence = o`` reports ``expit((1 + o)·logit(q))``, so the
reliability curve (accuracy among answers reported at confidence ``c``) is
``expit(logit(c) / (1 + o))``: the diagonal at ``o = 0``, flatter than it (the model claims
more than it delivers) for ``o > 0``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

import numpy as np
from pydantic import model_validator
from scipy.special import expit, logit, ndtr, ndtri

from marketsim.machines.base import MachineAnnotator, MachineOptions, MachineTasks
from marketsim.options import F
from marketsim.tables import FloatRows, KeyProblem


class ClassifierOptions(MachineOptions):
    """``[[machines]]`` (kind = "classifier")

    A classifier or language model: the call's keys every machine shares (``name``,
    ``kind``, ``price``, ``latency``, ``rate_limit``) and how it answers."""

    kind: Literal["classifier"] = F("classifier", "`classifier`: a classifier or language "
                                    "model answering each task with a confidence")
    accuracy: float = F(0.85, "probability of the right class on average over tasks (uniform "
                        "wrong classes); or `confusion`", ge=0, le=1)
    confusion: FloatRows | None = F(
        None, "K rows (true class) of K probabilities (answer) summing to 1: the accuracy per "
        "true class is the diagonal, a wrong class follows its row; instead of `accuracy`",
        shown="none")
    rho: float = F(0.0, "correlation of its latent task hardness with the humans' task "
                   "difficulty (worker models with per-task difficulty: glad, confusion's "
                   "sigma)", ge=-1, le=1)
    family: str | None = F(None, "its family (e.g. a model provider): machines of one family "
                           "share part of their errors", shown="none")
    shared: float = F(0.5, "with a family: the share of its hardness that is the family's and "
                      "the probability its wrong class is the family's", ge=0, le=1)
    temperature: float = F(0.0, "0: the same answer (and confidence) when asked again; > 0: "
                           "the share of a call's latent hardness drawn afresh (within-task "
                           "correlation 1 − temperature)", ge=0, le=1)
    insight: float = F(0.7, "correlation of what it knows of a call's hardness with the real "
                       "one: its confidence is near its accuracy on every task when low, near "
                       "0 or 1 when high", gt=0, lt=1)
    overconfidence: float = F(0.0, "0: calibrated confidence q; o: reports expit((1 + o)·"
                              "logit(q)) (reliability curve expit(logit(c) / (1 + o)); "
                              "negative: underconfident)", ge=-0.9, le=10)

    @model_validator(mode="after")
    def _one_accuracy(self) -> Self:
        if self.confusion is not None and "accuracy" in self.model_fields_set:
            raise KeyProblem("accuracy", "give either accuracy or confusion, not both")
        rows = self.confusion
        if rows is not None and (any(len(r) != len(rows) for r in rows) or len(rows) < 2):
            raise KeyProblem("confusion", "must be a K×K matrix (K ≥ 2 rows of K numbers)")
        if rows is not None and any(v < 0 or v > 1 for r in rows for v in r):
            raise KeyProblem("confusion", "entries must be probabilities in [0, 1]")
        if rows is not None and any(abs(sum(r) - 1) > 1e-6 for r in rows):
            raise KeyProblem("confusion", "rows must sum to 1")
        if "shared" in self.model_fields_set and self.family is None:
            raise KeyProblem("shared", "needs a family (the errors it shares are its family's)")
        return self

    def as_written(self) -> dict[str, Any]:
        """The table without the keys it does not read: ``accuracy`` beside a confusion
        matrix, ``shared`` without a family."""
        table = super().as_written()
        if self.confusion is not None:
            table.pop("accuracy")
        if self.family is None:
            table.pop("shared")
        return table



def wrong_classes(truth: np.ndarray, uniform: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The wrong class per task: ``uniform`` through the off-diagonal of the task's confusion
    row, normalised (uniform among the others where the row puts nothing off the diagonal)."""
    k = rows.shape[0]
    off = rows[truth].copy()
    off[np.arange(truth.size), truth] = 0.0
    total = off.sum(axis=1, keepdims=True)
    flat = np.full_like(off, 1.0 / (k - 1))
    flat[np.arange(truth.size), truth] = 0.0
    off = np.where(total > 0, off / np.where(total > 0, total, 1.0), flat)
    below = (np.cumsum(off, axis=1) <= uniform[:, None]).sum(axis=1)
    # rounding may leave the last cumulative sum a hair under 1: the last class it may give
    last = k - 1 - np.argmax(off[:, ::-1] > 0, axis=1)
    return np.minimum(below, last).astype(np.int64)


class Classifier(MachineAnnotator):
    """A classifier or language model: accuracy or confusion matrix, hardness correlated with
    the humans' and its family's, temperature, calibrated or overconfident confidence."""

    kind: ClassVar[str] = "classifier"
    summary: ClassVar[str] = ("a classifier or language model: errors on the tasks hard for it "
                              "(correlated with the humans' and its family's), a confidence "
                              "with every answer, a price, latency and rate limit per call")
    Options: ClassVar[type[MachineOptions]] = ClassifierOptions
    default: ClassVar[bool] = True

    @property
    def family(self) -> str | None:
        """Its ``family``."""
        return self.options.family

    def rows(self, n_classes: int) -> np.ndarray:
        """Its confusion matrix (K×K): given, or one-coin rows of its accuracy."""
        o = self.options
        if o.confusion is not None:
            return np.asarray(o.confusion, dtype=np.float64)
        off = (1.0 - o.accuracy) / (n_classes - 1)
        return np.full((n_classes, n_classes), off) + np.eye(n_classes) * (o.accuracy - off)

    def draw(self, truth: np.ndarray, n_classes: int, human: np.ndarray | None,
             family: tuple[np.ndarray, np.ndarray] | None,
             rng: np.random.Generator) -> MachineTasks:
        """Hardness, thresholds, wrong classes and signal noise per task (the same draws
        whatever the options, in a fixed order)."""
        n, o = truth.size, self.options
        own, own_uniform, pick = rng.standard_normal(n), rng.random(n), rng.random(n)
        noise = rng.standard_normal(n)
        rest, uniform = own, own_uniform
        if family is not None:
            rest = np.sqrt(o.shared) * family[0] + np.sqrt(1.0 - o.shared) * own
            uniform = np.where(pick < o.shared, family[1], own_uniform)
        hardness = rest if human is None else o.rho * human + np.sqrt(1.0 - o.rho ** 2) * rest
        rows = self.rows(n_classes)
        threshold = ndtri(np.diagonal(rows)[truth])
        return MachineTasks(truth, hardness, threshold, wrong_classes(truth, uniform, rows),
                            noise)

    def answer(self, known: MachineTasks, tasks: np.ndarray,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One call per task: right when the call's latent is below the threshold; its
        confidence from the signal, sharpened by ``overconfidence``."""
        o = self.options
        tasks = np.asarray(tasks, dtype=np.int64)
        latent, noise = known.hardness[tasks], known.signal[tasks]
        if o.temperature > 0:
            keep, fresh = np.sqrt(1.0 - o.temperature), np.sqrt(o.temperature)
            latent = keep * latent + fresh * rng.standard_normal(tasks.size)
            noise = keep * noise + fresh * rng.standard_normal(tasks.size)
        threshold = known.threshold[tasks]
        right = latent < threshold
        labels = np.where(right, known.truth[tasks], known.wrong[tasks])
        r2 = o.insight ** 2
        signal = latent + np.sqrt(1.0 / r2 - 1.0) * noise
        calibrated = ndtr((threshold - r2 * signal) / np.sqrt(1.0 - r2))
        with np.errstate(divide="ignore"):
            confidence = expit((1.0 + o.overconfidence) * logit(calibrated))
        return labels.astype(np.int64), confidence

    def describe(self) -> str:
        """Its accuracy, what its errors follow, its temperature and confidence, its costs."""
        o = self.options
        acc = (f"accuracy {o.accuracy:g}" if o.confusion is None else
               "accuracy per true class " + ", ".join(f"{r[i]:g}" for i, r in
                                                      enumerate(o.confusion)))
        fam = "" if o.family is None else \
            f", sharing {o.shared:g} of its errors with the family {o.family!r}"
        repeat = ("the same answer when asked again" if o.temperature == 0 else
                  f"temperature {o.temperature:g} (a new draw per call, within-task "
                  f"correlation {1 - o.temperature:g})")
        conf = ("calibrated confidence" if o.overconfidence == 0 else
                f"confidence sharpened by overconfidence {o.overconfidence:g}")
        return (f"machine {o.name!r} ({self.kind}): {acc}, errors on the tasks hard for it "
                f"(ρ = {o.rho:g} with the humans' difficulty){fam}; {repeat}; {conf} "
                f"(insight {o.insight:g}); {self.cost_words()}.")
