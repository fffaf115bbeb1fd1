"""Choosing a twin on the whole design curve: of the candidate worlds ``marketsim calibrate``
fitted, the one whose simulated errors at k = 1, 2, 3, … labels per task and at the full data
(:mod:`marketsim.aggregation.design_curve`) come closest to the file's own.

A twin is for asking *what if*: fewer labels, another policy, a smaller budget. A world that
matches the error as collected can still be wrong about what extra labels buy (issue #40: Dog's
twin matched at full overlap and missed by 4.5 points at k = 3), so every candidate is judged
at every design. Each point, for majority vote and Dawid–Skene alike, gives

    z = (twin - real) / sqrt(se_real^2 + se_twin^2 + FLOOR^2),

the gap in units of its noise: the real curve's standard error over its random draws of k
labels, the twin's over its replicates, and :data:`NOISE_FLOOR` so that a point measured
without noise (the full data: one draw) is not a division by zero. The distance is the sum of
``z^2`` over points and methods (a chi-square-like statistic); the candidate with the smallest
is the nearest. Where noise could decide it (:func:`finalists`: the candidates within two
standard deviations of their own distance of the best, :func:`band`), ``calibrate`` simulates
those again with more replicates, and of the finalists judged on as many replicates as the
nearest, chooses the one fewest percentage points off in root mean square over the designs and
both methods (:func:`rms_gap`; the nearer of equals; of equal distances, the first in the order
of ``Calibration.candidates``: simpler worlds first): a sum of ``z^2`` within its own noise of
the smallest cannot tell them apart, and a requester may ask the twin about any design and
reads its answer in points. The worst point in ``z`` (the rule until session 29) overweighted
the full data, measured without a draw's noise: Bluebird's nearest two twins were 118.9 and
120.7 apart from the curve, one of them 6.9 standard errors (3.5 points) off at the full data
(majority vote 20.6 % against 24.1 %), the other 4.7 at its worst (root mean square gaps 1.60
and 1.37 points: the second is written). The worst gap in points (a branch of session 28) was
decided by a design every finalist missed alike: MS's five finalists were all 3.2–3.6 points
off by Dawid–Skene at 2 labels a task, and the one 3.2 off there was up to 2.2 off at 3 and 5
labels and as collected, where the nearest was at most 1.1 (root mean square 1.48 against
1.26). A point with ``|z|`` above :data:`OFF_Z` is off by more than its noise, and the printed
fit says so loudly.

**The as-collected point is a constraint, not one term among many.** A twin is first asked
to reproduce the data as they were collected; a world that wins on the slopes of the curve
while missing the full data's Dawid–Skene error (RTE, issue #40: 5.51 % against 7.25 %) is
not eligible. The real file is *one* draw of its crowd, so the noise of that comparison is
one draw's spread, not the standard error of the twin's mean: a candidate is eligible when

    z_collected = (twin - real) / sqrt(spread^2 + se_twin^2 + se_real^2 + FLOOR^2)

is within :data:`COLLECTED_Z`: ``spread`` is one draw's, the spread a world that were the real
crowd would give the real error — the standard deviation of the twin's replicates, and at
least the binomial ``sqrt(p (1 - p) / n)`` of an error rate ``p`` over the twin's ``n`` tasks
(three replicates' deviation alone is too noisy to exclude a world on); ``se_twin`` is the
uncertainty of the replicates' mean, ``se_real`` 0 at the full data. Where no candidate is
eligible the one nearest as collected is chosen and the printed fit says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from marketsim.aggregation.design_curve import DRAWS, DesignCurve, mix_lines, short_task_lines

#: Standard error (a fraction) added in quadrature to every point's noise.
NOISE_FLOOR = 0.002
#: ``|z|`` above which a point of the chosen twin is reported as off by more than its noise.
OFF_Z = 2.0
#: At most this many candidates are judged again with more replicates (:func:`finalists`): a
#: bound on the cost of the runs on. Three left out of the tie Bluebird's 4th and 5th nearest
#: of the five within noise (session 28, arrivals from a deck), among them the one fewest
#: points off at its worst.
MAX_FINALISTS = 6
#: ``|z_collected|`` up to which a candidate is eligible (:func:`collected_z`): the
#: :data:`OFF_Z` of every other point, so that a world is excluded as collected exactly where
#: its as-collected point would be reported as off by more than its noise. One spread (the
#: bound until issue #40's seventh session) excluded a true crowd's twin one time in three,
#: and where it excluded every world near the curve the choice fell to one far from it: Web's
#: twin was one world at z_collected +1.03 (Σ z² 86.1) or, its replicates drawn otherwise, a
#: world at Σ z² 878.5, the only one within one spread.
COLLECTED_Z = OFF_Z
#: The methods of a curve, as printed.
METHODS = ("majority vote", "Dawid-Skene")
#: The largest variance of one task's error (``p (1 - p)`` at ``p = 1/2``): what bounds the
#: noise of an error rate over many tasks (:func:`runs_for`).
MAX_TASK_VARIANCE = 0.25
#: Runs (draws or replicates) a point is averaged over at least, so that its spread is seen.
MIN_RUNS = 2
#: Judged tasks whose default runs set how precise a point is at least (:func:`runs_for`):
#: RTE's 800, the smallest shipped set on which the defaults (10 draws, 3 and 10 replicates)
#: made every twin's choice reproducible.
REFERENCE_TASKS = 800
#: At most this many times the default runs for a small file (:func:`runs_for`): the cost of
#: a run is not all per task, and a file of under ``REFERENCE_TASKS / MAX_RUNS_SCALE`` tasks
#: (80) is judged on ten times the default, not on thousands of runs.
MAX_RUNS_SCALE = 10


def runs_for(n_tasks: int, default: int) -> int:
    """The draws (or replicates) a design-curve point needs on ``n_tasks`` judged tasks.

    At most enough that the standard error of its mean error rate, at most
    ``sqrt(1/4 / (n_tasks * runs))`` (independent tasks), is within :data:`NOISE_FLOOR` —
    beyond that more runs change no ``z`` (the floor is in every point's noise); at least
    :data:`MIN_RUNS`. In between, a point is averaged over as many task-runs as ``default``
    runs of :data:`REFERENCE_TASKS` tasks give (``default * REFERENCE_TASKS / n_tasks``
    runs, never fewer than ``default`` nor more than :data:`MAX_RUNS_SCALE` times it): a
    small file's point is as precise as a large one's, so that which world is nearest is not
    decided by the noise of a few replicates of a few tasks (Bluebird's 108 tasks: 3
    replicates left 2.8 points of noise on every point, and the twin chosen at 10 made
    19.6 % at the full data against the real 24.1 %, measured on 75). A file of
    ``REFERENCE_TASKS`` to ``62,500 / default`` judged tasks keeps ``default`` (RTE 800
    tasks, Dog 807, Web 2,665); 100,000 tasks need :data:`MIN_RUNS`."""
    needed = int(np.ceil(MAX_TASK_VARIANCE / (max(n_tasks, 1) * NOISE_FLOOR ** 2)))
    scale = min(MAX_RUNS_SCALE, max(1.0, REFERENCE_TASKS / max(n_tasks, 1)))
    as_precise = int(np.ceil(default * scale))
    return max(min(default, MIN_RUNS), min(as_precise, needed))


def replay_runs(n_tasks: int, replicates: int, draws: int) -> tuple[int, int]:
    """The replicates (:func:`runs_for`) and the draws of k labels per replicate of a world
    replayed on the real pairs with ``n_tasks`` judged tasks: ``draws``, or one where the
    replicates alone already put a point's standard error within :data:`NOISE_FLOOR` (from
    31,250 judged tasks: a second draw changes no ``z``). The replays of a 1,000,000-label
    file of 51,000 tasks and 20 labels each were half of calibrate's time."""
    reps = runs_for(n_tasks, replicates)
    floor_met = MAX_TASK_VARIANCE / (max(n_tasks, 1) * reps) <= NOISE_FLOOR ** 2
    return reps, 1 if floor_met else draws


