"""``calibrate``'s choice on the design curve (``study/twin_curve.choose_twin``): every
candidate judged at exactly k labels per task (a market of its own, as issue #40's acceptance
measures), and the candidates within noise of the nearest (``curve_choice.finalists``) judged
again with more replicates before the choice, and those excluded as collected on their few
replicates' noise alone (``curve_choice.contenders``) too."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.curve_choice import (
    COLLECTED_Z,
    MAX_FINALISTS,
    band,
    choose_on_curve,
    collected_doubt,
    contenders,
    finalists,
    point_z,
    rms_gap,
)
from marketsim.aggregation.design_curve import DesignCurve
from marketsim.scenario.calibration import Calibration, check_text
from marketsim.scenario.calibration_text import calibrated_text
from marketsim.study.twin_curve import (
    WRITTEN_CHUNKS,
    choose_twin,
    curve_units,
    twin_curve,
    written_twin,
)

N_TASKS, PER_TASK, N_WORKERS = 40, 5, 8


def one_coin_world(accuracy: float) -> ConfusionFit:
    """Every worker right with probability ``accuracy`` on two classes."""
    matrix = np.array([[accuracy, 1 - accuracy], [1 - accuracy, accuracy]])
    return ConfusionFit(np.broadcast_to(matrix, (N_WORKERS, 2, 2)).copy(), np.eye(2), 0.0,
                        0.0, 1, 0.0, f"accuracy {accuracy}")


def calibration(*accuracies: float) -> Calibration:
    """A calibration whose candidates are one-coin worlds of these accuracies."""
    return Calibration("tiny", N_TASKS, 2, N_TASKS * PER_TASK, np.array([0.5, 0.5]),
                       np.full(N_WORKERS, N_TASKS * PER_TASK // N_WORKERS),
                       tuple(one_coin_world(a) for a in accuracies), "the truth file",
                       ((PER_TASK, N_TASKS),))


def test_finalists_are_the_candidates_within_noise_of_the_nearest() -> None:
    terms = 8  # an exact twin's band: 2 * sqrt(2 * 8) = 8
    assert band(terms) == pytest.approx(8.0)
    assert finalists((30.0, 12.0, 17.9, 8.0), terms) == (3, 1, 2)  # nearest first
    assert finalists((30.0, 12.0, 17.0, 8.0, 9.0), terms) == (3, 4, 1, 2)
    many = tuple(10.0 + 0.1 * i for i in range(MAX_FINALISTS + 2))  # all within noise
    assert finalists(many, terms) == tuple(range(MAX_FINALISTS))  # the nearest, at most
    assert finalists((30.0, 8.0, 28.5), terms) == ()  # one within noise: nothing to decide
    assert finalists((10.0,), terms) == ()


def test_a_far_twins_distance_is_within_its_own_larger_noise() -> None:
    """Duck (108 tasks, 20 points): the nearest twin at 92.5, and at 129.4 the world fewest
    points off at every design on fresh replicates, left out by an exact twin's band."""
    assert 129.4 > 92.5 + band(20)  # the chi-square band of a twin exact up to noise
    assert band(20, 129.4) == pytest.approx(2 * np.sqrt(2 * (20 + 2 * 109.4)))
    assert finalists((92.5, 129.4, 150.1), 20) == (0, 1)  # 150.1: beyond its 47.3


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


def test_of_twins_within_noise_of_each_other_the_nearer_in_points_is_chosen() -> None:
    """Bluebird (issue #40): the two nearest twins' sums of z^2 were 118.9 and 120.7, one
    6.9 standard errors off at the full data (one draw: no noise of its own), the other 4.7
    at its worst; in points, 1.60 and 1.37 off in root mean square. The second is written."""
    real = with_noise([0.0] * 5, [0.01] * 4 + [0.0])
    noisy = both([0.0] * 5, [0.02, 0.02, 0.02, 0.0, 0.0])  # 2 points off where draws are noisy
    at_full = both([0.0] * 4 + [0.015], [0.0] * 4 + [0.015])  # 1.5 off at the full data
    choice = choose_on_curve(real, ("noisy", "at full"), (0, 1), (noisy, at_full), tasks=1000)
    assert choice.distances[0] < choice.distances[1]  # the full data's z weighs most...
    assert choice.distances[1] <= choice.distances[0] + band(10, choice.distances[1])
    assert np.abs(point_z(real, at_full)).max() > np.abs(point_z(real, noisy)).max()
    assert rms_gap(real, at_full) < rms_gap(real, noisy)  # ...but it is nearer in points
    assert choice.best == 1
    # a twin judged on fewer replicates than the nearest is not preferred on its points
    fewer = choose_on_curve(real, ("noisy", "at full"), (0, 1),
                            (noisy, replace(at_full, runs=3)), tasks=1000)
    assert fewer.best == 0
    # nor one beyond the nearest's noise
    far = both([0.0] * 4 + [0.03], [0.0] * 4 + [0.03])
    beyond = choose_on_curve(real, ("noisy", "far"), (0, 1), (noisy, far), tasks=1000)
    assert beyond.distances[1] > beyond.distances[0] + band(10, beyond.distances[1])
    assert beyond.best == 0


