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
is chosen, the first of equals (the order of ``Calibration.candidates``: simpler worlds
first). Where noise could decide it (:func:`finalists`: the candidates within two standard
deviations of a chi-square of the best), ``calibrate`` simulates those again with more
replicates before choosing. A point with ``|z|`` above :data:`OFF_Z` is off by more than its
noise, and the printed fit says so loudly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.aggregation.design_curve import DesignCurve

#: Standard error (a fraction) added in quadrature to every point's noise.
NOISE_FLOOR = 0.002
#: ``|z|`` above which a point of the chosen twin is reported as off by more than its noise.
OFF_Z = 2.0
#: At most this many candidates are judged again with more replicates (:func:`finalists`).
MAX_FINALISTS = 3
#: The methods of a curve, as printed.
METHODS = ("majority vote", "Dawid-Skene")


def point_z(real: DesignCurve, twin: DesignCurve) -> np.ndarray:
    """``z`` of every point, (2, points): majority vote's row, then Dawid–Skene's."""
    gap = np.stack([twin.vote - real.vote, twin.ds - real.ds])
    noise = np.sqrt(np.stack([real.vote_se ** 2 + twin.vote_se ** 2,
                              real.ds_se ** 2 + twin.ds_se ** 2]) + NOISE_FLOOR ** 2)
    return np.asarray(gap / noise)


def curve_distance(real: DesignCurve, twin: DesignCurve) -> float:
    """The sum of ``z^2`` over every point and both methods."""
    return float((point_z(real, twin) ** 2).sum())


def finalists(distances: tuple[float, ...], n_terms: int) -> tuple[int, ...]:
    """The positions (nearest first, at most :data:`MAX_FINALISTS`) whose distance is within
    noise of the smallest: at most ``2 * sqrt(2 * n_terms)`` above it, two standard deviations
    of a chi-square with ``n_terms`` degrees of freedom (the distance of a twin exact up to
    noise). One finalist: nothing for more replicates to decide."""
    order = np.argsort(distances, kind="stable")
    best = distances[int(order[0])]
    near = [int(i) for i in order[:MAX_FINALISTS]
            if distances[int(i)] <= best + 2.0 * np.sqrt(2.0 * n_terms)]
    return tuple(near) if len(near) > 1 else ()


@dataclass(frozen=True)
class CurveChoice:
    """The candidates judged on the curve: the real curve, each candidate's name, its index
    among the calibration's candidates, its twin's curve and distance, and the position of
    the chosen one (in these tuples)."""

    real: DesignCurve
    names: tuple[str, ...]
    indices: tuple[int, ...]
    twins: tuple[DesignCurve, ...]
    distances: tuple[float, ...]
    best: int

    @property
    def chosen(self) -> int:
        """The chosen world's index among the calibration's candidates."""
        return self.indices[self.best]

    @property
    def twin(self) -> DesignCurve:
        """The chosen twin's curve."""
        return self.twins[self.best]

    @property
    def z(self) -> np.ndarray:
        """The chosen twin's ``z`` per method and point, (2, points)."""
        return point_z(self.real, self.twin)


def choose_on_curve(real: DesignCurve, names: tuple[str, ...], indices: tuple[int, ...],
                    twins: tuple[DesignCurve, ...]) -> CurveChoice:
    """The candidate whose twin's curve is nearest the real one (the first of equals)."""
    distances = tuple(curve_distance(real, twin) for twin in twins)
    return CurveChoice(real, names, indices, twins, distances, int(np.argmin(distances)))


def curve_lines(choice: CurveChoice) -> list[str]:
    """The printed comparison: per design, real against twin for both methods, each point's
    ``z`` marked where it is off by more than its noise."""
    real, twin, z = choice.real, choice.twin, choice.z
    lines = [f"design curve, error % against the {real.against} (real: {real.runs} draws of k "
             f"labels per task; twin: {twin.runs} replicates at exactly k labels per task):",
             f"  {'labels/task':>11}  {'majority vote real / twin (z)':>32}  "
             f"{'Dawid-Skene real / twin (z)':>32}"]
    for p, design in enumerate(real.designs):
        cells = []
        for m, (r, t) in enumerate(((real.vote, twin.vote), (real.ds, twin.ds))):
            mark = " !" if abs(z[m, p]) > OFF_Z else "  "
            cells.append(f"{100 * r[p]:6.2f} / {100 * t[p]:6.2f} ({z[m, p]:+6.1f}){mark}")
        lines.append(f"  {design:>11}  {cells[0]:>32}  {cells[1]:>32}")
    return lines


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
    return out


def _curve(curve: DesignCurve) -> dict[str, Any]:
    return {"runs": curve.runs,
            "majority_vote_error": curve.vote.tolist(), "majority_vote_se": curve.vote_se.tolist(),
            "dawid_skene_error": curve.ds.tolist(), "dawid_skene_se": curve.ds_se.tolist()}


def curve_record(choice: CurveChoice) -> dict[str, Any]:
    """``<out>.fit.json``'s ``design_curve``: the designs, the real curve, the chosen twin's
    with each point's ``z``, and every candidate's distance."""
    z = choice.z
    return {
        "against": choice.real.against, "labels_per_task": list(choice.real.designs),
        "real": _curve(choice.real), "twin": _curve(choice.twin),
        "z_majority_vote": z[0].tolist(), "z_dawid_skene": z[1].tolist(),
        "off_z": OFF_Z, "noise_floor": NOISE_FLOOR,
        "points_off": int((np.abs(z) > OFF_Z).sum()),
        "candidates": [{"world": name, "distance": d, "replicates": twin.runs}
                       for name, d, twin in zip(choice.names, choice.distances, choice.twins,
                                                strict=True)],
        "world": choice.names[choice.best]}


def header_lines(choice: CurveChoice) -> list[str]:
    """The scenario header's account of the choice on the design curve."""
    per = "; ".join(f"{name} {d:.1f} ({twin.runs} replicates)" for name, d, twin in
                    zip(choice.names, choice.distances, choice.twins, strict=True))
    designs = ", ".join(choice.real.designs)
    return [f"chosen on the design curve: each candidate's twin at {designs} labels per task "
            "(exactly k",
            "  labels per task, drawn as a fixed-overlap market buys them; the nearest again "
            "with more replicates)",
            f"  against {choice.real.runs} random draws of k of the file's labels per task; "
            "distance = sum of z^2 over points",
            "  (majority vote and Dawid-Skene), z = gap / its noise:",
            f"  {per}."]
