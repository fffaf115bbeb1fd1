"""What a label from the arriving worker is worth on a binary task, against stopping and against
waiting for a better worker (explore-exploit's ``route`` option; issue #30, point 5).

A one-step (myopic) value of a label is zero on every task one answer cannot flip, and most
tasks a requester still doubts are such tasks. The value used here is not myopic. A task whose
class-1 log-odds is ``s`` may

- stop, at the expected cost of its error, ``price·min(q, 1 − q)`` with ``q = σ(s)``
  (``price``: what one wrong decision costs, in labels);
- wait one arrival, at the cost ``wait`` (time, in labels), and meet a worker drawn from the
  crowd (each open worker equally likely, at their estimated accuracy);
- ask the worker who arrived, at the cost of one label, and move to ``s ± logit(p)`` (a label
  of class 1 with chance ``a(s) = q·p + (1 − q)(1 − p)``):
  ``Q_p(s) = 1 + a(s)·V(s + L) + (1 − a(s))·V(s − L)``.

So ``V(s) = min(stop(s), wait + Σ_p π_p·min(V(s), Q_p(s)))``: the task accepts the workers whose
``Q_p`` is below ``V``, and with that set ``A``, ``V = (wait + Σ_A π_p Q_p) / Σ_A π_p`` (the
best ``A`` is a prefix of the workers sorted by ``Q_p``). It is solved on a grid of log-odds
once per set of estimates: by value iteration from ``V = stop``, which settles in tens of sweeps
for the crowds a market meets; when it has not within :data:`_SWEEPS` (a crowd of near-random
workers with a large ``price`` needs up to millions: labels that move the log-odds by one grid
step, for an error worth thousands of them), by policy iteration from there, which solves the
linear equations of the current stop/accept decisions exactly (a sparse system on the grid),
takes the best decisions against that value, and stops when they no longer change (tens of
steps, well under a second; at most :data:`_POLICY_STEPS`).

The *index* of the arriving worker on a task,
``V(s) − Q_p(s)``, is the expected cost their label saves over the task's best alternative
(stopping, or waiting for the crowd): positive where taking them now is right. A small
``wait`` keeps most tasks for the best workers; a large one takes whoever comes.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.linalg import spsolve
from scipy.special import expit

#: Log-odds grid: ±16 (an error of 1e-7) in steps of 0.04.
GRID = np.linspace(-16.0, 16.0, 801)
#: The largest ``price`` (an error's cost, in labels) the grid can value: stopping at its ends
#: then costs at most ``MAX_PRICE · σ(−16)`` ≈ 0.11 labels, less than any label, so no task
#: would want to go beyond it.
MAX_PRICE = 1e6
#: Accuracies are rounded to this step (fewer distinct workers in the crowd's value).
ACCURACY_STEP = 0.01
#: Accuracies are kept this far from 0 and 1 (a worker of accuracy 1 would settle a task at once).
_EDGE = 1e-3
#: Value iteration stops when no grid value moves by more than this (in labels)...
_TOL = 1e-9
#: ... or after this many sweeps, when policy iteration finishes the solve.
_SWEEPS = 300
#: Policy iteration's improvement steps at most (it settles in a few).
_POLICY_STEPS = 100


def stop_cost(log_odds: np.ndarray, price: float) -> np.ndarray:
    """Expected cost of stopping now: ``price`` times the error of the more likely class."""
    return price * expit(-np.abs(np.asarray(log_odds, dtype=np.float64)))


def rounded(accuracy: np.ndarray) -> np.ndarray:
    """Accuracies on the :data:`ACCURACY_STEP` lattice, kept inside (0, 1)."""
    acc = np.round(np.asarray(accuracy, dtype=np.float64) / ACCURACY_STEP) * ACCURACY_STEP
    return np.clip(acc, _EDGE, 1.0 - _EDGE)


def ask_cost(value: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """(len(accuracy), grid) ``Q_p(s) = 1 + a(s)·V(s + L) + (1 − a(s))·V(s − L)`` for workers of
    each accuracy (``V`` held at its ends beyond the grid)."""
    p = np.asarray(accuracy, dtype=np.float64)[:, None]
    step = np.log(p / (1.0 - p))
    q = expit(GRID)[None, :]
    says_one = q * p + (1.0 - q) * (1.0 - p)
    up = np.interp(GRID[None, :] + step, GRID, value)
    down = np.interp(GRID[None, :] - step, GRID, value)
    return 1.0 + says_one * up + (1.0 - says_one) * down


def _bellman(value: np.ndarray, values: np.ndarray, share: np.ndarray, stop: np.ndarray,
             wait: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Bellman update of ``value``, with the workers sorted by ``Q_p`` (per grid point) and
    the cost of going on for each prefix of them."""
    ask = ask_cost(value, values)
    order = np.argsort(ask, axis=0, kind="stable")
    costs = np.take_along_axis(ask, order, axis=0)
    weights = share[order]
    best = ((wait + np.cumsum(weights * costs, axis=0)) / np.cumsum(weights, axis=0))
    return np.minimum(stop, best.min(axis=0)), order, best


def _decisions(value: np.ndarray, values: np.ndarray, share: np.ndarray, stop: np.ndarray,
               wait: float) -> np.ndarray:
    """The best decisions against ``value``: the accepted workers (len(values), grid), none
    where the task stops."""
    _, order, best = _bellman(value, values, share, stop, wait)
    prefix = best.argmin(axis=0)
    go_on = np.take_along_axis(best, prefix[None, :], axis=0)[0]
    taken = np.zeros(order.shape, dtype=bool)
    np.put_along_axis(taken, order, np.arange(values.size)[:, None] <= prefix[None, :], axis=0)
    return taken & (go_on < stop)[None, :]


