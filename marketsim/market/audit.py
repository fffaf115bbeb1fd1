"""The audit of a market's books: at every curve point and at the end of a run, the ledger's
running totals are recomputed from its per-worker arrays, independently of the debits that kept
them (:mod:`marketsim.market.ledger` checks each debit as it happens; this module checks that
the debits add up).

A broken identity is a :class:`~marketsim.market.ledger.LedgerError` (a bug in marketsim or a
plug-in, never a result): per worker, hand-outs = answers + abandoned + outstanding; the labels
the budget counts = answers (machine answers included) + outstanding (machine calls out
included); the money held = the costs of the outstanding labels; at the end, nothing in flight
and the money spent = the costs of the answers received plus the machine calls' prices.
"""

from __future__ import annotations

import math

import numpy as np

from marketsim.market.ledger import Ledger, LedgerError


def check_labels(ledger: Ledger, when: str) -> None:
    """Every worker's hand-outs = answers + abandoned + outstanding (none below zero), their
    total the running count, the labels the budget counts (``assigned``) = answers +
    outstanding (machine calls included), and the money held = the costs of the outstanding
    labels (vectorised; at each curve point and at the end)."""
    outstanding = ledger.outstanding
    wrong = np.flatnonzero(outstanding < 0)
    if wrong.size:
        w = int(wrong[0])
        raise LedgerError(f"{when}: worker {w} was handed {int(ledger.handed[w])} labels but "
                          f"answered {int(ledger.received[w])} and abandoned "
                          f"{int(ledger.abandoned[w])}")
    if int(outstanding.sum()) != ledger.n_outstanding or \
            outstanding.tolist() != ledger.outstanding_list() or \
            ledger.assigned != ledger.bought + ledger.in_flight:
        raise LedgerError(f"{when}: {ledger.assigned} labels handed out and not abandoned, "
                          f"{ledger.bought} answered, {int(outstanding.sum())} outstanding by "
                          f"worker, {ledger.n_outstanding} counted and {ledger.calls_out} "
                          "machine calls out")
    expected = float(np.dot(outstanding, ledger.cost))
    if not math.isclose(ledger.held, expected, rel_tol=1e-9, abs_tol=ledger.money_tol()):
        raise LedgerError(f"{when}: money held {ledger.held!r} is not the cost of the "
                          f"outstanding labels {expected!r}")
    ledger.check_money(when)


def check_new_point(ledger: Ledger, last_edges: int | None, edges: int) -> None:
    """A curve point at ``edges`` labels may follow one at ``last_edges``: one row per label
    count, labels strictly increasing; the books add up there."""
    if last_edges is not None and edges <= last_edges:
        raise LedgerError(f"a curve point at {edges} labels follows one at {last_edges}: "
                          "labels must strictly increase")
    check_labels(ledger, f"the curve point at {edges} labels")


def check_closed_books(ledger: Ledger, last_edges: int | None = None,
                       last_money: float | None = None) -> None:
    """The end of a run: nothing in flight, every limit kept, the money spent equal to the
    costs of the answers received (price × (1 + fee), re-summed per worker, independently of
    the running total) plus the machine calls', and the curve's last point (``last_edges``,
    ``last_money``) the final spend."""
    if last_edges is not None and (last_edges != ledger.bought or last_money != ledger.spent):
        raise LedgerError(f"the last curve point ({last_edges} labels, money "
                          f"{last_money!r}) is not the final spend ({ledger.bought} labels, "
                          f"money {ledger.spent!r})")
    if ledger.in_flight:
        raise LedgerError(f"the run ended with {ledger.in_flight} labels still in flight")
    check_labels(ledger, "at the end of the run")
    if abs(ledger.held) > ledger.money_tol():
        raise LedgerError(f"the run ended with money {ledger.held!r} held for labels "
                          "nobody answered or abandoned")
    if ledger.bought != ledger.target or (ledger.target < ledger.edges and
                                          ledger.stopped is None):
        raise LedgerError(f"the run ended with {ledger.bought} labels bought, its target "
                          f"{ledger.target} of budget.edges = {ledger.edges} and no recorded "
                          "reason to stop early")
    ledger.check_totals("at the end of the run")
    expected = float(np.dot(ledger.received, ledger.price)) * (1.0 + ledger.fee) + \
        ledger.calls_spent
    if not math.isclose(ledger.spent, expected, rel_tol=1e-9, abs_tol=1e-9):
        raise LedgerError(f"money spent {ledger.spent!r} differs from the prices (plus the "
                          f"fee) of the answers received and the calls {expected!r}")
