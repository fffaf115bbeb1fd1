"""Statistics a reviewer accepts for studies with few replicates.

- Intervals of a mean use Student's t with n - 1 degrees of freedom (with 2 replicates the 95 %
  multiplier is 12.71, not 1.96), and an interval of a rate is clipped to [0, 1].
- Arms of a study share their worlds replicate by replicate (common random numbers), so two
  arms are compared by their *paired* differences: the interval and the paired t-test of the
  per-replicate differences, much tighter than two separate intervals.
- A difference is called only when its paired interval excludes zero; otherwise the verdict
  says so and estimates how many replicates would make the observed difference detectable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special  # scipy.stats' own kernels, without its 0.7 s import

#: Confidence level of every interval marketsim reports.
LEVEL = 0.95
#: Power used for the "replicates needed" estimate.
POWER = 0.8


def t_multiplier(n: int, level: float = LEVEL) -> float:
    """Two-sided Student-t quantile for a mean of ``n`` values (inf when n < 2).

    >>> round(t_multiplier(2), 2), round(t_multiplier(20), 3)
    (12.71, 2.093)
    """
    if n < 2:
        return math.inf
    return t_quantile(0.5 + level / 2, n - 1)


def t_quantile(q: float, df: int) -> float:
    """Student-t quantile, as ``scipy.stats.t.ppf(q, df)`` computes it."""
    return float(special.stdtrit(df, q))


def t_test_pvalue(values: np.ndarray) -> float:
    """Two-sided one-sample t-test of mean 0, as ``scipy.stats.ttest_1samp(values, 0).pvalue``
    computes it."""
    n = values.size
    mean = np.mean(values)
    var = np.mean((values - mean) ** 2) * (n / (n - 1))
    t = float(mean / np.sqrt(var / n))
    return float(2.0 * special.stdtr(n - 1, -abs(t)))


@dataclass(frozen=True)
class Interval:
    """A mean and its confidence interval over ``n`` replicates. ``half_width`` is the
    t-multiplier times the standard error; ``low``/``high`` are ``mean -/+ half_width``
    clipped to the quantity's bounds. All three are NaN with a single replicate."""

    mean: float
    low: float
    high: float
    half_width: float
    n: int


def mean_interval(
    values: Sequence[float] | np.ndarray,
    *,
    bounds: tuple[float, float] | None = None,
    level: float = LEVEL,
) -> Interval:
    """Mean of ``values`` with its Student-t interval, clipped to ``bounds`` (e.g. (0, 1) for
    a rate) when given.

    >>> iv = mean_interval([0.02, 0.0], bounds=(0.0, 1.0))
    >>> iv.low, round(iv.high, 4)
    (0.0, 0.1371)
    """
    v = np.asarray(values, dtype=np.float64)
    n = int(v.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, math.nan, 0)
    mean = float(v.mean())
    if n < 2:
        return Interval(mean, math.nan, math.nan, math.nan, n)
    half = t_multiplier(n, level) * float(v.std(ddof=1)) / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Interval(mean, low, high, half, n)


