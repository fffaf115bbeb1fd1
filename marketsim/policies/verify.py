"""Verify: a machine annotator labels every task and humans check a share of its labels, the
share adapted to the model accuracy their checks measure (issue #41)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy.special import ndtri

from marketsim.options import F
from marketsim.policies.base import MachineDesk, MarketInfo, MarketState
from marketsim.policies.machine_first import HumanQuorumOptions, MachineFirst


class VerifyOptions(HumanQuorumOptions):
    """``verify`` (the model labels, humans check a share)."""

    machine: str = F("", "the machine that labels every task, by name (empty: the scenario's "
                     "first)", shown="the first")
    order: Literal["confidence", "random"] = F(
        "confidence", "which labels humans check first: the model's least confident, or a "
        "random order (an unbiased estimate of its accuracy)")
    target: float = F(0.9, "stop opening checks once the lower confidence bound of the model's "
                      "measured accuracy reaches this", gt=0, le=1)
    level: float = F(0.95, "one-sided confidence level of that lower bound (Wilson score)",
                     ge=0.5, lt=1)
    min_share: float = F(0.05, "share of the tasks checked at least (opened at the start)",
                         gt=0, le=1)
    max_share: float = F(1.0, "share of the tasks checked at most", gt=0, le=1)


def wilson_lower(right: int, checked: int, level: float) -> float:
    """The one-sided Wilson score lower bound of an accuracy seen ``right`` times in
    ``checked`` checks (0 without checks)."""
    if checked == 0:
        return 0.0
    z = float(ndtri(level))
    p = right / checked
    centre = p + z * z / (2 * checked)
    spread = z * math.sqrt(p * (1 - p) / checked + z * z / (4 * checked * checked))
    return (centre - spread) / (1 + z * z / checked)


class VerifyPolicy(MachineFirst[VerifyOptions]):
    """The model labels every task; humans check a share of its labels, in order of its
    confidence (lowest first) or at random. ``min_share`` of the tasks are opened for checking
    at the start; each check the humans finish (their quorum's answer compared with the model's)
    while the Wilson lower bound of the model's measured accuracy is below ``target`` opens the
    next task in the order, up to ``max_share``; once the bound reaches ``target`` no check
    opens, and every unchecked task keeps the model's label. Checked lowest confidence first,
    the measured accuracy is that of the model's hardest labels, below its accuracy on the
    rest: the rule then stops later, never earlier, than on a random order."""

    name = "verify"
    Options = VerifyOptions
    description = (
        "Verify has one machine annotator (`machine`, the first by default) label every task "
        "and humans check a share of its labels, its least confident first (`order = "
        "\"confidence\"`) or at random: `min_share` of the tasks at the start, then one more "
        "for each check finished while the Wilson lower bound (at `level`) of the model's "
        "accuracy the checks measure is below `target`, up to `max_share`. A checked task is "
        "labelled by humans until `agree` of their answers agree (at most `max_overlap`); an "
        "unchecked one keeps the model's label, and the requester stops spending once every "
        "task is closed."
    )

    @classmethod
    def setting(cls, options: VerifyOptions) -> str:
        """Which machine labels and what share of its labels humans check."""
        return (f"{options.machine or 'the first machine'} labels every task; humans check "
                f"{options.min_share:.0%} to {options.max_share:.0%} of them ({options.order} "
                f"order) until the model's accuracy is above {options.target:g} at "
                f"{options.level:.0%} confidence")

    @classmethod
    def rule(cls, options: VerifyOptions) -> str:
        """The checks and the humans' rule, as a clause."""
        return (f"humans check {options.min_share:.0%} to {options.max_share:.0%} of the "
                f"model's labels and {cls.quorum(options)}")

    @classmethod
    def machines_problem(cls, options: VerifyOptions, names: Sequence[str]
                         ) -> tuple[str, str] | None:
        """It needs machines, ``machine`` must name one, and ``min_share <= max_share``."""
        problem = super().machines_problem(options, names)
        if problem is None and options.machine and options.machine not in names:
            return "machine", f"= {options.machine!r} is not one of the scenario's " \
                f"[[machines]] ({', '.join(names)})"
        if problem is None and options.min_share > options.max_share:
            return "min_share", f"= {options.min_share:g} must be <= max_share = " \
                f"{options.max_share:g}"
        return problem

    def asked_machines(self, desk: MachineDesk) -> np.ndarray:
        """The one machine ``machine`` names (the first when empty)."""
        name = self.options.machine or desk.names[0]
        return np.array([desk.names.index(name)], dtype=np.int64)

    def bind(self, info: MarketInfo) -> None:
        """The base's start, and no check counted yet."""
        super().bind(info)
        #: The tasks in the order humans check them (set once the model answered them all).
        self.order: np.ndarray | None = None
        self.opened = 0
        self.checking = np.zeros(self.n_tasks, dtype=bool)
        self.right = self.checked = 0
        #: Checks finished while the bound was below ``target`` (each opens one more).
        self.extra = 0

    def route(self, tasks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Only a task the model never answered goes to humans on its answers alone: the
        checks open the others (:meth:`before_hand_out`)."""
        return self.desk.answers[self.chosen[0], tasks] < 0

    def lower_bound(self) -> float:
        """The Wilson lower bound of the model's accuracy the finished checks measure."""
        return wilson_lower(self.right, self.checked, self.options.level)

    def settle(self, tasks: np.ndarray, humans: np.ndarray) -> None:
        """A task the model never answered goes to humans now; the others wait for the
        checks to open them (or to close them on the model's label)."""
        self.wanted[tasks[humans]] = self.first()
        self.checking[tasks[humans]] = True

    def before_hand_out(self, state: MarketState, rng: np.random.Generator) -> None:
        """Once the model answered every task, fix the order of the checks; then count the
        checks finished and open those the rule asks for."""
        if self.order is None and self.routed.all():
            if self.options.order == "random":
                candidates = rng.permutation(self.n_tasks)
            else:
                confidence = self.desk.confidence[self.chosen[0]]
                candidates = np.argsort(np.nan_to_num(confidence, nan=-1.0), kind="stable")
            self.order = candidates[~self.checking[candidates]]
        if self.order is not None:
            self.judge(state)
            self._count_checks(state)
            self._open_checks()

    def _count_checks(self, state: MarketState) -> None:
        """Checks finished (closed) since the last call: right when the model's answer has the
        most human votes; while the bound stays below ``target`` each opens one more."""
        done = np.flatnonzero(self.checking & self.closed)
        if done.size == 0:
            return
        self.checking[done] = False
        assert state.task_votes is not None
        votes = np.asarray(state.task_votes)[done]
        model = self.desk.answers[self.chosen[0], done]
        known = np.flatnonzero(model >= 0)  # a task the model never answered is no check
        right = votes[known, model[known]] == votes[known].max(axis=1)
        self.right += int(right.sum())
        self.checked += int(known.size)
        if self.lower_bound() < self.options.target:
            self.extra += int(known.size)

    def _open_checks(self) -> None:
        """Open ``min_share`` of the tasks, then one per check finished while the bound was
        below ``target``, up to ``max_share``; once the bound reaches ``target`` (or every
        task that may be checked is open) the tasks left unchecked are closed."""
        assert self.order is not None
        least = min(self.order.size, math.ceil(self.options.min_share * self.n_tasks))
        most = min(self.order.size, math.floor(self.options.max_share * self.n_tasks))
        stop = self.checked > 0 and self.lower_bound() >= self.options.target
        goal = self.opened if stop else max(least, min(most, least + self.extra))
        if goal > self.opened:
            tasks = self.order[self.opened:goal]
            self.wanted[tasks] = self.first()
            self.checking[tasks] = True
            self.opened = goal
        if stop or self.opened >= most:
            self.closed[self.order[self.opened:]] = True