def test_a_design_every_finalist_misses_alike_does_not_decide() -> None:
    """MS (issue #40): five finalists 3.2-3.6 points off by Dawid-Skene at 2 labels a task;
    the smallest worst gap wrote one 2.2 points off as collected, the nearest in root mean
    square (and on the curve) was at most 1.1 off at 3, 5 labels and the full data."""
    real = with_noise([0.0] * 5, [0.01] * 4 + [0.0])
    even = both([0.003] * 5, [0.003, 0.036, 0.003, 0.003, 0.003])
    skewed = both([0.0, 0.0, 0.0, 0.015, 0.0], [0.0, 0.032, 0.0, 0.015, 0.016])
    choice = choose_on_curve(real, ("even", "skewed"), (0, 1), (even, skewed), tasks=1000)
    assert choice.distances[1] <= choice.distances[0] + band(10, choice.distances[1])
    assert rms_gap(real, even) < rms_gap(real, skewed)
    assert choice.best == 0  # the smallest worst gap (3.2 against 3.6) would be "skewed"


def with_noise(vote_gaps: list[float], se: list[float]) -> DesignCurve:
    """A curve at 1, 2, 3, 5 labels per task and the full data, majority vote moved by
    ``vote_gaps`` from the real one's errors, each point of standard error ``se``."""
    base = np.array([0.40, 0.35, 0.30, 0.25, 0.20])
    return DesignCurve((1, 2, 3, 5), base + np.array(vote_gaps), np.array(se), base.copy(),
                       np.array(se), 10, "truth")


def both(vote_gaps: list[float], ds_gaps: list[float]) -> DesignCurve:
    """A twin's curve at 1, 2, 3, 5 labels per task and the full data, majority vote and
    Dawid-Skene moved by their gaps from :func:`with_noise`'s real errors, each point of
    standard error 0.004 (ten replicates)."""
    base = np.array([0.40, 0.35, 0.30, 0.25, 0.20])
    return DesignCurve((1, 2, 3, 5), base + np.array(vote_gaps), np.full(5, 0.004),
                       base + np.array(ds_gaps), np.full(5, 0.004), 10, "truth")


def test_of_twins_within_noise_the_one_fewest_points_off_is_chosen() -> None:
    """The full data is one draw (no standard error): a twin 2 points off there is 4.5
    standard errors off, one 3.5 points off at 3 labels a task only 3.2. Within noise of
    each other, the requester reads points: the first is chosen."""
    real = with_noise([0.0] * 5, [0.01] * 4 + [0.0])
    at_full = with_noise([0.0] * 4 + [0.02], [0.004] * 5)
    at_three = with_noise([0.0, 0.0, 0.035, 0.03, 0.0], [0.004] * 5)
    choice = choose_on_curve(real, ("at full", "at three"), (0, 1), (at_full, at_three),
                             tasks=1000)
    assert abs(choice.distances[0] - choice.distances[1]) <= band(10)
    assert np.abs(point_z(real, at_full)).max() > np.abs(point_z(real, at_three)).max()
    assert choice.best == 0


def face_like(vote_at_1: float, ds_full: float, runs: int) -> DesignCurve:
    """A curve at 1 label per task and at the full data whose replicates spread 2 points
    as collected (as Face's 584 tasks do at a 36 % error)."""
    spread = 0.02
    return DesignCurve((1,), np.array([vote_at_1, 0.36]), np.full(2, 0.005),
                       np.array([vote_at_1, ds_full]),
                       np.array([0.005, spread / np.sqrt(runs)]), runs, "truth")


