"""``calibrate``'s choice on the design curve (``study/twin_curve.choose_twin``): every
candidate judged at exactly k labels per task (a market of its own, as issue #40's acceptance
measures), and the candidates within noise of the nearest (``curve_choice.finalists``) judged
again with more replicates before the choice."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.curve_choice import MAX_FINALISTS, finalists
from marketsim.scenario.calibration import Calibration, check_text
from marketsim.scenario.calibration_text import calibrated_text
from marketsim.study.twin_curve import choose_twin, curve_units, twin_curve

N_TASKS, PER_TASK, N_WORKERS = 40, 5, 8


def one_coin_world(accuracy: float) -> ConfusionFit:
    """Every worker right with probability ``accuracy`` on two classes."""
    matrix = np.array([[accuracy, 1 - accuracy], [1 - accuracy, accuracy]])
    return ConfusionFit(np.broadcast_to(matrix, (N_WORKERS, 2, 2)).copy(), np.eye(2), 0.0,
                        0.0, 1, 0.0, f"accuracy {accuracy}")


def calibration(*accuracies: float) -> Calibration:
    """A calibration whose candidates are one-coin worlds of these accuracies."""
    return Calibration("tiny", N_TASKS, 2, N_TASKS * PER_TASK, np.array([0.5, 0.5]),
                       np.full(N_WORKERS, 1 / N_WORKERS),
                       tuple(one_coin_world(a) for a in accuracies), "the truth file",
                       ((PER_TASK, N_TASKS),))


def test_finalists_are_the_candidates_within_noise_of_the_nearest() -> None:
    terms = 8  # the band: 2 * sqrt(2 * 8) = 8
    assert finalists((30.0, 12.0, 17.9, 10.0), terms) == (3, 1, 2)  # nearest first
    assert finalists((30.0, 12.0, 17.0, 10.0, 11.0), terms) == (3, 4, 1)[:MAX_FINALISTS]
    assert finalists((30.0, 10.0, 18.1), terms) == ()  # one within noise: nothing to decide
    assert finalists((10.0,), terms) == ()


def test_the_candidates_are_judged_at_exactly_k_and_the_close_ones_again() -> None:
    cal = calibration(0.74, 0.75, 0.97)
    scenario = check_text(calibrated_text(replace(cal, pick=0), "", 0), "<real>")
    real = twin_curve(scenario, (1, 2), range(20, 24), True)  # a crowd right 74 % of the time
    ticks: list[int] = []
    chosen = choose_twin(cal, real, 0, replicates=range(10, 12),
                         advance=lambda: ticks.append(1), final_replicates=4)
    choice = chosen.curve
    assert choice is not None and chosen.pick in (0, 1)  # not the far too easy crowd
    assert choice.best == int(np.argmin(choice.distances))
    assert [twin.runs for twin in choice.twins] == [4, 4, 2]  # the close two, again
    assert choice.distances[2] > max(choice.distances[:2])
    assert choice.eligible == (True, True, False)  # far too easy as collected, too
    # the chosen twin's curve is its markets at exactly k labels per task
    world = check_text(calibrated_text(replace(cal, pick=chosen.pick), "", 0), "<twin>")
    exact = twin_curve(world, (1, 2), range(10, 14), True)
    assert np.array_equal(choice.twin.vote, exact.vote)
    assert np.array_equal(choice.twin.ds, exact.ds)
    assert len(ticks) == curve_units(cal) == 2 * 3


def test_the_chosen_twin_runs_on_even_when_no_other_is_close() -> None:
    cal = calibration(0.74, 0.97)
    scenario = check_text(calibrated_text(replace(cal, pick=0), "", 0), "<real>")
    real = twin_curve(scenario, (1,), range(20, 23), True)
    choice = choose_twin(cal, real, 0, replicates=range(10, 12), final_replicates=4).curve
    assert choice is not None and choice.best == 0
    assert [twin.runs for twin in choice.twins] == [4, 2]  # a few lucky replicates never win
