"""The share of ambiguous tasks fitted to the data's disagreement profile: a look-alike world
(:mod:`~marketsim.aggregation.confusion_fit`: task ``i`` of class ``c`` looks like class
``s ~ lookalike[c]`` to every worker) whose off-diagonal look-alike mass is scaled so that,
replayed on the file's own (task, worker) pairs (:mod:`~marketsim.aggregation.world_replay`),
it has as many tasks on which most labels are wrong as the real labels (``calibrate`` measures
the world's share in its twin as collected instead: :mod:`marketsim.study.twin_ambiguity`).

Why: the likelihood fits the look-alike matrix together with every worker's matrix, and a
worker matrix fitted on a few labels absorbs part of the errors a task's labels share (the
same reason the likelihood puts task difficulty near zero: :mod:`~marketsim.aggregation.
curve_difficulty`). The tasks the majority gets wrong are the errors no reweighting of workers
fixes, so their share sets how far extra labels help Dawid–Skene at full overlap. Item
ambiguity as a property of the task shared by its annotators is the look-alike (or "item
difficulty class") of Dawid & Skene's extensions; here its size is matched to the per-task
profile of the majority's share, a moment of the data, not to the likelihood.

The estimate: the scales of :data:`SCALES` (with a truth on some tasks only, then doubling
ones: :func:`tried_scales`), up to the largest a look-alike row allows, are tried in
increasing order, each world's share of majority-wrong tasks (ties counted a half) measured
by a given function (here :func:`pairs_share`: :data:`REPLICATES` vectorised draws on the
pairs, no aggregation but the count of each task's labels per class), until one reaches the
real share (the share grows with the scale); the scale is then interpolated linearly between
the last two scales, whose shares bracket the real one. Where the world as fitted already has
the real share or more, it is kept as it is (scale 1); where even the largest scale has less,
the largest is kept.

Why scales far above 3 there: the other tasks' class is Dawid–Skene's answer, which a
look-alike task's labels give, so the fitted look-alike mass is the gold's, diluted by every
other task (without any truth no look-alike shows, and the scales stop at 3 as they do with a
truth on every task). HITspam's CrowdFlower file (5,380 tasks, each unanimous; 34 of the 100
with a truth wrong, 28 of its 31 "Yes") has a real share of 34 %, judged on the gold as the
gold is mixed; the worlds fitted have a look-alike mass of 0.2 and 1.3 % by class, 1.6 % of
wrong majorities at scale 3, and reach 34 % near scale 60.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from marketsim.aggregation.confusion_fit import ConfusionFit, world_log_likelihood
from marketsim.aggregation.mapping import Mapper, mapped
from marketsim.aggregation.metrics import stratified_mean
from marketsim.aggregation.world_replay import world_labels
from marketsim.data.labels import LabelSet

#: The scales of the look-alike matrix's off-diagonal mass tried (1: the world as fitted).
SCALES = (1.0, 1.125, 1.25, 1.375, 1.5, 1.75, 2.0, 2.5, 3.0)
#: Draws of the world's answers on the real pairs per scale.
REPLICATES = 5
#: What the name of a world with the share fitted here ends with.
SUFFIX = ", ambiguous share from the majority's profile"


def majority_wrong(data: LabelSet, labels: np.ndarray, classes: np.ndarray,
                   judged: np.ndarray, mix: tuple[float, ...] | None = None) -> float:
    """The share of the ``judged`` tasks on which most of ``labels`` (answers for ``data``'s
    pairs) are not the task's class ``classes[i]`` (a tie between it and another class a
    half); with ``mix``, each class's share weighted by ``mix`` (a twin judged as a partial
    truth's tasks are mixed: :func:`~marketsim.aggregation.design_curve.judged_mix`)."""
    counts = np.zeros((data.n_tasks, max(data.n_classes, int(classes.max()) + 1)))
    np.add.at(counts, (data.tasks, labels), 1.0)
    right = counts[np.arange(data.n_tasks), classes]
    best_other = np.where(np.eye(counts.shape[1], dtype=bool)[classes], -1.0, counts).max(axis=1)
    score = np.where(right < best_other, 1.0, np.where(right == best_other, 0.5, 0.0))
    return stratified_mean(score[judged], classes[judged], mix)


def scaled_lookalike(lookalike: np.ndarray, scale: float) -> np.ndarray | None:
    """``I + scale (lookalike - I)``: each class's look-alike mass times ``scale``; None when a
    row's mass would exceed 1."""
    k = lookalike.shape[0]
    scaled = np.eye(k) + scale * (lookalike - np.eye(k))
    return scaled if scaled.min() >= 0.0 else None


def largest_scale(lookalike: np.ndarray) -> float:
    """The largest scale :func:`scaled_lookalike` accepts: where the class with the most
    look-alike mass would look like another class on every task (inf for the identity)."""
    mass = float((1.0 - np.diag(lookalike)).max())
    return np.inf if mass <= 0.0 else 1.0 / mass


def tried_scales(lookalike: np.ndarray, dilution: float = 1.0) -> tuple[float, ...]:
    """The scales :func:`ambiguity_share` tries: those of :data:`SCALES` below a top, then
    doubling ones below it, and the top last. The top is ``SCALES[-1] * dilution`` or, where
    smaller, :func:`largest_scale` (a row's look-alike mass can reach 1, not more).
    ``dilution``: the labelled tasks per task with a truth (1 with a truth on all or none): a
    world fitted with the other tasks' class from Dawid–Skene's answers sees their
    look-alikes as right answers, so its mass is the gold's diluted by so many tasks."""
    bound = largest_scale(lookalike)
    top = min(bound, SCALES[-1] * max(dilution, 1.0))
    if top <= 1.0:
        return (1.0,)
    scales = [s for s in SCALES if s < top]
    while scales[-1] * 2.0 < top:
        scales.append(scales[-1] * 2.0)
    scales.append(top * (1.0 - 1e-9) if top == bound else top)  # the bound itself rounds out
    return tuple(scales)


