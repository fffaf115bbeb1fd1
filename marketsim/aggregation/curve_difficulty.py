"""Task difficulty estimated on the data's design curve rather than by the likelihood: the
crowd-shrunk world (:mod:`~marketsim.aggregation.crowd_confusion`) with the spread ``sigma``
of its tasks' difficulty (``log beta_i ~ N(0, sigma^2)``, Whitehill et al. 2009, GLAD's task
parameter as :mod:`~marketsim.aggregation.confusion_fit` tempers a confusion row) chosen so
that the world, replayed on the file's own (task, worker) pairs
(:mod:`~marketsim.aggregation.world_replay`), errs as the real labels do at every k labels
per task.

Why not the likelihood: with a matrix per worker, the labels' noise a task shares with the
other labels of the task can be explained as each worker's own (a worker fitted on a few
labels is as spread as the sample), and the fit drives ``sigma`` to zero (Web: 0.003). Such a
world's errors are independent given the class, exactly Dawid–Skene's model, so Dawid–Skene
gains more over majority vote on its labels than on the real ones (Web, full data: 12.0 %
against the real 17.2 %, majority vote 24.1 against 26.9). The design curve measures what
the likelihood cannot see: how much each extra label helps each method.

The estimate: the ``sigma`` of :data:`SIGMA_GRID` are replayed, coarse to fine
(:func:`grid_search`; :data:`REPLICATES` draws of
the world's answers, fewer on a large file whose points are less noisy —
:func:`~marketsim.aggregation.curve_choice.replay_runs` —, :data:`DRAWS` draws of k labels
each, one on a file of many judged tasks) and the one nearest the real curve
(:func:`~marketsim.aggregation.curve_choice.curve_distance`, the first of equals) is kept;
zero keeps the world as the likelihood fitted it (no candidate is added). The matrices are
kept (not refitted with ``sigma`` fixed): the replay judges the world as the scenario will
draw it. ``calibrate`` adds the world as a candidate judged on the curve like the others
(docs/models.md, "Task difficulty on the design curve").

A world with its per-label accuracy restored (:mod:`~marketsim.aggregation.accuracy_restored`)
is restored again at each ``sigma`` (``keep_accuracy``: :func:`at_sigma`): tempering moves a
skewed worker's rows toward a guess more than it sharpens them (CF, 5 classes: labels 77.1 %
right at ``sigma`` 0, 72.9 % at 0.75), and the grid would size the difficulty against that
loss of accuracy instead of against how the difficulty gathers the errors on some tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from marketsim.aggregation.accuracy_restored import label_table, restored_with_difficulty
from marketsim.aggregation.confusion_fit import ConfusionFit, world_log_likelihood
from marketsim.aggregation.curve_choice import curve_distance, replay_runs
from marketsim.aggregation.design_curve import DesignCurve
from marketsim.aggregation.lookalike_follow import follow_log_likelihood
from marketsim.aggregation.mapping import Mapper, serial
from marketsim.aggregation.world_replay import pairs_curve
from marketsim.data.labels import LabelSet

#: The spreads of ``log beta`` tried (0: the world as fitted).
SIGMA_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)
#: The spreads tried for a world whose per-label accuracy is kept (``keep_accuracy``): not 1.5,
#: whose world, right as often as the file's labels, gathers its errors on so few tasks that
#: it was never the nearest on the seven sets measured (issue #40's tenth session: CF, CF_amt,
#: Web, Dog, RTE, Bluebird, MS; the farthest of the grid on CF, CF_amt and Web), and each value
#: is a replay of the file's pairs (Web: 0.8 CPU s).
KEPT_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Draws of the world's answers on the real pairs per ``sigma``, and of k labels per draw.
REPLICATES, DRAWS = 3, 2
#: What the name of a world with the difficulty estimated here ends with.
SUFFIX = ", task difficulty on the design curve"


@dataclass(frozen=True)
class CurveDifficulty:
    """The grid tried, each value's distance to the real curve, and the ``sigma`` chosen."""

    sigmas: tuple[float, ...]
    distances: tuple[float, ...]
    sigma: float


