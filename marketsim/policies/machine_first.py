"""What the policies that ask machine annotators first share (issue #41): each task waits for
the models' answers and is then **routed** — closed on them, or sent to humans, who label it
until a quorum agrees (:class:`~marketsim.policies.quorum.AgreementQuorum`, the
``until-agreement`` rule on the humans' labels: ``agree`` agreeing answers, at most
``max_overlap`` labels).

A subclass says which machines it may ask (:meth:`MachineFirst.asked_machines`) and which tasks
go to humans once their answers are in (:meth:`MachineFirst.route`). By default every chosen
machine is asked about every task when the market starts (:meth:`MachineFirst.first_calls`:
``cascade``, ``verify``); a policy that asks one call at a time (``cost-aware-models``) sends
none then, and sends its calls at each arrival (:meth:`MachineFirst.advance`), saying itself
which tasks are ready (:meth:`MachineFirst.ready`). The overlap bookkeeping
(:class:`~marketsim.policies.overlap.OverlapRule`) does the rest, so the requester stops spending
once every task is closed. A task the money or ``budget.edges`` left unasked goes to humans (the
models cannot judge it). The machines' answers reach the policy through ``MarketInfo.machines``
(:class:`~marketsim.policies.base.MachineDesk`), live; the humans' labels through the market's
live counts, as for every preset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar, cast

import numpy as np

from marketsim.options import F, OptionError
from marketsim.options import Options as OptionsModel
from marketsim.policies.base import MachineDesk, MarketInfo, MarketState
from marketsim.policies.quorum import AgreementQuorum, QuorumOptions
from marketsim.tables import Strings


class HumanQuorumOptions(QuorumOptions):
    """The humans' rule on a task the models send them (until agreement)."""

    agree: int = F(2, "humans close a task sent to them once this many of their answers agree",
                   ge=1, le=1000)
    max_overlap: int = F(3, "human labels per task sent to them at most (closed without "
                         "agreement there)", ge=1, le=1000)


class NamedMachinesOptions(HumanQuorumOptions):
    """The humans' rule, and the machines a policy may ask by name (a subclass restates
    ``machines`` with its own words)."""

    machines: Strings = F((), "the machines asked, by name (empty: every machine of the "
                          "scenario)", shown="all")

    def asked(self) -> str:
        """The machines asked, in words: their names, or "every machine"."""
        return ", ".join(self.machines) if self.machines else "every machine"


QuorumT = TypeVar("QuorumT", bound=HumanQuorumOptions)
NamedT = TypeVar("NamedT", bound=NamedMachinesOptions)


