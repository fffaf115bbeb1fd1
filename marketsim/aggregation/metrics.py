"""Error measures shared by the CLI, the market recorder and the benchmarks."""

from __future__ import annotations

import numpy as np


def error_rate(predicted: np.ndarray, truth: np.ndarray) -> float:
    """Fraction of tasks with a known truth (``truth >= 0``) whose predicted class is wrong."""
    truth = np.asarray(truth)
    known = truth >= 0
    if not known.any():
        return float("nan")
    return float(np.mean(np.asarray(predicted)[known] != truth[known]))
