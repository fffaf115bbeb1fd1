"""Workers whose accuracy changes as they work (``[workers.dynamics]``, issue #28): learning,
fatigue within a session and a slow drift, each a shift of the logit of the worker model's own
probability of being right.

The table (:class:`DynamicsSpec`) applies to every model whose facts allow it
(:attr:`~marketsim.workers.base.WorkerModel.allows_dynamics`; not with `[replay]`, a rule of
the scenario's). Worker j's n-th answer (n counts their answers in the market), at position s
of their current session, is right with probability

    σ(logit p + learning·(1 − e^(−n/learning_labels)) − fatigue·s + D_j(n)),

p the model's own probability for this worker and task, D_j(n + 1) = D_j(n) + N(0, drift²).
Learning follows the exponential law of practice (Heathcote, Brown & Mewhort 2000), fatigue
the vigilance decrement of sustained attention (Mackworth 1948), taken linear in the logit;
the drift is the random-walk ability of dynamic worker models (e.g. Donmez, Carbonell &
Schneider, KDD 2010). A session restarts when the worker has not answered for ``rest`` time.

The worker model draws the answer with the shifted probability
(:meth:`ShiftableAnswers.answer_shifted`, the same draws as its own ``answer`` at shift 0), so
a table whose coefficients are all 0 gives the model's own answers, draw for draw. Without the
table the market uses the model's answers directly (this module costs nothing per label).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from marketsim.options import F
from marketsim.tables import Table
from marketsim.workers.base import AnswerModel

#: Largest logit shift a dynamics coefficient may ask for (σ(±50) is 0 or 1 to double
#: precision).
MAX_SHIFT = 50.0


class DynamicsSpec(Table):
    """``[workers.dynamics]`` (class-label models, not with `[replay]`)

    Worker j's n-th answer (n = 0, 1, … counts their answers in the market, the initial
    graph's not included), given at position s of their current session, is right with
    probability σ(logit p + learning·(1 − e^(−n/learning_labels)) − fatigue·s + D_j(n)),
    where p is the worker model's own probability for this worker and task and D_j is a
    Gaussian random walk, D_j(n + 1) = D_j(n) + N(0, drift²). A wrong answer keeps the
    model's own proportions among the wrong classes. All coefficients 0 give the model's
    own answers, draw for draw."""

    learning: float = F(0.0, "logit gain a worker reaches with practice (exponential law of "
                        "practice): + learning·(1 − e^(−n/learning_labels)) after n answers",
                        ge=0, le=MAX_SHIFT)
    learning_labels: float = F(50.0, "answers it takes to gain 1 − 1/e (63 %) of `learning`",
                               gt=0, le=1e9)
    fatigue: float = F(0.0, "logit lost per answer already given in the current session: "
                       "− fatigue·s at position s (s = 0 for a session's first answer)",
                       ge=0, le=MAX_SHIFT)
    rest: float | None = F(None, "simulated time without answering after which a worker's "
                           "next answer starts a new session (s = 0); unset: the session is "
                           "the worker's whole stay (with workers.session_mean, until they "
                           "leave)", shown="never", gt=0, le=1e12)
    drift: float = F(0.0, "standard deviation of the random walk of a worker's logit per "
                     "answer: after n answers its variance is n·drift²", ge=0, le=MAX_SHIFT)


def shifted(p: float, shift: float) -> float:
    """``σ(logit p + shift)``: ``p`` itself at shift 0 (bit for bit) and for a worker who is
    always right or always wrong (p = 1 or 0)."""
    if shift == 0.0 or not 0.0 < p < 1.0:
        return p
    x = math.log(p / (1.0 - p)) + shift
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else 1.0 - 1.0 / (1.0 + math.exp(x))


@runtime_checkable
class ShiftableAnswers(AnswerModel, Protocol):
    """A class-label model's answers, also with a shifted logit of being right."""

    def answer_shifted(self, task: int, worker: int, shift: float) -> tuple[int, float | None]:
        """The label with ``σ(logit p + shift)`` the probability of being right (a wrong
        answer keeps the model's proportions among the wrong classes)."""


class DynamicAnswers:
    """Per-label answers of workers who learn, tire and drift: each answer's logit shift from
    the worker's count of answers, their position in the session and their walk.

    Scalar code, once per label: per-worker state in Python lists."""

    def __init__(self, base: ShiftableAnswers, spec: DynamicsSpec, n_workers: int,
                 rng: np.random.Generator, clock: Callable[[], float]) -> None:
        self.base = base
        self.learning = spec.learning
        self.learning_labels = spec.learning_labels
        self.fatigue = spec.fatigue
        self.rest = math.inf if spec.rest is None else spec.rest
        self.drift = spec.drift
        self.rng = rng
        self.clock = clock
        #: Answers given (n), position in the session (s), time of the last answer, walk D_j.
        self.done = [0] * n_workers
        self.session = [0] * n_workers
        self.last = [-math.inf] * n_workers
        self.walk = [0.0] * n_workers

    def shift(self, worker: int, now: float) -> float:
        """The logit shift of ``worker``'s next answer at time ``now``; starts a new session
        when they have been away longer than ``rest``."""
        if now - self.last[worker] > self.rest:
            self.session[worker] = 0
        shift = self.walk[worker]
        if self.learning:
            shift += self.learning * (1.0 - math.exp(-self.done[worker] / self.learning_labels))
        if self.fatigue:
            shift -= self.fatigue * self.session[worker]
        return shift

    def answer(self, task: int, worker: int) -> tuple[int, float | None]:
        """The worker's label for ``task``; then their counts advance and their walk steps."""
        now = self.clock()
        out = self.base.answer_shifted(task, worker, self.shift(worker, now))
        self.done[worker] += 1
        self.session[worker] += 1
        self.last[worker] = now
        if self.drift:
            self.walk[worker] += self.drift * float(self.rng.standard_normal())
        return out


def with_dynamics(base: AnswerModel, spec: DynamicsSpec | None, n_workers: int,
                  rng: np.random.Generator, clock: Callable[[], float]) -> AnswerModel:
    """``base`` itself without ``[workers.dynamics]``, else its answers with the dynamics
    (the scenario allows the table only with class-label models, which can shift)."""
    if spec is None:
        return base
    if not isinstance(base, ShiftableAnswers):
        raise TypeError(f"{type(base).__name__} cannot shift its answers ([workers.dynamics] "
                        "needs a class-label worker model)")
    return DynamicAnswers(base, spec, n_workers, rng, clock)
