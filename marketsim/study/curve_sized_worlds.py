"""The candidate worlds ``marketsim calibrate`` sizes on the data's design curve, beside the
one-matrix worlds and task types the likelihood alone fits.

The likelihood underrates the errors a task's labels share (a worker's row fitted on a few
labels absorbs them), so these worlds take one size from the file's own curve or its shared
errors: the crowd-shrunk worlds (:func:`~marketsim.aggregation.crowd_worlds.crowd_worlds`)
and their task difficulty on the curve
(:func:`~marketsim.aggregation.curve_difficulty.curve_worlds`); the look-alike share from the
majority's profile (:mod:`~marketsim.aggregation.ambiguity_share`, each world's share measured
in its own twin: :mod:`~marketsim.study.twin_ambiguity`); ambiguous tasks' pulls
(:mod:`~marketsim.aggregation.pull_fit`); the per-label accuracy restored with that share
(:mod:`~marketsim.aggregation.accuracy_restored`); the labels following the look-alike by the
file's agreement rate (:mod:`~marketsim.aggregation.lookalike_follow`) and, last, those
worlds' task difficulty on the curve.

Why the last: a world whose labels partly follow the look-alike has the file's agreement and
share of wrong majorities, yet its tasks' accuracies fall in two heaps — the look-alikes, most
of whose labels are wrong, and the rest, most right — where a real crowd's spread between them.
CF_amt (300 tasks, 5 classes, 20 labels a task): the real tasks' accuracies have quartiles
0.35 / 0.55 / 0.75, its twin's 0.15–0.25 / 0.65 / 0.8, and majority vote, which a task of
middling accuracy defeats at 3 to 7 labels and not at 20, was 1.9 points too good at 5 labels
(17.29 % against 19.17 %). Difficulty (GLAD's per-task temperature, Whitehill et al. 2009)
sized on the curve spreads the upper heap (CF_amt: sigma 0.25, median 0.60–0.64; its lower
quartile stays 0.15–0.25) and brought CF_amt's majority vote within 1.1 points at 3, 5 and
full labels (issue #40, ninth session: docs/explanation/models/calibration/other-design-curves.md).

And a restored world's own difficulty on the curve, its per-label accuracy restored again at
every ``sigma`` (``curve_worlds(..., keep_accuracy=True)``): a restored world is right at one
label but its errors can be spread over more tasks than the real ones. CF (TIN-model's, 5
classes, 461 workers with 3.7 labels each): the restored worlds' majority vote at 3 labels was
13.7 % against the real 16.4 (Dawid-Skene 29.3 against 33.4), and the world written, its
difficulty sized without the restoration, had its labels 73.1 % right against 76.6 %.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from marketsim.aggregation.accuracy_restored import SUFFIX as RESTORED
from marketsim.aggregation.accuracy_restored import restorable_per_worker
from marketsim.aggregation.ambiguity_share import SUFFIX as SHARED
from marketsim.aggregation.ambiguity_share import ambiguity_worlds, majority_wrong
from marketsim.aggregation.confusion_fit import ConfusionFit
from marketsim.aggregation.crowd_worlds import crowd_worlds
from marketsim.aggregation.curve_difficulty import curve_worlds
from marketsim.aggregation.design_curve import DesignCurve
from marketsim.aggregation.lookalike_follow import and_partly_shared
from marketsim.aggregation.mapping import Mapper
from marketsim.aggregation.pull_fit import pull_worlds
from marketsim.data.labels import LabelSet
from marketsim.scenario.calibration import Calibration
from marketsim.study.twin_ambiguity import twin_share


def crowd_shrunk(data: LabelSet, weights: np.ndarray, ref: np.ndarray, known: np.ndarray,
                 real: DesignCurve, seed: int, advance: Callable[[], object],
                 mapper: Mapper | None = None
                 ) -> tuple[tuple[ConfusionFit, ...], tuple[ConfusionFit, ...]]:
    """The crowd-shrunk worlds and those with task difficulty on ``real`` (task ``i``'s class
    ``ref[i]``, judged on the ``known`` tasks), and the bases the shared errors are sized on
    (:func:`shared_errors`): the first two and those with the crowd's spread restored.
    ``advance`` is called once, then once per base."""
    crowd = crowd_worlds(data.tasks, data.workers, data.labels, weights, data.n_workers,
                         mapper=mapper)
    advance()
    bases = (*crowd[:2], *(f for f in crowd if f.spread_restored))
    return crowd + curve_worlds(bases, data, ref, known, real, weights, seed, advance,
                                mapper), bases


def shared_errors(cal: Calibration, bases: tuple[ConfusionFit, ...],
                  fits: tuple[ConfusionFit, ...], data: LabelSet, weights: np.ndarray,
                  ref: np.ndarray, known: np.ndarray, real: DesignCurve, seed: int,
                  advance: Callable[[], object], mapper: Mapper | None = None
                  ) -> tuple[ConfusionFit, ...]:
    """``cal``'s crowd candidates, then the worlds whose shared errors are sized on the file
    (module docstring): of ``bases`` (all but the first) the look-alike share from the
    majority's profile (judged on the ``known`` tasks, else all; the twin's share weighted to
    their class mix, its scales past 3 where they are some of the tasks), the pulls, the
    per-label accuracy restored (of ``bases`` and the per-worker ``fits``), the labels
    following the look-alike and their task difficulty on ``real``, and one restored world's
    difficulty on ``real`` with its accuracy kept (:func:`restored_share`). ``advance`` is
    called once per base but the first, once for the pulls and once for the last steps."""
    wrong = (majority_wrong(data, data.labels, ref, known | ~known.any()),
             twin_share(cal, seed, real.mix))
    dilution = data.n_tasks / int(known.sum()) if known.any() else 1.0
    ambiguous = cal.crowd_fits + ambiguity_worlds(bases[1:], *wrong, data, weights, advance,
                                                  dilution, mapper)
    ambiguous += pull_worlds(data, weights, ref, known, real, seed, advance, mapper)
    restorable = (*bases[1:], *restorable_per_worker(fits))  # each share fitted restored
    partly = and_partly_shared(ambiguous, data, weights, (restorable, *wrong), dilution, mapper)
    following = tuple(f for f in partly if f.follow < 1.0)
    spread = curve_worlds(following, data, ref, known, real, weights, seed, None, mapper)
    gathered = curve_worlds(restored_share(partly), data, ref, known, real, weights, seed, None,
                            mapper, keep_accuracy=True)
    advance()
    return partly + spread + gathered


def restored_share(fits: tuple[ConfusionFit, ...]) -> tuple[ConfusionFit, ...]:
    """Of the crowd-shrunk ``fits`` with their ambiguous share and per-label accuracy fitted
    together (:func:`~marketsim.aggregation.accuracy_restored.restored_share_worlds`, named so),
    every label following its look-alike and without difficulty, the one of lowest BIC (none
    if there is none): the base whose task difficulty is sized on the curve with its accuracy
    kept (module docstring). One base: its grid is five replays (Web: 0.8 CPU s each), and the
    worlds differ only in how spread their workers are, which the likelihood judges."""
    restored = [f for f in fits if f.crowd is not None and f.sigma == 0.0 and f.follow == 1.0
                and f.pull is None
                and f.name.endswith(SHARED + RESTORED)]
    return tuple(sorted(restored, key=lambda f: f.bic)[:1])
