"""Who arrives when: a Poisson process of the pool's workers, each arrival a uniformly chosen
worker, or one chosen by ``[workers.arrivals] weights`` (who works a lot, as calibrated from a
label file)."""

from __future__ import annotations

import numpy as np

from marketsim.scenario.crowd_specs import ArrivalsSpec


class Arrivals:
    """The next arrival: the time until it and the worker who arrives."""

    def __init__(self, spec: ArrivalsSpec, n_workers: int) -> None:
        self.mean_gap = 1.0 / spec.rate
        self.n_workers = n_workers
        weights = spec.weights
        #: Cumulative arrival shares (``None``: uniform); a weight-0 worker never arrives.
        self.cumulative = None if weights is None else np.cumsum(
            np.asarray(weights, dtype=np.float64) / sum(weights))

    def draw(self, rng: np.random.Generator) -> tuple[float, int]:
        """``(gap, worker)``, drawn in that order from ``rng`` (the uniform case draws exactly
        what it always drew, so its runs are unchanged)."""
        gap = rng.exponential(self.mean_gap)
        if self.cumulative is None:
            return gap, int(rng.integers(self.n_workers))
        pick = int(np.searchsorted(self.cumulative, rng.random(), side="right"))
        return gap, min(pick, self.n_workers - 1)

    def draw_block(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``size`` arrivals at once, ``(gaps, workers)`` as arrays: all the gaps, then all the
        workers (the block engine's layout of the stream, not :meth:`draw`'s)."""
        gaps = rng.exponential(self.mean_gap, size)
        if self.cumulative is None:
            return gaps, rng.integers(self.n_workers, size=size, dtype=np.int64)
        picks = np.searchsorted(self.cumulative, rng.random(size), side="right")
        return gaps, np.minimum(picks, self.n_workers - 1).astype(np.int64)