@dataclass(frozen=True)
class AmbiguityShare:
    """The scales tried, each one's share of majority-wrong tasks, the real share and the
    scale kept."""

    scales: tuple[float, ...]
    shares: tuple[float, ...]
    real: float
    scale: float


#: How a world's share of majority-wrong tasks is measured (:func:`pairs_share`, or the twin's):
#: seeded by its arguments alone, so the worlds of a search can be measured in any process.
ShareOf = Callable[[ConfusionFit], float]


def pairs_share(data: LabelSet, classes: np.ndarray, judged: np.ndarray, seed: int = 0
                ) -> ShareOf:
    """A world's share of majority-wrong tasks among the ``judged`` ones, replayed on
    ``data``'s pairs with task ``i`` of class ``classes[i]`` (mean of :data:`REPLICATES`)."""
    classes = np.asarray(classes, dtype=np.int64)

    def share(world: ConfusionFit) -> float:
        rng = np.random.default_rng([seed, 41])  # each world's own draws: any order, process
        return float(np.mean([
            majority_wrong(data, world_labels(world, data.tasks, data.workers, classes, rng),
                           classes, judged) for _ in range(REPLICATES)]))
    return share


def ambiguity_share(fit: ConfusionFit, real: float, share_of: ShareOf, dilution: float = 1.0
                    ) -> AmbiguityShare:
    """The scale of ``fit``'s look-alike mass whose world's share of majority-wrong tasks
    (``share_of``) is the ``real`` one (interpolated between the two scales that bracket it;
    module docstring)."""
    scales: list[float] = []
    shares: list[float] = []
    for scale in tried_scales(fit.lookalike, dilution):
        look = scaled_lookalike(fit.lookalike, scale)
        if look is None:
            break
        shares.append(share_of(replace(fit, lookalike=look)))
        scales.append(scale)
        if shares[-1] >= real:
            break
    if len(shares) > 1 and shares[-1] >= real > shares[-2]:  # bracketed: interpolate
        low, high = shares[-2], shares[-1]
        scale = scales[-2] + (real - low) / (high - low) * (scales[-1] - scales[-2])
        return AmbiguityShare(tuple(scales), tuple(shares), real, float(scale))
    best = int(np.argmin(np.abs(np.asarray(shares) - real)))
    return AmbiguityShare(tuple(scales), tuple(shares), real, scales[best])


def with_ambiguity_share(fit: ConfusionFit, estimate: AmbiguityShare, data: LabelSet,
                         weights: np.ndarray) -> ConfusionFit | None:
    """``fit`` with its look-alike mass scaled as ``estimate`` chose, its log-likelihood of
    ``data`` (each task's class distributed as ``weights``) and BIC moved by the change and
    one parameter more (listed; the design curve chooses it); None where the scale is 1 or
    ``fit`` has no look-alikes (the world would be ``fit`` again)."""
    look = scaled_lookalike(fit.lookalike, estimate.scale)
    if not fit.with_lookalike or estimate.scale == 1.0 or look is None:
        return None
    world = replace(fit, lookalike=look, on_curve=True, name=fit.name + SUFFIX)
    loglik = world_log_likelihood(world, data.tasks, data.workers, data.labels, weights)
    bic = fit.bic - 2.0 * (loglik - fit.log_likelihood) + np.log(max(data.n_labels, 1))
    return replace(world, log_likelihood=loglik, n_params=fit.n_params + 1, bic=float(bic))


def ambiguity_worlds(bases: tuple[ConfusionFit, ...], real: float, share_of: ShareOf,
                     data: LabelSet, weights: np.ndarray,
                     advance: Callable[[], object] | None = None, dilution: float = 1.0,
                     mapper: Mapper | None = None) -> tuple[ConfusionFit, ...]:
    """Each look-alike world of ``bases`` with its ambiguous share fitted to the ``real``
    majority-wrong share (:func:`ambiguity_share`, measured by ``share_of``; ``dilution``:
    :func:`tried_scales`'), those whose scale is not 1 (``calibrate``'s candidates, judged on
    the design curve whatever the number of task types; ``advance``: called once per base).
    Each base's search is one call of ``mapper`` (its twins measured in one process; a
    million-label file's searches took 13 s one after the other)."""
    searched = [fit for fit in bases if fit.with_lookalike]
    if advance is not None:  # the bases without look-alikes have nothing to search
        for _ in range(len(bases) - len(searched)):
            advance()
    worlds = mapped(mapper, shared_world, [(fit, real, share_of, data, weights, dilution)
                                           for fit in searched], advance)
    return tuple(w for w in worlds if w is not None)


def shared_world(fit: ConfusionFit, real: float, share_of: ShareOf, data: LabelSet,
                 weights: np.ndarray, dilution: float = 1.0) -> ConfusionFit | None:
    """``fit`` with its ambiguous share fitted (:func:`ambiguity_share`) and its likelihood
    (:func:`with_ambiguity_share`): one base of :func:`ambiguity_worlds`."""
    return with_ambiguity_share(fit, ambiguity_share(fit, real, share_of, dilution), data,
                                weights)
