"""``marketsim calibrate``'s arrival process: a Poisson process fitted to a crowd's label times,
and the gap statistics a twin's times are compared on.

The maximum-likelihood rate of a Poisson process from its n − 1 gaps between consecutive labels
is (n − 1) / span. A Poisson process's gaps are exponential: coefficient of variation (sd /
mean) 1. Real crowds come in bursts (sessions, batches released at once, nights off), so their
gaps' CV is often well above 1; the fit then gets the labels' long-run rate right but not
their clumping, and says so (:attr:`ArrivalFit.poor`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketsim.data.timestamps import Timestamps
from marketsim.errors import InputError

#: Gaps' coefficient of variation above which the Poisson fit is called poor (a Poisson
#: process has 1; with n gaps its sample CV is within about 1 ± 2/sqrt(n)).
POOR_FIT_CV = 2.0


@dataclass(frozen=True)
class GapStats:
    """Labels' gaps between consecutive times: how many labels, over what span, the gaps'
    mean and coefficient of variation (population sd / mean; NaN for fewer than 2 labels)."""

    n_labels: int
    span: float
    mean: float
    cv: float


def gap_stats(times: np.ndarray) -> GapStats:
    """The gap statistics of label times (any order; sorted here)."""
    t = np.sort(np.asarray(times, dtype=np.float64))
    if t.size < 2:
        return GapStats(int(t.size), 0.0, float("nan"), float("nan"))
    gaps = np.diff(t)
    mean = float(gaps.mean())
    cv = float(gaps.std() / mean) if mean > 0 else float("nan")
    return GapStats(int(t.size), float(t[-1] - t[0]), mean, cv)


@dataclass(frozen=True)
class ArrivalFit:
    """The fitted arrival process: labels per :attr:`unit` of time, from the file's times."""

    rate: float
    gaps: GapStats
    #: The time column's header name, what it held (numbers or date-times) and the unit.
    column: str
    kind: str
    unit: str

    @property
    def poor(self) -> bool:
        """Whether the gaps are too bursty for a Poisson process (CV > :data:`POOR_FIT_CV`)."""
        return bool(self.gaps.cv > POOR_FIT_CV)


def fit_arrivals(times: Timestamps, source: str) -> ArrivalFit:
    """The Poisson process of the labels' times; InputError (naming ``source``) when the
    times span no time at all (fewer than two labels, or all at one instant)."""
    gaps = gap_stats(times.values)
    if gaps.n_labels < 2 or gaps.span <= 0:
        raise InputError(f"column {times.column!r}: every label has the same time, so no "
                         "arrival rate can be fitted (drop the time column to calibrate "
                         "without one)", source=source)
    return ArrivalFit((gaps.n_labels - 1) / gaps.span, gaps, times.column, times.kind,
                      times.unit)
