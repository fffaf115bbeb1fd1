"""Task types (``[workers.confusion]`` ``type_shares`` and ``type_matrices``, design
``per-worker``): every worker has one confusion matrix per type of task, after Welinder,
Branson, Belongie & Perona, "The multidimensional wisdom of crowds" (NIPS 2010) — a worker
good on one kind of task may be poor on another, so one matrix per worker misdescribes a crowd
whose tasks come from several sources.

Task ``i`` of true class ``c_i`` has type ``z_i ~ Categorical(type_shares[c_i])`` (or
``type_shares[0]`` for every class), drawn once per replicate after the look-alikes and the
difficulty; worker ``j`` answers from row ``c_i`` of ``type_matrices[z_i][j]`` (through the
look-alike class and the difficulty when those are given too:
:mod:`~marketsim.workers.task_effects`). What a worker does on average over the tasks
of class ``c`` is ``sum_z type_shares[c][z] type_matrices[z][j][c]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TaskTypes:
    """The types of a world: ``shares`` (K, T), row c the type shares of a class-c task, and
    ``matrices`` (T, workers, K, K)."""

    shares: np.ndarray
    matrices: np.ndarray


def task_types(type_shares: Any, type_matrices: Any, k: int) -> TaskTypes | None:
    """The task types of ``[workers.confusion]``'s ``type_shares`` and ``type_matrices``
    (``None``: one type, the plain matrices)."""
    if type_shares is None or type_matrices is None:
        return None
    shares = np.asarray(type_shares, dtype=np.float64)
    if shares.shape[0] == 1:
        shares = np.repeat(shares, k, axis=0)
    return TaskTypes(shares, np.asarray(type_matrices, dtype=np.float64))


def draw_types(types: TaskTypes, truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each task's type given its class (one uniform draw per task, vectorised)."""
    cumulative = np.cumsum(types.shares[truth], axis=1)
    z = (cumulative <= rng.random((truth.size, 1))).sum(axis=1)
    return np.minimum(z, types.shares.shape[1] - 1).astype(np.int64)


def mean_over_types(types: TaskTypes, per_type: np.ndarray) -> np.ndarray:
    """Each worker's matrix averaged over the types of each class: ``per_type`` (T, m, K, K)
    weighted by the shares of row c's class, (m, K, K)."""
    return np.einsum("cz,zmcl->mcl", types.shares, per_type)
