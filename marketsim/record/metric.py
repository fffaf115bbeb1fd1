"""The headline error of a run, and how reports, plots and the dashboard name and print it.

Class markets: the task error rate (fraction of misclassified tasks, printed as a percentage).
Continuous-score markets (``gaussian-scores``): the RMSE of the estimated task means (printed as
a plain number on the [0, 1] score scale). ``curves.csv``'s ``error_rate`` column holds the
headline error of the run's market, so every consumer of that column (summaries, targets, sweep
tables) works for both; the ``rmse`` column repeats it explicitly for continuous markets.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from marketsim.record.summary_model import Summary


@dataclass(frozen=True)
class Metric:
    """Names and formatting of one headline error."""

    key: str
    #: e.g. "task error rate" / "task-mean RMSE"
    label: str
    #: e.g. "error" / "RMSE"
    short: str
    percent: bool

    @property
    def heading(self) -> str:
        """``short`` as the start of a heading: ``Error`` / ``RMSE``."""
        return self.short[:1].upper() + self.short[1:]

    @property
    def sentence(self) -> str:
        """``label`` as the start of a sentence: ``Task error rate`` / ``Task-mean RMSE``."""
        return self.label[:1].upper() + self.label[1:]

    def fmt(self, x: float | None) -> str:
        """A value as printed in tables: ``1.23 %`` or ``0.0412``; ``—`` when unknown."""
        if x is None or not math.isfinite(float(x)):
            return "—"
        if not self.percent:
            return f"{float(x):.4f}"
        v = 100.0 * float(x)
        if v == 0:
            return "0 %"
        return f"{v:.2f} %" if v >= 0.1 else f"{v:.2g} %"

    def target(self, t: float) -> str:
        """A target as words: ``5 % error`` or ``RMSE 0.05``."""
        return f"{100 * t:g} % error" if self.percent else f"RMSE {t:g}"

    def target_short(self, t: float) -> str:
        """A target in a column head: ``5%`` or ``0.05``."""
        return f"{t:.0%}" if self.percent else f"{t:g}"


ERROR_RATE = Metric("error_rate", "task error rate", "error", True)
RMSE = Metric("rmse", "task-mean RMSE", "RMSE", False)
METRICS = {m.key: m for m in (ERROR_RATE, RMSE)}


def metric_of_rows(rows: Iterable[Any]) -> str:
    """``"rmse"`` when every row has a finite ``rmse`` (a continuous market), else
    ``"error_rate"``."""
    rows = list(rows)
    if rows and all(math.isfinite(getattr(r, "rmse", math.nan)) for r in rows):
        return RMSE.key
    return ERROR_RATE.key


def metric_of(summary: Summary | None) -> Metric:
    """The headline metric a ``summary.json`` declares (none: the error rate)."""
    return ERROR_RATE if summary is None else METRICS[summary.metric]
