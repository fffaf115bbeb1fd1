"""The market's books: every label handed out and received, the money it commits and pays, and
the limits they must respect (issue #25).

One :class:`Ledger` per market, and the only place that debits anything: the initial graph, task
labels, gold answers, machine calls (issue #41: a call is a label of ``budget.edges``, paid when
sent, outstanding until its answer arrives). Every debit checks the invariants where they are
kept — labels within ``budget.edges``, money within ``budget.money``, no worker above
``workers.capacity``, no closed account (a blocked or departed worker) handed another label,
simulated time never decreasing — so a broken rule elsewhere stops the run with a
:class:`LedgerError` instead of writing a wrong number. The rules that decide who *may* work
live in :mod:`marketsim.market.workforce`; the ledger only refuses what no rule may ever allow.

A label handed out is **outstanding** until it is answered or abandoned (issue #38): per worker,
handed = answered + abandoned + outstanding, and the money of a money budget is spent (answers
paid) + held (for the outstanding labels) + left, at every step. The books' audit at each curve
point and at the end of a run, recomputed from the per-worker arrays, is
:mod:`marketsim.market.audit`.
"""

from __future__ import annotations

import math

import numpy as np

from marketsim.errors import SimulationError

#: Relative slack on the money budget: prices summed one label at a time may round above a
#: budget that is an exact multiple of them.
MONEY_SLACK = 1e-12


class LedgerError(SimulationError):
    """An accounting invariant would break: a bug in marketsim (or a plug-in), never a result."""

    def __init__(self, message: str, details: str = "") -> None:
        text = message if "internal error" in message else \
            f"internal error (please report it): {message}"
        super().__init__(text, details)


