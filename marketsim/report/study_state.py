"""What a running study has done so far, as the live dashboard shows it: each arm's finished
units and mean curve, the points of its running units, and the speed behind the ETAs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from marketsim.record.curves import CurvePoint
from marketsim.record.metric import METRICS, Metric
from marketsim.record.reach import cost_axes
from marketsim.record.summary import TARGETS, summarise
from marketsim.record.summary_model import ArmSummary
from marketsim.record.units import UnitResult
from marketsim.report.formatting import clean_name
from marketsim.scenario.outline import StudyOutline


@dataclass
class ArmView:
    """What the dashboard shows of one arm."""

    name: str
    finished: dict[int, UnitResult] = field(default_factory=dict)
    live: dict[int, list[CurvePoint]] = field(default_factory=dict)
    summary: ArmSummary | None = None
    resumed_labels: int = 0


def headline_metric(study: StudyOutline) -> Metric:
    """The headline error the dashboard shows: the worker model's (RMSE for scores)."""
    return METRICS[study.metric]


class StudyState:
    """Finished and running units of every arm, and the rates behind the ETAs."""

    def __init__(self, study: StudyOutline) -> None:
        self.study = study
        self.metric = headline_metric(study)
        self.arms = [ArmView(clean_name(name)) for name in study.arms]
        self.replicates = study.replicates
        self.budget = max(1, study.edges)
        #: The target errors of the table: the scenario's ``[report] targets``, else 5 %, 1 %.
        self.targets: tuple[float, ...] = study.targets or TARGETS
        self.total_units = self.replicates * len(self.arms)
        self.finished_units = 0
        self.resumed_units = 0
        self.started = time.monotonic()
        self.ended: float | None = None
        #: ``money``/``time`` when the finished units show them to differ from labels.
        self.cost_axes: list[str] = []

    def refresh(self, replicate: int, arm: int, point: CurvePoint) -> None:
        """Add a running unit's latest point (ignored for unknown or finished units)."""
        if not 0 <= arm < len(self.arms):
            return
        view = self.arms[arm]
        if replicate in view.finished:
            return
        view.live.setdefault(replicate, []).append(point)

    def unit_done(self, unit: UnitResult) -> None:
        """Count a finished (or reloaded) unit once and update its arm's summary."""
        if not 0 <= unit.arm < len(self.arms):
            return
        view = self.arms[unit.arm]
        seen_live = unit.replicate in view.live
        view.live.pop(unit.replicate, None)
        if unit.replicate in view.finished:
            return
        view.finished[unit.replicate] = unit
        self.finished_units += 1
        # A unit that took longer than this session has lasted was reloaded from a checkpoint:
        # it counts as done but not towards the speed behind the ETA.
        if not seen_live and unit.seconds > self.elapsed() + 0.5:
            self.resumed_units += 1
            view.resumed_labels += self.budget
        rows = [r for u in view.finished.values() for r in u.rows]
        view.summary = (summarise(rows, targets=self.targets).get(rows[0].arm) if rows
                        else None)
        self.cost_axes = cost_axes([r for v in self.arms for u in v.finished.values()
                                    for r in u.rows])

    def elapsed(self) -> float:
        """Seconds since the study started (until it ended)."""
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    def arm_labels(self, arm: int) -> int:
        """Labels spent in arm ``arm`` (finished units count their whole budget)."""
        view = self.arms[arm]
        live = sum(min(p[-1].edges, self.budget) for p in view.live.values() if p)
        return len(view.finished) * self.budget + live

    def units_progress(self) -> float:
        """Finished units plus the fraction of the budget spent in running ones."""
        live = sum(
            min(p[-1].edges, self.budget) / self.budget
            for view in self.arms for p in view.live.values() if p
        )
        return min(float(self.total_units), self.finished_units + live)

    def eta(self, done: float, total: float, resumed: float) -> float | None:
        """Seconds left at the average speed of this session (``None`` before any progress)."""
        made = done - resumed
        elapsed = self.elapsed()
        if done >= total:
            return 0.0
        if made <= 0 or elapsed <= 0:
            return None
        return (total - done) * elapsed / made