def difficulty_on_curve(fit: ConfusionFit, data: LabelSet, classes: np.ndarray,
                        judged: np.ndarray | None, real: DesignCurve, *,
                        grid: tuple[float, ...] = SIGMA_GRID, seed: int = 0
                        ) -> CurveDifficulty:
    """The ``sigma`` of ``grid`` whose world (``fit`` with that spread of difficulty) comes
    nearest ``real`` replayed on ``data``'s pairs, task ``i`` of class ``classes[i]`` (judged
    where ``judged``; None: against the full-data answers, as ``real`` is without a truth)."""
    return grid_search([fit], grid, lambda pairs: [
        _distance(base, sigma, data, classes, judged, real, seed) for base, sigma in pairs])[0]


def grid_search(bases: list[ConfusionFit], grid: tuple[float, ...],
                evaluate: Callable[[list[tuple[ConfusionFit, float]]], list[float]],
                advance: Callable[[], object] | None = None) -> list[CurveDifficulty]:
    """Per base, the ``sigma`` of ``grid`` nearest the curve, coarse to fine: every other
    value first (from the first), then the untried neighbours of the nearest of those; the
    nearest of all tried is kept (the first of equals, in the grid's order). A distance along
    ``sigma`` has one valley, or a bump away from it (more difficulty gathers the errors on
    fewer tasks): on RTE, Dog, Bluebird and CF every one of calibrate's 26 searches kept the
    whole grid's nearest (session 29), with four or five replays of six (a replay of a
    1,000,000-label file's pairs is 20 CPU s).
    ``evaluate`` takes (base, ``sigma``) pairs and returns their distances in order: one
    call per round, so a mapper keeps its processes busy over every base's values;
    ``advance`` is called once per base, when its search is done."""
    tried: list[dict[float, float]] = [{} for _ in bases]

    def run(pairs: list[tuple[int, float]]) -> None:
        for (b, sigma), distance in zip(pairs, evaluate([(bases[b], s) for b, s in pairs]),
                                        strict=True):
            tried[b][sigma] = distance

    run([(b, sigma) for b in range(len(bases)) for sigma in grid[::2]])
    finer = []
    for b, done in enumerate(tried):
        at = grid.index(min(done, key=lambda sigma: (done[sigma], grid.index(sigma))))
        finer += [(b, grid[j]) for j in (at - 1, at + 1)
                  if 0 <= j < len(grid) and grid[j] not in done]
    run(finer)
    estimates = []
    for done in tried:
        sigmas = tuple(sigma for sigma in grid if sigma in done)
        estimates.append(_estimate(sigmas, [done[sigma] for sigma in sigmas]))
        if advance is not None:
            advance()
    return estimates


#: The file's table of labels against classes and the workers' shares of the labels: what a
#: world's per-label accuracy is restored to (:func:`~marketsim.aggregation.accuracy_restored.
#: restored_with_difficulty`).
Restore = tuple[np.ndarray, np.ndarray]


def at_sigma(fit: ConfusionFit, sigma: float, restore: Restore | None = None) -> ConfusionFit:
    """``fit`` with difficulty ``sigma``; with ``restore``, its matrices moved so that its
    labels, tempered by the difficulty, are as often right as the file's."""
    if restore is None or sigma <= 0.0:
        return replace(fit, sigma=sigma)
    return restored_with_difficulty(fit, sigma, *restore)


def _distance(fit: ConfusionFit, sigma: float, data: LabelSet, classes: np.ndarray,
              judged: np.ndarray | None, real: DesignCurve, seed: int,
              restore: Restore | None = None) -> float:
    """How far ``fit`` with difficulty ``sigma`` (:func:`at_sigma`), replayed on ``data``'s
    pairs, is from ``real``: each ``sigma``'s replay draws from its own generator (seeded by
    ``seed`` alone), so the values of a grid can be computed in any order or process."""
    replicates, draws = replay_runs(data.n_tasks if judged is None else int(judged.sum()),
                                    REPLICATES, DRAWS)
    return curve_distance(real, pairs_curve(at_sigma(fit, sigma, restore), data, classes,
                                            judged, real.ks, replicates, draws, seed))