def _interpolation(shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Grid points below ``GRID + shift`` (one row per shift) and the weight of the point
    above, as :func:`numpy.interp` reads them (held at the ends)."""
    x = GRID[None, :] + shift[:, None]
    low = np.clip(np.searchsorted(GRID, x, side="right") - 1, 0, GRID.size - 2)
    frac = np.clip((x - GRID[low]) / (GRID[low + 1] - GRID[low]), 0.0, 1.0)
    return low, frac


def _evaluate(taken: np.ndarray, values: np.ndarray, share: np.ndarray, stop: np.ndarray,
              wait: float) -> np.ndarray:
    """The value of fixed decisions, exactly: ``V = stop`` where no worker is accepted, else
    ``(Σ_A π) V(s) − Σ_A π_p (a_p V(s + L_p) + (1 − a_p) V(s − L_p)) = wait + Σ_A π_p``."""
    n = GRID.size
    p = values[:, None]
    step = np.log(values / (1.0 - values))
    q = expit(GRID)[None, :]
    says_one = q * p + (1.0 - q) * (1.0 - p)
    weight = np.where(taken, share[:, None], 0.0)  # (workers, grid)
    rows, cols, coef = [np.arange(n)], [np.arange(n)], [np.where(taken.any(axis=0),
                                                                 weight.sum(axis=0), 1.0)]
    for sign, chance in ((1.0, says_one), (-1.0, 1.0 - says_one)):
        low, frac = _interpolation(sign * step)
        for point, part in ((low, 1.0 - frac), (low + 1, frac)):
            rows.append(np.broadcast_to(np.arange(n), point.shape).ravel())
            cols.append(point.ravel())
            coef.append((-weight * chance * part).ravel())
    matrix = csr_matrix((np.concatenate(coef), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(n, n))
    rhs = np.where(taken.any(axis=0), wait + weight.sum(axis=0), stop)
    return np.asarray(spsolve(matrix, rhs))


def waiting_value(accuracy: np.ndarray, price: float, wait: float) -> np.ndarray:
    """``V`` on :data:`GRID` for a crowd of workers of ``accuracy`` (each equally likely to
    arrive): the least expected cost of a task (labels, ``wait`` per arrival waited, ``price``
    per error) that stops, waits or asks optimally (value iteration, finished by policy
    iteration when it is slow: see the module's docstring)."""
    values, counts = np.unique(rounded(accuracy), return_counts=True)
    share = counts / counts.sum()
    stop = stop_cost(GRID, price)
    value = stop
    for _ in range(_SWEEPS):
        new = _bellman(value, values, share, stop, wait)[0]
        if np.max(value - new) <= _TOL:
            return new
        value = new
    return _policy_iteration(values, share, stop, wait, value)


def _policy_iteration(values: np.ndarray, share: np.ndarray, stop: np.ndarray, wait: float,
                      bound: np.ndarray) -> np.ndarray:
    """``V`` by policy iteration, from asking every informative worker everywhere but at the
    grid's ends (a proper start: the log-odds walk leaves the grid's interior for sure), each
    step the exact value of the current decisions and then the best decisions against it;
    ``bound`` (an upper bound of ``V``: value iteration's last sweep) is kept should the
    decisions still change after :data:`_POLICY_STEPS`."""
    taken = np.zeros((values.size, GRID.size), dtype=bool)
    taken[:, 1:-1] = (values != 0.5)[:, None]
    if not taken.any():  # nothing any worker says moves the odds: stop
        return stop
    for _ in range(_POLICY_STEPS):
        value = _evaluate(taken, values, share, stop, wait)
        better = _decisions(value, values, share, stop, wait)
        if np.array_equal(better, taken):
            return value
        taken = better
    return bound


class RouteIndex:
    """The index ``V(s) − Q_p(s)`` for one ``price`` and ``wait``: the crowd's value ``V`` is
    rebuilt when the crowd's rounded accuracies change (a refresh or a gold answer), each
    accuracy's index table when first asked for after that."""

    def __init__(self, price: float, wait: float) -> None:
        self.price, self.wait = price, wait
        self._crowd = b""
        self._value = stop_cost(GRID, price)
        self._tables: dict[float, np.ndarray] = {}

    def set_crowd(self, accuracy: np.ndarray) -> None:
        """The open workers' estimated accuracies (rebuilds ``V`` only when they changed)."""
        crowd = np.sort(rounded(accuracy))
        key = crowd.tobytes()
        if key != self._crowd:
            self._crowd, self._tables = key, {}
            self._value = waiting_value(crowd, self.price, self.wait)

    def table(self, accuracy: float) -> np.ndarray:
        """The index on :data:`GRID` of a worker of ``accuracy``."""
        p = float(rounded(np.array([accuracy]))[0])
        found = self._tables.get(p)
        if found is None:
            found = self._tables[p] = self._value - ask_cost(self._value, np.array([p]))[0]
        return found

    def index(self, accuracy: float, log_odds: np.ndarray) -> np.ndarray:
        """The index of a worker of ``accuracy`` on each task of ``log_odds``."""
        return np.interp(log_odds, GRID, self.table(accuracy))


def class_one_log_odds(proba: np.ndarray) -> np.ndarray:
    """Each task's log-odds of class 1 against class 0 from its (n, 2) posterior, clipped to
    the grid."""
    p = np.maximum(np.asarray(proba, dtype=np.float64), 1e-300)
    return np.clip(np.log(p[:, 1]) - np.log(p[:, 0]), GRID[0], GRID[-1])
