"""A calibrated twin's model annotators asked every task once: what ``marketsim calibrate``
compares with the real models' answers (accuracy, agreement with the humans' Dawid–Skene
answer, expected calibration error). The machines answer through their own component
(:mod:`marketsim.machines`) on the world the twin's "as collected" arm runs in, with the
humans' task difficulty of that world, rather than through the market."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketsim.aggregation.machine_fit import calibration_error
from marketsim.machines.panel import world_panel
from marketsim.scenario.machine_specs import machine_annotator
from marketsim.scenario.specs import Scenario
from marketsim.study.seeds import unit_streams
from marketsim.study.twin import twin_world


@dataclass(frozen=True)
class TwinMachine:
    """One twin machine's answers to every task, measured against the world's truth
    (accuracy, ECE) and against the twin humans' Dawid–Skene answer (agreement, ECE)."""

    name: str
    accuracy: float
    ece: float
    agreement: float
    ece_vs_humans: float


def twin_machines(scenario: Scenario, humans_answer: np.ndarray, replicate: int = 0
                  ) -> tuple[TwinMachine, ...]:
    """Each of ``scenario``'s machines asked every task once in replicate ``replicate``'s
    world (the machines' stream of its unit), measured against that world's truth and
    against ``humans_answer`` (tasks,: the twin humans' Dawid–Skene answer)."""
    world = twin_world(scenario, replicate)
    machines = [machine_annotator(m) for m in scenario.machines]
    panel = world_panel(machines, world, scenario.tasks.classes,
                        unit_streams(scenario.seed, replicate, 0).machines)
    every = np.arange(world.truth.size)
    out = []
    for m, name in enumerate(panel.names):
        labels, confidence = panel.ask(m, every)
        right = (labels == world.truth).astype(np.float64)
        agree = (labels == humans_answer).astype(np.float64)
        ece, ece_humans = (calibration_error(confidence, r) for r in (right, agree))
        out.append(TwinMachine(name, float(right.mean()), np.nan if ece is None else ece,
                               float(agree.mean()),
                               np.nan if ece_humans is None else ece_humans))
    return tuple(out)