def curve_draws(known: np.ndarray) -> int:
    """Random draws of each k on the data's design curve: :data:`DRAWS`, fewer where that
    many judged tasks (``known``: those with a truth; every task without one) make each
    draw's error precise enough (:func:`runs_for`)."""
    return runs_for(int(known.sum()) or known.size, DRAWS)


def point_z(real: DesignCurve, twin: DesignCurve) -> np.ndarray:
    """``z`` of every point, (2, points): majority vote's row, then Dawid–Skene's."""
    gap = np.stack([twin.vote - real.vote, twin.ds - real.ds])
    noise = np.sqrt(np.stack([real.vote_se ** 2 + twin.vote_se ** 2,
                              real.ds_se ** 2 + twin.ds_se ** 2]) + NOISE_FLOOR ** 2)
    return np.asarray(gap / noise)


def curve_distance(real: DesignCurve, twin: DesignCurve) -> float:
    """The sum of ``z^2`` over every point and both methods."""
    return float((point_z(real, twin) ** 2).sum())


def collected_z(real: DesignCurve, twin: DesignCurve, tasks: int | None = None) -> float:
    """The twin's Dawid–Skene error as collected (the full data) against the real one, in
    units of one draw's spread: the real file is one draw of its crowd, so a world that were
    the real crowd would put it within the spread of the twin's replicates about their mean,
    at least the binomial spread of an error rate over the twin's ``tasks`` (None: the
    replicates' alone; module docstring)."""
    return float((twin.ds[-1] - real.ds[-1]) / collected_noise(real, twin, tasks))


