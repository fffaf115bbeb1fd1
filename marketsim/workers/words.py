"""Words the worker models share for ``report.md``'s Setup: percentages, the mean chance of
the true class of a list of matrices, and the shifted-Beta draw of ``[workers.ability]``."""

from __future__ import annotations

from typing import Any

from marketsim.workers.base import AbilityView


def pct(x: float) -> str:
    """A probability as a percentage (``21.5 %``)."""
    return f"{100 * x:.3g} %"


def mean_diagonal(matrices: Any) -> float | None:
    """The mean chance of the true class over a list of K×K matrices (None if not matrices)."""
    try:
        diag = [m[c][c] for m in matrices for c in range(len(m))]
    except (TypeError, IndexError, KeyError):
        return None
    return sum(diag) / len(diag) if diag else None


def ability_text(ability: AbilityView) -> str:
    """The shifted-Beta draw of each worker's accuracy ``p`` (``[workers.ability]``)."""
    a, b, low = ability.alpha, ability.beta, ability.low
    mean_p = low + (1 - low) * a / (a + b)
    return (f"each worker's accuracy (chance of giving the true class) is drawn once as "
            f"p = {low:g} + {1 - low:g} · Beta({a:g}, {b:g}), so p lies between {low:g} and 1 "
            f"with mean {mean_p:.3f}")