@dataclass(frozen=True)
class PairedComparison:
    """``arm`` minus ``reference`` over the replicates both have: mean difference, its paired
    interval, the paired t-test's p-value, and the replicates that would make the observed
    difference detectable (at :data:`POWER`, two-sided :data:`LEVEL`)."""

    arm: str
    reference: str
    difference: Interval
    p_value: float
    replicates_needed: int | None

    @property
    def no_spread(self) -> bool:
        """Every replicate pair differs by the same amount: the t-interval has zero width,
        which says nothing about the spread of the differences (labels-to-target sits on the
        refresh grid, so two replicates often agree exactly). "The same" up to rounding, as
        the p-value reads it: two errors 0.3 - 0.2 and 0.2 - 0.1 apart differ in the last
        bit, which is no spread either."""
        d = self.difference
        return (d.n >= 2 and d.mean != 0
                and d.half_width <= 1e-12 * max(1.0, abs(d.mean)) * t_multiplier(d.n))

    @property
    def detected(self) -> bool:
        """Whether the paired interval excludes zero. With no spread the degenerate t-interval
        is not trusted: the pairs must then pass the two-sided sign test at :data:`LEVEL`
        (all ``n`` differences of one sign: p = 2 · 0.5ⁿ, so at least 6 pairs)."""
        d = self.difference
        if self.no_spread:
            return 2 * 0.5 ** d.n < 1 - LEVEL
        return d.n >= 2 and (d.low > 0 or d.high < 0)

    def verdict(self, *, lower_is_better: bool = True,
                fmt: Callable[[float], str] = "{:.4g}".format) -> str:
        """One sentence a report can print; names a winner only when the interval allows.
        ``fmt`` formats a difference (e.g. ``"{:,.0f} labels".format``)."""
        d = self.difference
        if d.n == 0:
            return (f"{self.arm} vs {self.reference}: no replicate where both have a value, "
                    "no comparison possible")
        if d.n < 2:
            return f"{self.arm} vs {self.reference}: one replicate, no comparison possible"
        if not self.detected:
            more = (f"; about {self.replicates_needed} would be needed for the observed "
                    f"difference" if self.replicates_needed else "")
            if self.no_spread:
                more = (f" (the {d.n} pairs all differ by {fmt(d.mean)}: no spread to build an "
                        "interval from, and a sign test needs at least 6 pairs)")
            return (f"{self.arm} vs {self.reference}: no difference detectable with "
                    f"{d.n} replicates{more}")
        if self.no_spread:
            better = (d.mean < 0) == lower_is_better
            return (f"{self.arm} is {'better' if better else 'worse'} than {self.reference} by "
                    f"{fmt(abs(d.mean))} in every one of {d.n} replicates (sign test p = "
                    f"{2 * 0.5 ** d.n:.2g})")
        better = (d.mean < 0) == lower_is_better
        word = "better" if better else "worse"
        return (f"{self.arm} is {word} than {self.reference} by {fmt(abs(d.mean))} "
                f"(95 % paired interval {fmt(d.low)} to {fmt(d.high)}, "
                f"p = {self.p_value:.2g}, {d.n} replicates)")


def replicates_needed(differences: np.ndarray, level: float = LEVEL,
                      power: float = POWER) -> int | None:
    """Replicates a two-sided paired t-test needs to detect the observed mean difference, with
    the observed spread, at ``power``: the smallest n with
    ``(t_{n-1, level} + t_{n-1, power}) * sd / sqrt(n) <= |mean|``. None when the mean
    difference is 0 or there are fewer than two differences."""
    d = np.asarray(differences, dtype=np.float64)
    if d.size < 2:
        return None
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if mean == 0.0:
        return None
    if sd <= 1e-12 * abs(mean):
        return 2
    ratio = sd / abs(mean)
    z = special.ndtri(0.5 + level / 2) + special.ndtri(power)  # normal quantiles
    n = max(2, math.ceil((z * ratio) ** 2))  # normal approximation: a lower bound
    while n < 10**9:
        t = t_quantile(0.5 + level / 2, n - 1) + t_quantile(power, n - 1)
        if t * ratio <= math.sqrt(n):
            return n
        n = n + 1 if n < 1000 else int(n * 1.01)
    return None


def paired_comparison(
    arm: str,
    reference: str,
    values: Sequence[float] | np.ndarray,
    reference_values: Sequence[float] | np.ndarray,
    *,
    level: float = LEVEL,
    bounds: tuple[float, float] | None = None,
) -> PairedComparison:
    """Compare two arms measured on the same replicates (index ``i`` of both sequences is the
    same world); NaN pairs (a replicate one arm did not finish, or a target not reached) are
    left out. ``bounds`` clips the interval to the differences possible (``(-1, 1)`` for two
    error rates), as :func:`mean_interval` does."""
    a = np.asarray(values, dtype=np.float64)
    b = np.asarray(reference_values, dtype=np.float64)
    keep = np.isfinite(a) & np.isfinite(b)
    diff = a[keep] - b[keep]
    interval = mean_interval(diff, level=level, bounds=bounds)
    if diff.size < 2:
        p = math.nan
    elif np.ptp(diff) <= 1e-12 * max(1.0, float(np.abs(diff).max())):  # constant: no spread
        p = 1.0 if np.all(diff == 0) else 0.0
    else:
        p = t_test_pvalue(diff)
    return PairedComparison(arm, reference, interval, p, replicates_needed(diff, level))
