"""A candidate world's share of tasks most labels get wrong, measured in its twin as collected
(``marketsim calibrate``'s measure for :mod:`marketsim.aggregation.ambiguity_share`).

Replayed on the file's own pairs a world is judged apart from the market; but the twin that
``calibrate`` writes is judged as collected by its own sampler (arrival-weighted workers, each
task the file's count: :func:`~marketsim.study.twin.as_collected`), and there the workers who
label a task together are not the file's (RTE: the file puts its busy, weaker workers on the
same tasks more than arrivals by share do, so a world matched on the pairs has too few
majority-wrong tasks in its twin). The share that sets Dawid–Skene's error at full overlap is
the twin's, so it is measured there: the world written as the scenario's, its as-collected
labels drawn for :data:`REPLICATES` replicates after the written scenario's, and each task's
majority compared with the world's true class.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from marketsim.aggregation.ambiguity_share import ShareOf, majority_wrong
from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.scenario.calibration import REPLICATES as WRITTEN
from marketsim.scenario.calibration import Calibration, check_text
from marketsim.scenario.calibration_text import calibrated_text
from marketsim.study.twin import as_collected

#: Replicates of the twin as collected per world measured.
REPLICATES = 3


def twin_share(cal: Calibration, seed: int, mix: tuple[float, ...] | None = None) -> ShareOf:
    """A one-matrix world's share of majority-wrong tasks (ties a half) in the twin ``cal``
    would write with that world, as collected, over :data:`REPLICATES` replicates (after the
    written scenario's own); with ``mix``, weighted by class to it (the real share's tasks, a
    partial truth's, are mixed so)."""
    def share(world: ConfusionFit) -> float:
        with_world = replace(cal, crowd_fits=(*cal.crowd_fits, world), curve=None,
                             pick=len(cal.fits) + len(cal.crowd_fits))
        scenario = check_text(calibrated_text(with_world, "", seed), f"<twin: {world.name}>")
        shares = []
        for replicate in range(WRITTEN, WRITTEN + REPLICATES):
            labels, truth, _, _ = as_collected(scenario, replicate)
            shares.append(majority_wrong(labels, labels.labels, truth,
                                         np.ones(labels.n_tasks, dtype=bool), mix))
        return float(np.mean(shares))
    return share
