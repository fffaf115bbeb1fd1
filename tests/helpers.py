"""Helpers several test modules share: a binomial tolerance for simulated frequencies, and
the edit a hostile-key test makes to a scenario table."""

from __future__ import annotations

from typing import Any

import numpy as np


def within(observed: np.ndarray, expected: np.ndarray, n: np.ndarray, z: float = 4.5) -> None:
    """Each observed share lies within ``z`` binomial standard errors of its expectation."""
    se = np.sqrt(np.maximum(expected * (1 - expected), 1e-4) / np.maximum(n, 1))
    assert np.all(np.abs(observed - expected) <= z * se + 1e-9), (observed, expected)


def edit_table(table: dict[str, Any], change: dict[str, Any]) -> None:
    """Apply ``change`` to a scenario table in place: a ``None`` value removes the key."""
    for key, value in change.items():
        if value is None:
            table.pop(key)
        else:
            table[key] = value