def test_a_world_is_not_excluded_as_collected_on_its_few_replicates_noise() -> None:
    """Face (issue #40): worlds nearer the curve than the chosen one were excluded at
    |z as collected| 1.1-2 on 3 replicates, within their mean's noise of the bound."""
    real = face_like(0.41, 0.36, 10)
    twins = (face_like(0.42, 0.31, 3),   # near the curve, 5 points too good on 3 replicates
             face_like(0.42, 0.27, 3),   # 9 points too good: beyond its noise too
             face_like(0.44, 0.36, 3),   # eligible, farther on the curve
             face_like(0.50, 0.31, 3),   # as the first but far from the curve
             face_like(0.42, 0.31, 10))  # as the first, already on the finalists' replicates
    choice = choose_on_curve(real, tuple("abcde"), tuple(range(5)), twins, tasks=584)
    assert choice.eligible == (False, False, True, False, False) and choice.best == 2
    assert choice.distances[0] < choice.distances[2] < choice.distances[3]
    assert COLLECTED_Z < abs(choice.collected[0]) <= COLLECTED_Z + 2 * choice.doubt[0]
    assert abs(choice.collected[1]) > COLLECTED_Z + 2 * choice.doubt[1]
    # three replicates leave the mean about half a spread uncertain
    assert collected_doubt(real, twins[0], 584) == pytest.approx(0.5, abs=0.05)
    assert contenders(choice, 4, 10) == (0,)  # run on, then judged like the others
    assert contenders(choice, 4, 3) == ()  # nothing more to run


def test_a_world_off_as_collected_and_far_on_the_curve_is_not_run_on() -> None:
    """Two spreads off as collected on 2 replicates and far from the curve (the full point
    is in its distance): more replicates could not make it the choice, so none are spent."""
    cal = calibration(0.74, 0.70, 0.80, 0.86)
    scenario = check_text(calibrated_text(replace(cal, pick=0), "", 0), "<real>")
    real = twin_curve(scenario, (1, 2), range(20, 24), True)  # a crowd right 74 % of the time
    first = choose_twin(cal, real, 0, replicates=range(10, 12), final_replicates=2).curve
    assert first is not None and first.eligible == (True, True, False, False)
    assert COLLECTED_Z < abs(first.collected[2]) <= COLLECTED_Z + 2 * first.doubt[2]
    assert first.distances[2] > first.distances[0] + band(2 * len(real.designs))
    assert contenders(first, 2 * len(real.designs), 4) == ()
    choice = choose_twin(cal, real, 0, replicates=range(10, 12), final_replicates=4).curve
    assert choice is not None and choice.best == 0
    # the chosen one and the 70 % world within its own distance's noise of it; not the others
    assert [twin.runs for twin in choice.twins] == [4, 4, 2, 2]


def test_the_written_twin_is_the_chosen_world_run_with_arrivals_from_a_deck() -> None:
    """The candidates are compared with independent arrivals by share; the scenario written
    deals each worker's labels in the file from a deck, and the curve kept is that one's, on
    the replicates the choice ran (``twin_curve.written_twin``)."""
    cal = calibration(0.74, 0.75, 0.97)
    scenario = check_text(calibrated_text(replace(cal, pick=0), "", 0), "<real>")
    assert scenario.workers.arrivals.order == "independent"  # as the candidates run
    real = twin_curve(scenario, (1, 2), range(20, 24), True)
    chosen = choose_twin(cal, real, 0, replicates=range(10, 12), final_replicates=4)
    ticks: list[int] = []
    written = written_twin(chosen, real, 0, advance=lambda: ticks.append(1), first_replicate=10)
    assert written.deck and written.pick == chosen.pick and len(ticks) == WRITTEN_CHUNKS
    twin = check_text(calibrated_text(replace(written, curve=None), "", 0), "<written>")
    assert twin.workers.arrivals.order == "deck"
    assert twin.workers.arrivals.weights == (N_TASKS * PER_TASK // N_WORKERS,) * N_WORKERS
    exact = twin_curve(twin, (1, 2), range(10, 14), True)
    before, after = chosen.curve, written.curve
    assert before is not None and after is not None and after.best == before.best
    assert np.array_equal(after.twin.vote, exact.vote) and np.array_equal(after.twin.ds, exact.ds)
    assert not np.array_equal(before.twin.ds, exact.ds)  # another draw of who labels what
    # the comparison is kept as it was made: every candidate's curve and distance
    assert after.twins is before.twins and after.distances == before.distances
