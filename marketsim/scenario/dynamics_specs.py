"""``[workers.dynamics]``: workers whose accuracy changes as they work (issue #28).

Learning, fatigue within a session and a slow drift, each a shift of the logit of the
worker's probability of being right. The table applies to every class-label worker model
(its cross-table rules — not with scores or `[replay]` — are in
:mod:`marketsim.scenario.resolve`); the answers are drawn by
:mod:`marketsim.market.answers.dynamics`.
"""

from __future__ import annotations

from marketsim.options import F
from marketsim.scenario.table import Table

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
