"""The block engine (``[scenario] engine = "blocks"``): the market of
:class:`~marketsim.market.market.Market` without its event loop, for markets where the loop does
nothing but hand out one label at a time (issue #30).

In such a market — Poisson arrivals of uniformly (or weight-) chosen workers, answers at once
(no labelling time, no abandonment), no gold, no worker rules, a policy that ranks tasks — the
ranking is fixed between two refreshes, so everything up to the next refresh can be drawn and
handed out as arrays: the arrivals (gaps and workers from the arrivals stream), the hand-outs
(the requester's rule over the block, :class:`~marketsim.market.block_requester.BlockRequester`,
in C), the answers (the world's answer model, ``answer_block``), the log (one ``extend``), the
ledger (one debit per block, :meth:`~marketsim.market.ledger.Ledger.hand_out_block`), then the
Market's own :meth:`~marketsim.market.market.Market.refresh` — the same fit, recorder and
ranking. The model is the event engine's; the random draws are laid out differently (all the
gaps of a block, then all its workers, then all its answers), so the curves are another sample
of the same model, not the same numbers. What it refuses is checked when the scenario is parsed
(:mod:`marketsim.scenario.engine`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from marketsim.errors import InputError, SimulationError
from marketsim.market.arrivals import Arrivals
from marketsim.market.audit import check_closed_books
from marketsim.market.block_requester import BlockRequester
from marketsim.market.market import Market
from marketsim.policies.base import policy_type
from marketsim.record.curves import CurvePoint

#: Arrivals drawn and walked at once at most (their temporaries stay this size).
CHUNK = 1 << 21


class BlockAnswers(Protocol):
    """An answer model that draws a block of labels at once."""

    def answer_block(self, tasks: np.ndarray, workers: np.ndarray) -> np.ndarray:
        """The labels ``workers`` give ``tasks``, one per hand-out."""


class BlockTasks:
    """The block requester as the market's :class:`~marketsim.market.requester.TaskRequester`:
    rounds from the refresh's ranking (what :meth:`Market.refresh` calls), and one hand-out at a
    time for a caller that asks so (the block engine asks for blocks)."""

    def __init__(self, blocks: BlockRequester) -> None:
        self.blocks = blocks

    def new_round(self, ranking: np.ndarray) -> None:
        """Start a round from a fresh ranking."""
        self.blocks.new_round(ranking)

    def mark(self, task: int, worker: int) -> None:
        """``worker`` labelled ``task``: never hand them that task again."""
        self.blocks.mark(np.array([task]), np.array([worker]))

    def assign(self, worker: int) -> int | None:
        """Next task for ``worker``, or ``None`` if none is left for them."""
        tasks, _, _ = self.blocks.assign(np.array([worker]), 1)
        return None if tasks[0] < 0 else int(tasks[0])

    def release(self, task: int, worker: int) -> None:
        """Never called: the block engine has no abandonment (refused at parse)."""
        raise SimulationError("internal error (please report it): a hand-out was abandoned "
                              "in the block engine, which has no abandonment")


class BlockMarket(Market):
    """One market run in blocks between refreshes (same arguments as :class:`Market`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.worker_aware:  # an import-path policy is only known now
            raise InputError("scenario.engine = 'blocks' needs a policy that ranks tasks; this "
                             "arm's policy chooses per arriving worker (assign): use engine = "
                             "'events'", source=self.setup.source)
        draw = getattr(self.answers, "answer_block", None)
        if not callable(draw):
            raise InputError(f"scenario.engine = 'blocks' cannot draw answers of workers.model "
                             f"= {self.setup.workers.model!r} in blocks: use engine = "
                             "'events'", source=self.setup.source)
        self._answer_block: Callable[[np.ndarray, np.ndarray], np.ndarray] = draw
        sc = self.setup
        self.blocks = BlockRequester(sc.tasks.count, sc.workers.count, sc.tasks.classes,
                                     sc.max_labels, min(self.batch, sc.max_labels),
                                     self.log.incidence,
                                     even_rounds=policy_type(self.policy).even_rounds)
        self.requester = BlockTasks(self.blocks)

    def _hand_out(self, target: int, arrivals: Arrivals, clock: float) -> float:
        """Hand out labels until ``target`` are bought (answers at once): arrivals in chunks,
        the requester's rule over each, the answers, the log and the books in one step each.
        Returns the simulated time of the last arrival."""
        rng = self.streams.arrivals
        while self.bought < target:
            need = target - self.bought
            gaps, who = arrivals.draw_block(rng, min(max(need, 64), CHUNK))
            tasks, used, stuck = self.blocks.assign(who, need)
            arrivals.unused(who.size - used)  # a deck's cards not reached go back on top
            if used:
                clock += float(gaps[:used].sum())
            got = tasks >= 0
            handed, workers = tasks[got], who[:used][got]
            if handed.size:
                if clock > self.env.now:
                    self.env.run(until=clock)
                now = float(self.env.now)
                self.ledger.hand_out_block(workers, now)
                self.ledger.receive_block(workers, now)
                order = np.argsort(handed, kind="stable")  # logged in task order: the
                handed, workers = handed[order], workers[order]  # refresh reads them in order
                self._record(handed, workers, self._answer_block(handed, workers))
            if stuck:  # every worker arrived idle and got nothing since the last hand-out
                self._refused = set(range(self.setup.workers.count))
                self._stuck()
        return clock

    def run(self) -> list[CurvePoint]:
        """Buy the initial graph, refresh, then one block of hand-outs per refresh until the
        budget is spent."""
        w = self.world
        keep = self.workforce.initial(w.initial_workers)  # no rules in this engine: all kept
        tasks, workers = w.initial_tasks[keep], w.initial_workers[keep]
        self.blocks.mark(tasks, workers)
        self._record(tasks, workers, w.initial_labels[keep])
        self.refresh()
        arrivals = Arrivals(self.setup.workers.arrivals, self.setup.workers.count,
                            w.initial_workers)
        clock = 0.0
        while self.bought < self.budget:
            clock = self._hand_out(min(self.bought + self.batch, self.budget), arrivals, clock)
            self.blocks.forget_log()
            self.refresh()
        check_closed_books(self.ledger, self.curve[-1].edges, self.curve[-1].money)
        return self.curve