def collected_spread(twin: DesignCurve, tasks: int | None = None) -> float:
    """One draw's spread of the twin's Dawid–Skene error as collected: the standard deviation
    of its replicates, at least the binomial ``sqrt(p (1 - p) / tasks)``."""
    error = float(twin.ds[-1])
    binomial = error * (1.0 - error) / tasks if tasks else 0.0
    return float(np.sqrt(max(float(twin.ds_se[-1]) ** 2 * twin.runs, binomial)))


def collected_noise(real: DesignCurve, twin: DesignCurve, tasks: int | None = None) -> float:
    """The denominator of :func:`collected_z`: one draw's spread (:func:`collected_spread`),
    the twin's mean's standard error and the real one's, and :data:`NOISE_FLOOR`, in
    quadrature."""
    return float(np.sqrt(collected_spread(twin, tasks) ** 2 + twin.ds_se[-1] ** 2
                         + real.ds_se[-1] ** 2 + NOISE_FLOOR ** 2))


def collected_doubt(real: DesignCurve, twin: DesignCurve, tasks: int | None = None) -> float:
    """The standard error of :func:`collected_z` that the twin's replicates leave: that of
    their mean, one draw's spread over ``sqrt(replicates)`` (the binomial bound included: 3
    replicates that happen to agree do not make the mean certain), in the units of ``z``."""
    return float(collected_spread(twin, tasks) / np.sqrt(twin.runs)
                 / collected_noise(real, twin, tasks))


def band(n_terms: int, distance: float = 0.0) -> float:
    """Two standard deviations of a candidate's ``distance`` over ``n_terms`` points: how far
    above the smallest distance it is still within noise of it. A twin exact up to noise has
    a chi-square distance, of variance ``2 n_terms``; one that misses the curve has a
    noncentral one, of variance ``2 (n_terms + 2 lambda)``, its noncentrality ``lambda``
    estimated as ``distance - n_terms`` (the distance's expectation is ``n_terms + lambda``).
    A far twin's distance is noisier than a near one's: on Duck (108 tasks, 20 points) the
    nearest twin was 92.5 from the curve, and 107.2 and 129.4 were within their own noise of
    it (standard deviations 19.8 and 21.9; the band of an exact twin, 12.6, left them out):
    on 150 fresh replicates those two were the worlds fewest points off at 3 and 5 labels a
    task and the full data (at most 1.7 and 2.0 points; the nearest 3.3)."""
    noncentrality = max(distance - n_terms, 0.0)
    return float(2.0 * np.sqrt(2.0 * (n_terms + 2.0 * noncentrality)))


def finalists(distances: tuple[float, ...], n_terms: int) -> tuple[int, ...]:
    """The positions (nearest first, at most :data:`MAX_FINALISTS`) whose distance is within
    noise of the smallest: at most :func:`band` above it, two standard deviations of its own
    distance (an infinite distance, a candidate not eligible, is never within it). One
    finalist: nothing for more replicates to decide."""
    order = np.argsort(distances, kind="stable")
    best = distances[int(order[0])]
    near = [int(i) for i in order[:MAX_FINALISTS]
            if np.isfinite(distances[int(i)])
            and distances[int(i)] <= best + band(n_terms, distances[int(i)])]
    return tuple(near) if len(near) > 1 else ()


def contenders(choice: CurveChoice, n_terms: int, runs: int) -> tuple[int, ...]:
    """The positions (nearest the curve first, at most :data:`MAX_FINALISTS`) of the candidates
    not eligible on fewer than ``runs`` replicates that more replicates could make eligible
    and chosen: within :data:`OFF_Z` standard errors (:func:`collected_doubt`) of the bound
    :data:`COLLECTED_Z`, and at a distance within :func:`band` of the best eligible one's (or
    below it; any, where none is eligible). Module docstring: a world is not excluded on its
    replicates' noise."""
    judged = choice.judged_distances
    best = min(judged) if np.isfinite(judged).any() else np.inf
    order = np.argsort(choice.distances, kind="stable")
    near = [int(i) for i in order
            if not choice.eligible[int(i)] and choice.twins[int(i)].runs < runs
            and choice.distances[int(i)] <= best + band(n_terms, choice.distances[int(i)])
            and abs(choice.collected[int(i)]) - COLLECTED_Z <= OFF_Z * choice.doubt[int(i)]]
    return tuple(near[:MAX_FINALISTS])