class MachineFirst(AgreementQuorum[QuorumT]):
    """Machines first, then a human quorum (:class:`AgreementQuorum`) on the tasks
    :meth:`route` sends to humans."""

    @classmethod
    def machines_problem(cls, options: QuorumT, names: Sequence[str]) -> tuple[str, str] | None:
        """(option, sentence) of what is wrong with these options for a scenario whose
        ``[[machines]]`` are ``names``, else ``None``: the policy needs machines."""
        if not names:
            return "name", f"{cls.name!r} asks machine annotators first: the scenario needs " \
                "[[machines]]"
        return None

    @classmethod
    def quorum(cls, options: HumanQuorumOptions) -> str:
        """The humans' rule in words."""
        return (f"humans label it until {options.agree} of their answers agree, at most "
                f"{options.max_overlap} labels")

    @classmethod
    def setting(cls, options: QuorumT) -> str:
        """What the machines do with these options, as the clause before the humans' rule in
        :meth:`describe` (``..., and humans label it until ...``)."""
        raise NotImplementedError

    @classmethod
    def describe(cls, options: OptionsModel | None = None) -> str:
        """The paragraph; with ``options``, the machines' part and the humans' rule with their
        values."""
        text = " ".join(cls.description.split())
        if not isinstance(options, cls.Options) or not isinstance(options, HumanQuorumOptions):
            return text
        own = cast(QuorumT, options)  # validated by this class's own Options model
        return f"{text} With these options, {cls.setting(own)}, and {cls.quorum(options)}."

    def asked_machines(self, desk: MachineDesk) -> np.ndarray:
        """The indices of the machines asked about every task."""
        raise NotImplementedError

    def route(self, tasks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Whether each of ``tasks`` (their models' answers in, or never asked) goes to
        humans."""
        raise NotImplementedError

    def bind(self, info: MarketInfo) -> None:
        """Every task waits for its models; each chosen machine is asked about every task (as
        many calls as the labels and money left pay)."""
        super().bind(info)
        if info.machines is None:
            raise OptionError(type(self).__name__, "needs machine annotators ([[machines]])")
        self.desk = info.machines
        self.wanted[:] = 0  # no human label before the models answered
        self.routed = np.zeros(self.n_tasks, dtype=bool)
        self.chosen = self.asked_machines(self.desk)
        self.first_calls()

    def first_calls(self) -> None:
        """The calls sent when the market starts: each chosen machine about every task."""
        for machine in self.chosen.tolist():
            self.desk.ask(machine, np.arange(self.n_tasks))

    def ready(self) -> np.ndarray:
        """Tasks not routed yet whose chosen models all answered every call sent."""
        asked, answered = self.desk.asked[self.chosen], self.desk.answered[self.chosen]
        return np.flatnonzero(~self.routed & (answered >= asked).all(axis=0))

    def settle(self, tasks: np.ndarray, humans: np.ndarray) -> None:
        """Routed ``tasks``: those for ``humans`` want the quorum's first labels, the others
        are closed on the models' answers."""
        self.closed[tasks[~humans]] = True
        self.wanted[tasks[humans]] = self.first()

    def advance(self, state: MarketState) -> None:
        """What a subclass does at each arrival before the answers in are routed (nothing:
        every call was sent when the market started)."""

    def before_hand_out(self, state: MarketState, rng: np.random.Generator) -> None:
        """What a subclass does at each arrival once the answers in were routed (nothing)."""

    def assign(self, worker: int, state: MarketState, rng: np.random.Generator) -> int | None:
        """Route the tasks whose models answered, then the overlap rule's hand-out."""
        self.advance(state)
        tasks = self.ready()
        if tasks.size:
            humans = self.route(tasks, rng)
            self.routed[tasks] = True
            self.settle(tasks, humans)
        self.before_hand_out(state, rng)
        return super().assign(worker, state, rng)

    def models_agree(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For ``tasks``: whether every chosen model answered and they all agree, and the
        lowest confidence among them (NaN where one has no answer)."""
        answers = self.desk.answers[np.ix_(self.chosen, tasks)]
        confidence = self.desk.confidence[np.ix_(self.chosen, tasks)]
        agree = (answers >= 0).all(axis=0) & (answers == answers[:1]).all(axis=0)
        return agree, confidence.min(axis=0)


class NamedMachinesFirst(MachineFirst[NamedT]):
    """A machine-first policy that asks the machines its ``machines`` option names (all when
    empty): ``cascade``, ``cost-aware-models``."""

    @classmethod
    def machines_problem(cls, options: NamedT, names: Sequence[str]) -> tuple[str, str] | None:
        """It needs machines, and each of ``machines`` must name one."""
        problem = super().machines_problem(options, names)
        unknown = [m for m in options.machines if m not in names]
        if problem is None and unknown:
            return "machines", f"names {unknown[0]!r}, which is not one of the scenario's " \
                f"[[machines]] ({', '.join(names)})"
        return problem

    def asked_machines(self, desk: MachineDesk) -> np.ndarray:
        """The machines ``machines`` names, in the scenario's order (all when empty)."""
        wanted = set(self.options.machines) or set(desk.names)
        return np.array([i for i, name in enumerate(desk.names) if name in wanted],
                        dtype=np.int64)