def _estimate(grid: tuple[float, ...], distances: list[float]) -> CurveDifficulty:
    return CurveDifficulty(tuple(grid), tuple(distances), grid[int(np.argmin(distances))])


def with_curve_difficulty(fit: ConfusionFit, estimate: CurveDifficulty, data: LabelSet,
                          weights: np.ndarray, restore: Restore | None = None
                          ) -> ConfusionFit | None:
    """``fit`` with the difficulty ``estimate`` chose, its log-likelihood of ``data`` (each
    task's class distributed as ``weights``; its labels following its look-alike where they
    do: :func:`~marketsim.aggregation.lookalike_follow.follow_log_likelihood`) and BIC moved
    by the change and one parameter more (listed; the curve, not the BIC, chooses it); None
    where the estimate is no difficulty (the world would be ``fit`` again). With ``restore``
    the matrices are those :func:`at_sigma` restored (no parameter more: the file's table was
    counted when ``fit`` was restored)."""
    if estimate.sigma <= 0.0:
        return None
    world = replace(at_sigma(fit, estimate.sigma, restore), with_difficulty=True,
                    on_curve=True, name=fit.name + SUFFIX)
    loglik = follow_log_likelihood(world, data, weights) if world.follow < 1.0 else \
        world_log_likelihood(world, data.tasks, data.workers, data.labels, weights)
    bic = fit.bic - 2.0 * (loglik - fit.log_likelihood) + np.log(max(data.n_labels, 1))
    return replace(world, log_likelihood=loglik, n_params=fit.n_params + 1, bic=float(bic))


def curve_worlds(bases: tuple[ConfusionFit, ...], data: LabelSet, classes: np.ndarray,
                 known: np.ndarray, real: DesignCurve, weights: np.ndarray, seed: int = 0,
                 advance: Callable[[], object] | None = None,
                 mapper: Mapper | None = None, keep_accuracy: bool = False
                 ) -> tuple[ConfusionFit, ...]:
    """Each of ``bases`` with its difficulty estimated on ``real`` (:func:`difficulty_on_curve`,
    judged on the ``known`` tasks where ``real`` is against the truth), those where it is not
    zero (``calibrate``'s candidates). Each (base, ``sigma``) replay is one call of ``mapper``
    (:mod:`~marketsim.aggregation.mapping`), the bases' values of a round of
    :func:`grid_search` in one batch: three bases keep two processes busy to the end, where a
    call per base left one idle for the third base's whole grid; ``advance`` is called once
    per base world, when its search is done. With ``keep_accuracy``
    (``bases`` with the per-label accuracy restored) each ``sigma``'s world is restored again
    with its difficulty (:func:`at_sigma`): tempering moves labels toward a guess, and the
    curve would otherwise size the difficulty against the accuracy it costs rather than
    against how it gathers the errors on some tasks; the grid is then :data:`KEPT_GRID`."""
    judged = known if real.against == "truth" else None
    restore = (label_table(data, weights),
               np.bincount(data.workers, minlength=data.n_workers) / max(data.n_labels, 1)
               ) if keep_accuracy else None
    grid = KEPT_GRID if keep_accuracy else SIGMA_GRID
    estimates = grid_search(list(bases), grid, lambda pairs: list((mapper or serial)(
        _distance, [(fit, sigma, data, classes, judged, real, seed, restore)
                    for fit, sigma in pairs])), advance)
    worlds = [with_curve_difficulty(fit, estimate, data, weights, restore)
              for fit, estimate in zip(bases, estimates, strict=True)]
    return tuple(w for w in worlds if w is not None)

