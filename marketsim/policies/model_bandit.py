"""Cost-aware models: which machine annotators to ask about each task, one call at a time,
chosen by a bandit over their estimated accuracy and price (issue #41, after CaMVo).

CaMVo (Cost-aware Majority Voting; Elumar, Tekin & Yağan, "Cost-aware LLM-based Online Dataset
Annotation", NeurIPS 2025, arXiv:2505.15101) picks, per data instance, a subset of language
models to query: a LinUCB bandit on the instance's context estimates each model's accuracy, a
Bayesian estimator over the models' confidence scores gives a bound on it, and the answers are
aggregated by weighted majority voting, the subset being the cheapest whose vote is confident
enough — no ground truth and no pre-training. A simulated task has no text to embed: its context
here is what the requester sees of it, the answers already in (:data:`CONTEXTS`: none yet, all
agreeing, or disagreeing). LinUCB with a one-hot context is one independent estimate per
(model, context); here it is a calibration offset, how much more often the model's answers in
that context are right than their stated confidence says:

* an answer's accuracy is its stated confidence plus the offset ``surplus / (checked +
  prior_strength)`` (the prior: the model is calibrated, worth ``prior_strength`` answers), so
  an over-confident model is learnt to be so, and a confident answer still counts more than an
  unsure one of the same model;
* the evidence is the settled tasks' answers the humans checked: right or wrong against the
  humans' majority (with ``learn_from = "all"`` also against the *other* models' vote on tasks
  closed on two answers or more) — never the hidden truth;
* the next model asked about a task is the one not yet asked with the largest upper confidence
  bound of its accuracy above chance per unit of price, ``(ucb - 1/K) / price`` (``ucb``: its
  mean stated confidence so far, 1 before any answer, plus its offset and ``exploration``
  standard deviations of a proportion seen ``checked + prior_strength`` times);
* the task's vote weighs each answer by its accuracy: the posterior of each class under the
  class prior, each model right with its accuracy and else any other class alike (CaMVo's
  weighted majority vote).

A task stops being asked once the vote's confidence reaches ``threshold`` (closed on the
models' answers); it goes to humans (the same quorum as ``cascade``) when ``max_calls`` calls were
made, when no model is left whose agreement could lift the vote to ``threshold`` (the models'
upper bounds, all agreeing with the leading class), or when the labels or money left pay no
call. ``spot_checks`` of the tasks the vote is confident on go to humans anyway (evenly spread):
without them the humans see only the tasks the models leave unsure, and the calibration is
never learnt on the answers the vote trusts. ``window`` tasks are asked about at once, in index
order, so the estimates learnt from the first tasks choose the calls of the later ones.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from marketsim.options import F
from marketsim.policies.base import MarketInfo, MarketState
from marketsim.policies.machine_first import NamedMachinesFirst, NamedMachinesOptions
from marketsim.tables import Strings

#: A task's context when a model is asked about it: no answer in yet, the answers in agree, or
#: they disagree.
CONTEXTS = ("first", "agreeing", "disagreeing")
#: Accuracies are kept inside (0, 1) by this much (a log of 0 has no vote).
EDGE = 1e-6


class CostAwareModelsOptions(NamedMachinesOptions):
    """``cost-aware-models`` (a bandit chooses which models to ask per task)."""

    machines: Strings = F((), "the machines the bandit may ask, by name (empty: every machine "
                          "of the scenario)", shown="all")
    threshold: float = F(0.95, "stop asking models about a task once its weighted vote's "
                         "confidence reaches this (closed on their answers)", gt=0, lt=1)
    max_calls: int = F(3, "model calls per task at most; a task still unsure after them goes "
                       "to humans", ge=1, le=1000)
    exploration: float = F(1.0, "the upper confidence bound of a model's accuracy that chooses "
                           "the next call: its estimate plus this many standard deviations (0: "
                           "greedy)", ge=0, le=10)
    prior_strength: float = F(4.0, "answers the prior \"the model is calibrated\" (its accuracy "
                              "is its stated confidence) is worth", gt=0, le=1e6)
    learn_from: Literal["humans", "all"] = F(
        "humans", "the answers that teach a model's calibration: those the humans' majority "
        "checked (tasks sent to humans), or also those the other models' vote checked (tasks "
        "closed on two answers or more; models sharing errors then look better than they are)")
    spot_checks: float = F(0.0, "share of the tasks the models' vote is confident on that "
                           "humans label anyway (evenly spread), so the calibration is also "
                           "learnt on the answers the vote trusts", ge=0, le=1)
    window: int = F(50, "tasks asked about at once (a new one starts when one is routed)",
                    ge=1, le=1_000_000)


def calibrated(stated: np.ndarray, checked: np.ndarray, surplus: np.ndarray, strength: float,
               width: float) -> tuple[np.ndarray, np.ndarray]:
    """(accuracy, upper bound) of answers of ``stated`` confidence from a model whose
    ``checked`` answers were right ``surplus`` times more than their stated confidences said:
    the stated confidence plus the calibration offset ``surplus / (checked + strength)`` (the
    prior: calibrated, worth ``strength`` answers), within (0, 1); the bound adds ``width``
    standard deviations of a proportion seen ``checked + strength`` times, at most 1."""
    accuracy = np.clip(stated + surplus / (checked + strength), EDGE, 1.0 - EDGE)
    sd = np.sqrt(accuracy * (1.0 - accuracy) / (checked + strength + 1.0))
    return accuracy, np.minimum(accuracy + width * sd, 1.0)


def vote_log_odds(accuracy: np.ndarray, n_classes: int) -> np.ndarray:
    """How much one answer of this accuracy lifts its class's log posterior against each other
    class (each other class equally likely when it is wrong)."""
    accuracy = np.clip(accuracy, EDGE, 1.0 - EDGE)
    return np.log(accuracy) - np.log((1.0 - accuracy) / max(n_classes - 1, 1))


class CostAwareModelsPolicy(NamedMachinesFirst[CostAwareModelsOptions]):
    """Per task, models one at a time by upper confidence bound of accuracy per price, until
    their weighted vote is confident; humans on the tasks still unsure."""

    name = "cost-aware-models"
    Options = CostAwareModelsOptions
    unit_cost = 2.0
    description = (
        "Cost-aware-models (after CaMVo, Elumar, Tekin & Yagan 2025) asks the machine "
        "annotators about each task one at a time: next the model with the largest upper "
        "confidence bound of its accuracy above chance per unit of price, each model's "
        "calibration (its accuracy against its stated confidence) learnt online per context "
        "(no answer yet, answers agreeing, disagreeing) from the answers the humans checked "
        "(never the truth). A task is closed on the models' confidence-weighted vote once it "
        "reaches `threshold`; after `max_calls` calls, or when no model left could lift the "
        "vote to "
        "`threshold`, humans label it until `agree` of their answers agree, at most "
        "`max_overlap` labels; so do `spot_checks` of the tasks the vote is confident on. "
        "`window` tasks are asked about at once, in order."
    )

    @classmethod
    def setting(cls, options: CostAwareModelsOptions) -> str:
        """The candidates, the stop and the budget per task."""
        asked = options.asked()
        return (f"the bandit chooses among {asked}, up to {options.max_calls} calls a task, "
                f"until the vote's confidence reaches {options.threshold:g} (exploration "
                f"{options.exploration:g}, {options.window} tasks at once); a task still unsure "
                f"goes to humans")

    @classmethod
    def rule(cls, options: CostAwareModelsOptions) -> str:
        """The routing and the humans' rule, as a clause."""
        return f"tasks the models' vote is unsure of go to humans, who then {cls.quorum(options)}"


    def bind(self, info: MarketInfo) -> None:
        """No call yet, no evidence; the class prior of the vote."""
        super().bind(info)
        n_models = self.chosen.size
        self.log_prior = np.log(np.clip(np.asarray(info.class_prior, dtype=np.float64),
                                        EDGE, None))
        #: Answers checked per (candidate, context) on the settled tasks, and how many more of
        #: them were right than their stated confidences said (the calibration evidence).
        self.checked = np.zeros((n_models, len(CONTEXTS)))
        self.surplus = np.zeros((n_models, len(CONTEXTS)))
        #: The context each candidate was asked about each task in (-1: not asked).
        self.context = np.full((n_models, self.n_tasks), -1, dtype=np.int64)
        self.started = np.zeros(self.n_tasks, dtype=bool)
        #: Routing decided per task: -1 not yet, 0 closed on the models, 1 to humans.
        self.decision = np.full(self.n_tasks, -1, dtype=np.int64)
        self.learnt = np.zeros(self.n_tasks, dtype=bool)
        #: Tasks the models' vote was confident on so far (the spot checks' running count).
        self.confident_seen = 0

    def first_calls(self) -> None:
        """None when the market starts: the first arrival starts the first ``window`` tasks."""

    def calls_per_model(self) -> np.ndarray:
        """Calls sent so far per candidate (the scenario's machines ``asked_machines`` chose)."""
        return self.desk.asked[self.chosen].sum(axis=1)

    def contexts(self, tasks: np.ndarray) -> np.ndarray:
        """Each of ``tasks``' context now, an index of :data:`CONTEXTS`: no answer in, the
        answers in agree, or they disagree."""
        answers = self.desk.answers[np.ix_(self.chosen, tasks)]
        top = answers.max(axis=0)
        agree = ((answers < 0) | (answers == top)).all(axis=0)
        return np.where(top < 0, 0, np.where(agree, 1, 2))

    def upper_bounds(self, tasks: np.ndarray) -> np.ndarray:
        """(n_models, n_tasks): each candidate's upper confidence bound of its accuracy on
        each of ``tasks`` in the task's current context, the prior centred on its mean stated
        confidence so far (1 before any answer)."""
        stated = self.desk.confidence[self.chosen]
        seen = np.isfinite(stated).sum(axis=1)
        centre = np.where(seen > 0, np.nansum(stated, axis=1) / np.maximum(seen, 1), 1.0)
        context = self.contexts(tasks)
        _, upper = calibrated(centre[:, None], self.checked[:, context],
                              self.surplus[:, context], self.options.prior_strength,
                              self.options.exploration)
        return upper

    def lifts(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(answers, lift), each (n_models, n_tasks): the candidates' answers about ``tasks``
        (-1: none) and how much each lifts its class's log posterior — the log odds of its
        accuracy estimate in the context it was asked in, the prior centred on the answer's
        stated confidence (0 where there is no answer)."""
        answers = self.desk.answers[np.ix_(self.chosen, tasks)]
        have = answers >= 0
        context = np.maximum(self.context[:, tasks], 0)
        rows = np.arange(self.chosen.size)[:, None]
        stated = np.nan_to_num(self.desk.confidence[np.ix_(self.chosen, tasks)], nan=1.0)
        accuracy, _ = calibrated(stated, self.checked[rows, context],
                                 self.surplus[rows, context], self.options.prior_strength, 0.0)
        return answers, np.where(have, vote_log_odds(accuracy, self.n_classes), 0.0)

    def posterior(self, answers: np.ndarray, lift: np.ndarray) -> np.ndarray:
        """(n_tasks, K): each class's log posterior (unnormalised) from the class prior and
        the answers' ``lift`` (:meth:`lifts`)."""
        n_models, n_tasks = answers.shape
        score = np.tile(self.log_prior, (n_tasks, 1))
        np.add.at(score, (np.tile(np.arange(n_tasks), n_models),
                          np.maximum(answers, 0).ravel()), lift.ravel())
        return score

    def advance(self, state: MarketState) -> None:
        """Learn from the tasks settled since the last arrival, start new tasks up to
        ``window``, and for every task whose calls are all answered: close it on a confident
        vote, send it to humans, or ask its next model."""
        self.learn(state)
        busy = int((self.started & (self.decision < 0)).sum())
        if busy < self.options.window:
            waiting = np.flatnonzero(~self.started)[: self.options.window - busy]
            self.started[waiting] = True
        models = self.chosen
        active = np.flatnonzero(self.started & (self.decision < 0))
        if active.size == 0:
            return
        done = (self.desk.answered[np.ix_(models, active)]
                >= self.desk.asked[np.ix_(models, active)]).all(axis=0)
        tasks = active[done]
        if tasks.size == 0:
            return
        score = self.posterior(*self.lifts(tasks))
        proba = np.exp(score - score.max(axis=1, keepdims=True))
        proba /= proba.sum(axis=1, keepdims=True)
        leader = proba.argmax(axis=1)
        calls = (self.context[:, tasks] >= 0).sum(axis=0)
        confident = (calls > 0) & (proba.max(axis=1) >= self.options.threshold)
        upper = self.upper_bounds(tasks)
        untried = self.context[:, tasks] < 0
        # The best the models left could do: every one of them agreeing with the leader.
        best = score[np.arange(tasks.size), leader] + np.where(
            untried, vote_log_odds(upper, self.n_classes), 0.0).sum(axis=0)
        rival = np.where(np.arange(self.n_classes) == leader[:, None], -np.inf, score)
        reachable = 1.0 / (1.0 + np.exp(rival - best[:, None]).sum(axis=1)) \
            >= self.options.threshold
        value = np.where(untried, (upper - 1.0 / self.n_classes) / np.maximum(
            self.desk.price[models][:, None], EDGE), -np.inf)
        pick = value.argmax(axis=0)
        worth = value[pick, np.arange(tasks.size)] > 0
        ask = ~confident & reachable & worth & (calls < self.options.max_calls)
        self.decision[tasks[confident]] = 0
        self.decision[tasks[~confident & ~ask]] = 1
        self.spot_check(tasks[confident])
        context = self.contexts(tasks)
        for row in range(models.size):  # one batch of calls per machine
            chosen = np.flatnonzero(ask & (pick == row))
            sent = self.desk.ask(int(models[row]), tasks[chosen])
            self.context[row, tasks[chosen[:sent]]] = context[chosen[:sent]]
            self.decision[tasks[chosen[sent:]]] = 1  # unpaid: the models cannot judge it

    def spot_check(self, confident: np.ndarray) -> None:
        """Send ``spot_checks`` of the tasks the vote is confident on to humans anyway, evenly
        (the k-th confident task when ``floor(k * share)`` steps up): their answers then teach
        the calibration of the answers the vote trusts, which the unsure tasks never show."""
        share = self.options.spot_checks
        if share <= 0 or confident.size == 0:
            return
        k = self.confident_seen + np.arange(1, confident.size + 1)
        self.confident_seen += confident.size
        checked = confident[np.floor(k * share) > np.floor((k - 1) * share)]
        self.decision[checked] = 1

    def learn(self, state: MarketState) -> None:
        """Each candidate's answers on the tasks closed since the last call, right or wrong
        against the humans' majority where humans labelled the task and one answer leads (with
        ``learn_from = "all"``, else against the vote of the *other* models where two or more
        answered), counted with their stated confidences in the context each was asked in."""
        tasks = np.flatnonzero(self.closed & ~self.learnt & (self.decision >= 0))
        if tasks.size == 0:
            return
        self.learnt[tasks] = True
        answers, lift = self.lifts(tasks)
        have = answers >= 0
        # leave one out: the vote without each model's own answer (n_models, n_tasks)
        score = self.posterior(answers, lift)
        others = np.broadcast_to(score, (answers.shape[0], *score.shape)).copy()
        rows, cols = np.nonzero(have)
        others[rows, cols, answers[rows, cols]] -= lift[rows, cols]
        reference = others.argmax(axis=2)
        checked = have & (have.sum(axis=0) >= 2) & (self.options.learn_from == "all")
        if state.task_votes is not None:
            votes = np.asarray(state.task_votes)[tasks]
            top = votes.max(axis=1)
            leads = (top > 0) & ((votes == top[:, None]).sum(axis=1) == 1)
            reference[:, leads] = votes[leads].argmax(axis=1)
            checked |= have & leads
        context = self.context[:, tasks]
        counted = checked & (context >= 0)
        rows = np.broadcast_to(np.arange(answers.shape[0])[:, None], answers.shape)
        stated = self.desk.confidence[np.ix_(self.chosen, tasks)]
        right = (answers == reference).astype(np.float64)
        np.add.at(self.checked, (rows[counted], context[counted]), 1.0)
        np.add.at(self.surplus, (rows[counted], context[counted]),
                  right[counted] - stated[counted])

    def ready(self) -> np.ndarray:
        """Tasks whose routing was decided and not yet settled."""
        return np.flatnonzero((self.decision >= 0) & ~self.routed)

    def route(self, tasks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Humans on the tasks decided so (unsure after the calls, or unpaid)."""
        return self.decision[tasks] == 1