class Ledger:
    """Labels and money of one market, per worker and in total.

    ``handed`` counts hand-outs (labels in flight included: capacity and money are committed when
    a label is handed out), ``received`` the answers that came back (task labels and gold
    answers), ``abandoned`` the hand-outs left unanswered and ``outstanding`` those still out;
    ``spent`` is the money paid for received answers, what the curve records, ``held`` the money
    committed to the outstanding labels (``committed`` = spent + held).

    ``price`` is each worker's reward per label; the requester pays ``cost`` = price × (1 +
    ``fee``), the platform's fee on every payment (gold included): every debit, limit and check
    counts the cost, so the money budget and the money to a target include the fee.
    """

    def __init__(self, price: np.ndarray, edges: int, money: float | None,
                 capacity: int | None, fee: float = 0.0) -> None:
        self.price = np.asarray(price, dtype=np.float64)
        self.fee = float(fee)
        #: What one label of each worker costs the requester: the reward plus the fee.
        self.cost = self.price * (1.0 + self.fee)
        #: The same as Python floats: a label's debit reads one without a numpy scalar.
        self._cost = self.cost.tolist()
        self.edges = int(edges)
        #: Labels the run buys in all: ``edges``, lowered to what was handed out when the
        #: money can pay no one (:meth:`stop_buying`).
        self.target = self.edges
        #: Why the run stopped buying before ``edges`` (:meth:`stop_buying`), else None.
        self.stopped: str | None = None
        self.money = money
        self.capacity = capacity
        m = self.price.size
        self.handed = np.zeros(m, dtype=np.int64)
        self.received = np.zeros(m, dtype=np.int64)
        #: Task labels (not gold answers) received from each worker.
        self.labels = np.zeros(m, dtype=np.int64)
        #: Hand-outs each worker abandoned (``workers.service.abandon``; never paid), and of
        #: them the task labels (not gold questions).
        self.abandoned = np.zeros(m, dtype=np.int64)
        self.abandoned_tasks = np.zeros(m, dtype=np.int64)
        #: Hand-outs neither answered nor abandoned yet, counted as they happen (per worker:
        #: :attr:`outstanding`).
        self.n_outstanding = 0
        #: Each worker's outstanding labels as Python ints, for the per-label checks (numpy
        #: scalar reads cost several times more); the audit (:mod:`marketsim.market.audit`)
        #: compares them with ``handed - received - abandoned`` at every curve point.
        self._out = [0] * m
        #: Workers who may never be handed another label (blocked, departed), and why.
        self.closed = np.zeros(m, dtype=bool)
        #: Whether any account is closed (a hand-out reads ``closed`` only then).
        self.any_closed = False
        self.assigned = 0
        self.task_labels = 0
        self.gold_labels = 0
        self.committed = 0.0
        self.spent = 0.0
        #: Money committed to the outstanding labels: paid when answered, released when
        #: abandoned.
        self.held = 0.0
        self.gold_spent = 0.0
        #: Machine calls sent and not answered, answers received (labels of ``edges``), and
        #: the money paid for the calls (in ``spent``).
        self.calls_out = 0
        self.call_labels = 0
        self.calls_spent = 0.0
        self.now = 0.0

    # --- what the books say -------------------------------------------------------------------
    @property
    def bought(self) -> int:
        """Answers received so far, gold and machine answers included: what ``budget.edges``
        counts."""
        return self.task_labels + self.gold_labels + self.call_labels

    @property
    def outstanding(self) -> np.ndarray:
        """Each worker's hand-outs neither answered nor abandoned yet."""
        return self.handed - self.received - self.abandoned

    def outstanding_list(self) -> list[int]:
        """Each worker's outstanding labels as the running count the per-label debits keep
        (what :func:`marketsim.market.audit.check_labels` compares with :attr:`outstanding`)."""
        return self._out

    @property
    def in_flight(self) -> int:
        """Labels handed out and neither answered nor abandoned yet (outstanding), machine
        calls not answered yet included."""
        return self.n_outstanding + self.calls_out

    def affordable(self, price: float) -> bool:
        """Whether one more label at ``price`` fits in the money budget."""
        return self.money is None or self.committed + price <= self.money * (1 + MONEY_SLACK)

    def full(self, worker: int) -> bool:
        """Whether ``worker`` has given (or holds) ``workers.capacity`` labels."""
        return self.capacity is not None and int(self.handed[worker]) >= self.capacity

    # --- debits -------------------------------------------------------------------------------
    def buy_initial(self, workers: np.ndarray) -> np.ndarray:
        """Buy the initial graph's labels (``workers``: who gave each, in the graph's order)
        within capacity and money; the mask of the labels bought.

        A worker keeps their first ``capacity`` labels of the graph, and the labels are paid in
        order while the money lasts; the scenario check refuses initial graphs that can never
        fit (:func:`marketsim.scenario.mechanics.check_initial_graph`), so only random graphs
        (``bernoulli``, price tiers) are ever cut here."""
        workers = np.asarray(workers, dtype=np.int64)
        keep = np.ones(workers.size, dtype=bool)
        if self.capacity is not None and workers.size:
            order = np.argsort(workers, kind="stable")
            sorted_w = workers[order]
            starts = np.flatnonzero(np.r_[True, sorted_w[1:] != sorted_w[:-1]])
            rank = np.arange(workers.size) - np.repeat(starts, np.diff(np.r_[starts,
                                                                                workers.size]))
            keep[order] = rank < self.capacity - self.handed[sorted_w]
        if self.money is not None and keep.any():
            cost = np.cumsum(np.where(keep, self.cost[workers], 0.0))
            keep &= cost <= (self.money - self.committed) * (1 + MONEY_SLACK)
        bought = workers[keep]
        counts = np.bincount(bought, minlength=self.handed.size)
        paid = float(self.cost[bought].sum())
        self.handed += counts
        self.received += counts
        self.labels += counts
        self.assigned += bought.size
        self.task_labels += bought.size
        self.committed += paid
        self.spent += paid
        self.check_totals("the initial graph")
        return keep

    def hand_out(self, worker: int, now: float) -> None:
        """Commit one label to ``worker`` (task or gold): refused, as an internal error, when it
        would break a limit or the worker's account is closed. Scalar code, once per label:
        each check is a comparison of Python numbers unless its limit is set."""
        if now < self.now:
            self._tick(now)  # raises: simulated time went back
        self.now = now
        if self.any_closed and self.closed[worker]:
            raise LedgerError(f"worker {worker} was handed a label after being blocked or "
                              "leaving the market")
        if self.capacity is not None and self.full(worker):
            raise LedgerError(f"worker {worker} was handed a label beyond workers.capacity = "
                              f"{self.capacity}")
        if self.assigned >= self.edges:
            raise LedgerError(f"a label was handed out beyond budget.edges = {self.edges}")
        price = self._cost[worker]
        if self.money is not None and not self.affordable(price):
            raise LedgerError(f"a label at price {price:g} was handed out with "
                              f"{self.money_left():g} of budget.money left")
        self.handed[worker] += 1
        self._out[worker] += 1
        self.n_outstanding += 1
        self.assigned += 1
        self.committed += price
        self.held += price

    def receive(self, worker: int, now: float, *, gold: bool = False) -> None:
        """Pay ``worker`` for an answer that came back (a task label, or a gold answer).
        Scalar code, once per label (:meth:`_settle` inlined)."""
        if now < self.now:
            self._tick(now)  # raises: simulated time went back
        self.now = now
        out = self._out
        if out[worker] <= 0:
            raise LedgerError(f"worker {worker} delivered an answer they were never handed "
                              "(or had abandoned)")
        price = self._cost[worker]
        self.received[worker] += 1
        out[worker] -= 1
        self.n_outstanding -= 1
        self.held -= price
        if self.held < 0 and self.held < -self.money_tol():  # the tolerance only when needed
            raise LedgerError(f"money held for outstanding labels went negative ({self.held!r})")
        self.spent += price
        if gold:
            self.gold_labels += 1
            self.gold_spent += price
        else:
            self.task_labels += 1
            self.labels[worker] += 1

    def hand_out_block(self, workers: np.ndarray, now: float) -> None:
        """Commit one task label to each of ``workers`` (the block engine's hand-outs up to
        simulated time ``now``): the checks of :meth:`hand_out`, on the whole block at once."""
        self._tick(now)
        workers = np.asarray(workers, dtype=np.int64)
        counts = np.bincount(workers, minlength=self.handed.size)
        cost = float(self.cost[workers].sum())
        hit = np.flatnonzero(counts & self.closed)
        if hit.size:
            raise LedgerError(f"worker {int(hit[0])} was handed a label after being blocked or "
                              "leaving the market")
        if self.capacity is not None and bool((self.handed + counts > self.capacity).any()):
            raise LedgerError(f"a worker was handed a label beyond workers.capacity = "
                              f"{self.capacity}")
        if self.assigned + workers.size > self.edges:
            raise LedgerError(f"a label was handed out beyond budget.edges = {self.edges}")
        if self.money is not None and self.committed + cost > self.money * (1 + MONEY_SLACK):
            raise LedgerError(f"labels costing {cost:g} were handed out with "
                              f"{self.money_left():g} of budget.money left")
        self.handed += counts
        self._out = self.outstanding.tolist()
        self.n_outstanding += workers.size
        self.assigned += workers.size
        self.committed += cost
        self.held += cost

    def receive_block(self, workers: np.ndarray, now: float) -> None:
        """Pay each of ``workers`` for a task label that came back (the block engine's answers,
        received at simulated time ``now``): :meth:`receive`'s check on the whole block."""
        self._tick(now)
        workers = np.asarray(workers, dtype=np.int64)
        counts = np.bincount(workers, minlength=self.received.size)
        over = np.flatnonzero(counts > self.outstanding)
        if over.size:
            raise LedgerError(f"worker {int(over[0])} delivered an answer they were never "
                              "handed")
        cost = float(self.cost[workers].sum())
        self.received += counts
        self._out = self.outstanding.tolist()
        self.labels += counts
        self.n_outstanding -= workers.size
        self.held -= cost
        self.spent += cost
        self.task_labels += workers.size
        self.check_money("a block of answers")

    def abandon(self, worker: int, now: float, *, gold: bool = False) -> None:
        """``worker`` left a hand-out unanswered: nothing is paid, the money it committed is
        released and the label may be handed out again (after a stop, the run buys one label
        fewer). It still counts against the worker's ``workers.capacity``."""
        self._tick(now)
        if self._out[worker] <= 0:
            raise LedgerError(f"worker {worker} abandoned a label they were never handed")
        price = self._cost[worker]
        self.abandoned[worker] += 1
        self.abandoned_tasks[worker] += int(not gold)
        self._settle(worker, 1, price)
        self.assigned -= 1
        self.committed -= price
        if self.stopped is not None:
            self.target -= 1

    def send_calls(self, n_calls: int, cost: float, now: float) -> None:
        """Send ``n_calls`` machine calls costing ``cost`` at ``now``: each is a label of
        ``budget.edges`` (counted in ``assigned`` until answered, then in ``bought``) and is
        paid when sent, as an API bills a request; refused, as an internal error, beyond the
        run's target or ``budget.money``."""
        self._tick(now)
        if self.assigned + n_calls > self.target:
            raise LedgerError(f"{n_calls} machine calls were sent with {self.assigned} of "
                              f"{self.target} labels handed out")
        if not self.affordable(cost):
            raise LedgerError(f"machine calls costing {cost:g} were sent with "
                              f"{self.money_left():g} of budget.money left")
        self.assigned += n_calls
        self.calls_out += n_calls
        self.committed += cost
        self.spent += cost
        self.calls_spent += cost

    def receive_calls(self, n_calls: int, now: float) -> None:
        """``n_calls`` machine answers arrived at ``now`` (already paid when sent)."""
        self._tick(now)
        if n_calls > self.calls_out:
            raise LedgerError(f"{n_calls} machine answers arrived with {self.calls_out} calls "
                              "out")
        self.calls_out -= n_calls
        self.call_labels += n_calls

    def _settle(self, worker: int, count: int, price: float) -> None:
        """``count`` outstanding labels of ``worker`` at ``price`` each were answered or
        abandoned: they and their money are no longer held."""
        self._out[worker] -= count
        self.n_outstanding -= count
        self.held -= count * price
        if self.held < 0 and self.held < -self.money_tol():  # the tolerance only when needed
            raise LedgerError(f"money held for outstanding labels went negative ({self.held!r})")

    def stop_buying(self, reason: str) -> None:
        """The money can pay no worker who may still work, or no worker may work at all: the
        run ends with the labels already handed out (those in flight are still received and
        paid), and ``reason`` is recorded (the audit's
        :func:`~marketsim.market.audit.check_closed_books` requires one for a run that bought
        fewer than ``budget.edges``)."""
        self.target = self.assigned
        self.stopped = reason

    def close(self, worker: int) -> None:
        """``worker`` may never be handed another label (blocked, or gone for good)."""
        self.closed[worker] = True
        self.any_closed = True

    # --- checks -------------------------------------------------------------------------------
    def money_left(self) -> float:
        """Money not yet committed (infinite without a money budget)."""
        return math.inf if self.money is None else self.money - self.committed

    def _tick(self, now: float) -> None:
        if now < self.now:
            raise LedgerError(f"simulated time went back from {self.now!r} to {now!r}")
        self.now = now

    def money_tol(self) -> float:
        """Rounding slack of money sums: relative to the money moved so far."""
        return 1e-9 * max(1.0, self.committed, self.spent)

    def check_money(self, when: str) -> None:
        """Spent + held + left = the money budget (spent + held = committed without one)."""
        if not math.isclose(self.spent + self.held, self.committed, rel_tol=1e-9,
                            abs_tol=self.money_tol()):
            raise LedgerError(f"{when}: money spent {self.spent!r} + held for outstanding "
                              f"labels {self.held!r} is not the money committed "
                              f"{self.committed!r} (budget.money = {self.money!r})")

    def check_totals(self, when: str) -> None:
        """The labels bought within ``budget.edges``, the money within ``budget.money``, no
        worker above ``workers.capacity``."""
        if self.bought > self.edges:
            raise LedgerError(f"{when}: {self.bought} labels bought, more than budget.edges = "
                              f"{self.edges}")
        if self.money is not None and self.committed > self.money * (1 + MONEY_SLACK):
            raise LedgerError(f"{when}: {self.committed!r} money committed, more than "
                              f"budget.money = {self.money!r}")
        if self.capacity is not None and self.handed.size and \
                int(self.handed.max()) > self.capacity:
            raise LedgerError(f"{when}: a worker holds more than workers.capacity = "
                              f"{self.capacity} labels")