@dataclass(frozen=True)
class CurveChoice:
    """The candidates judged on the curve: the real curve, each candidate's name, its index
    among the calibration's candidates, its twin's curve, distance and ``z`` as collected
    (:func:`collected_z`), and the position of the chosen one (in these tuples); ``doubt``: the
    standard error of each ``z`` as collected (:func:`collected_doubt`)."""

    real: DesignCurve
    names: tuple[str, ...]
    indices: tuple[int, ...]
    twins: tuple[DesignCurve, ...]
    distances: tuple[float, ...]
    best: int
    collected: tuple[float, ...]
    doubt: tuple[float, ...]
    #: The chosen world's curve run as the scenario is written (arrivals from a deck:
    #: :func:`~marketsim.study.twin_curve.written_twin`); None: as it was compared.
    written: DesignCurve | None = None

    @property
    def eligible(self) -> tuple[bool, ...]:
        """Per candidate: whether it reproduces the as-collected error within
        :data:`COLLECTED_Z` times one draw's spread."""
        return tuple(abs(z) <= COLLECTED_Z for z in self.collected)

    @property
    def judged_distances(self) -> tuple[float, ...]:
        """The distances of the eligible candidates (infinite for the others): what the
        choice and its finalists compare."""
        return tuple(d if ok else np.inf for d, ok in zip(self.distances, self.eligible,
                                                          strict=True))

    @property
    def chosen(self) -> int:
        """The chosen world's index among the calibration's candidates."""
        return self.indices[self.best]

    @property
    def twin(self) -> DesignCurve:
        """The chosen twin's curve: as written where it was run so, else as compared."""
        return self.twins[self.best] if self.written is None else self.written

    @property
    def z(self) -> np.ndarray:
        """The chosen twin's ``z`` per method and point, (2, points)."""
        return point_z(self.real, self.twin)


def choose_on_curve(real: DesignCurve, names: tuple[str, ...], indices: tuple[int, ...],
                    twins: tuple[DesignCurve, ...], tasks: int | None = None) -> CurveChoice:
    """Of the candidates whose twin reproduces the as-collected error (:func:`collected_z`
    within :data:`COLLECTED_Z`; the twins have ``tasks`` tasks), the one whose curve is
    nearest the real one — of the finalists within noise of the nearest and judged on as many
    replicates, the one fewest points off in root mean square (:func:`rms_gap`); where none
    reproduces it, the one nearest as collected."""
    distances = tuple(curve_distance(real, twin) for twin in twins)
    collected = tuple(collected_z(real, twin, tasks) for twin in twins)
    doubt = tuple(collected_doubt(real, twin, tasks) for twin in twins)
    choice = CurveChoice(real, names, indices, twins, distances, 0, collected, doubt)
    judged = choice.judged_distances
    if not np.isfinite(judged).any():
        return replace(choice, best=int(np.argmin(np.abs(collected))))
    nearest = int(np.argmin(judged))
    near = [p for p in finalists(judged, 2 * len(real.designs))
            if twins[p].runs >= twins[nearest].runs] or [nearest]
    return replace(choice, best=min(near, key=lambda p: rms_gap(real, twins[p])))


def rms_gap(real: DesignCurve, twin: DesignCurve) -> float:
    """The root mean square of ``twin - real`` (a fraction) over the twin's points and both
    methods: how far off, in the units a requester reads, the twin typically is at the
    designs they may ask about. Among the finalists, whose sums of ``z^2`` are within noise of
    each other, the choice is the twin nearest in these units (module docstring)."""
    gaps = np.stack([twin.vote - real.vote, twin.ds - real.ds])
    return float(np.sqrt(np.mean(gaps ** 2)))


def curve_lines(choice: CurveChoice, labels_per_task: Sequence[tuple[int, int]] = ()
                ) -> list[str]:
    """The printed comparison: per design, real against twin for both methods, each point's
    ``z`` marked where it is off by more than its noise; and, given the file's
    ``labels_per_task`` (``(labels, tasks)`` pairs), :func:`short_task_lines`."""
    real, twin, z = choice.real, choice.twin, choice.z
    lines = [f"design curve, error % against the {real.against} (real: {real.runs} draws of k "
             f"labels per task; twin: {twin.runs} replicates at exactly k labels per task):",
             *mix_lines(real),
             f"  {'labels/task':>11}  {'majority vote real / twin (z)':>32}  "
             f"{'Dawid-Skene real / twin (z)':>32}"]
    for p, design in enumerate(real.designs):
        cells = []
        for m, (r, t) in enumerate(((real.vote, twin.vote), (real.ds, twin.ds))):
            mark = " !" if abs(z[m, p]) > OFF_Z else "  "
            cells.append(f"{100 * r[p]:6.2f} / {100 * t[p]:6.2f} ({z[m, p]:+6.1f}){mark}")
        lines.append(f"  {design:>11}  {cells[0]:>32}  {cells[1]:>32}")
    return lines + short_task_lines(real.ks, labels_per_task)


def off_warnings(choice: CurveChoice) -> list[str]:
    """One line per point where the chosen twin is off by more than ``OFF_Z`` times its noise
    (``calibrate`` prints each as a warning)."""
    real, twin, z = choice.real, choice.twin, choice.z
    out = []
    for m, p in zip(*np.nonzero(np.abs(z) > OFF_Z), strict=True):
        r, t = ((real.vote, twin.vote), (real.ds, twin.ds))[m]
        out.append(f"the twin's {METHODS[m]} error at {real.designs[p]} labels per "
                   f"task is {100 * t[p]:.2f} % against the real {100 * r[p]:.2f} % (z = "
                   f"{z[m, p]:+.1f}, beyond {OFF_Z:g} times the noise): do not trust its "
                   "predictions at that design")
    if not any(choice.eligible):
        out.append(f"no candidate world reproduces the Dawid-Skene error as collected within "
                   f"{COLLECTED_Z:g} times one draw's spread (the chosen one, the nearest: z = "
                   f"{choice.collected[choice.best]:+.1f}): the twin's world misses the data")
    return out


def _curve(curve: DesignCurve) -> dict[str, Any]:
    return {"runs": curve.runs,
            "majority_vote_error": curve.vote.tolist(), "majority_vote_se": curve.vote_se.tolist(),
            "dawid_skene_error": curve.ds.tolist(), "dawid_skene_se": curve.ds_se.tolist()}


def curve_record(choice: CurveChoice) -> dict[str, Any]:
    """``<out>.fit.json``'s ``design_curve``: the designs, the real curve, the chosen twin's
    with each point's ``z``, and every candidate's distance, ``z`` as collected (and its
    standard error: :func:`collected_doubt`) and curve (what its world predicts at each
    design, to see why it was or was not chosen)."""
    z = choice.z
    return {
        "against": choice.real.against, "labels_per_task": list(choice.real.designs),
        "judged_tasks": choice.real.judged,
        "class_mix": None if choice.real.mix is None else list(choice.real.mix),
        "real": _curve(choice.real), "twin": _curve(choice.twin),
        "z_majority_vote": z[0].tolist(), "z_dawid_skene": z[1].tolist(),
        "off_z": OFF_Z, "noise_floor": NOISE_FLOOR,
        "points_off": int((np.abs(z) > OFF_Z).sum()),
        "collected_z_bound": COLLECTED_Z,
        "candidates": [{"world": name, "distance": d, "replicates": twin.runs,
                        "collected_z": z_full, "collected_z_se": doubt, "eligible": ok,
                        "curve": _curve(twin)}
                       for name, d, twin, z_full, doubt, ok in zip(
                           choice.names, choice.distances, choice.twins, choice.collected,
                           choice.doubt, choice.eligible, strict=True)],
        "world": choice.names[choice.best]}


def header_lines(choice: CurveChoice) -> list[str]:
    """The scenario header's account of the choice on the design curve."""
    per = "; ".join(f"{name} {d:.1f} ({twin.runs} replicates{'' if ok else ', not eligible'})"
                    for name, d, twin, ok in zip(choice.names, choice.distances, choice.twins,
                                                 choice.eligible, strict=True))
    designs = ", ".join(choice.real.designs)
    return [f"chosen on the design curve: each candidate's twin at {designs} labels per task "
            "(exactly k",
            "  labels per task, drawn as a fixed-overlap market buys them; the nearest again "
            "with more replicates)",
            f"  against {choice.real.runs} random draws of k of the file's labels per task; "
            "distance = sum of z^2 over points",
            "  (majority vote and Dawid-Skene), z = gap / its noise; eligible: Dawid-Skene as "
            f"collected within {COLLECTED_Z:g} times",
            "  one draw's spread of the real error:",
            f"  {per}."]
