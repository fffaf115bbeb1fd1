"""A label file's own design curve: the error majority vote and Dawid–Skene would have made
with only k labels per task, for k = 1 up to the file's typical overlap, and with all of them.

The data answer "what if we had bought fewer labels" themselves: keeping k of each task's
real labels, drawn at random, gives a design the crowd really could have produced. Each k is
drawn :data:`DRAWS` times (a random key per label, its rank within its task: one sort, no loop
over tasks); a task with fewer than k labels keeps all of its own. The error is counted
against the truth where it is known; without a truth, it is the disagreement of the k-label
answer with the same method's answer on all the labels (how far k labels are from what the
file settles on). Majority vote counts a tie among the top classes as ``1/n_tied`` right
(:func:`~marketsim.aggregation.majority_vote.fractional_tie_error`).

The grid of k (:func:`k_grid`): 1, 2, 3, 5, 7 and then 10, 15, 20, 30, 50, 70 per decade,
each at most the median labels per task and below the most any task has (where every task
would keep all its labels the point is the full data), then the full data. ``marketsim
calibrate`` compares its twin with this curve (:mod:`marketsim.aggregation.curve_choice`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from marketsim.aggregation.majority_vote import MajorityVote, fractional_tie_error
from marketsim.aggregation.metrics import error_rate
from marketsim.aggregation.registry import make_estimator
from marketsim.data.labels import LabelSet

#: Random draws of k labels per task for each k of the real curve.
DRAWS = 10
#: The steps of the k grid within the first decade, and per decade after it (times 10^d).
FIRST_STEPS = (1, 2, 3, 5, 7)
DECADE_STEPS = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)


def k_grid(labels_per_task: np.ndarray) -> tuple[int, ...]:
    """The labels per task the curve is drawn at (the full data comes after them): the
    grid's values up to the median labels per task and below the largest."""
    counts = np.asarray(labels_per_task)
    counts = counts[counts > 0]
    if counts.size == 0:
        return ()
    median, most = float(np.median(counts)), int(counts.max())
    grid: list[int] = list(FIRST_STEPS)
    decade = 10
    while grid[-1] < median:
        grid += [int(step * decade) for step in DECADE_STEPS]
        decade *= 10
    return tuple(k for k in grid if k <= median and k < most)


def keep_k_per_task(tasks: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """A mask keeping ``k`` labels of each task chosen uniformly at random (all of a task's
    labels where it has ``k`` or fewer): each label's rank by a random key within its task.

    The ranks are those of ``np.lexsort((key, tasks))`` (ties by position): the labels in
    task order (:func:`task_order`), then the tasks with the same number ``c > k`` of labels
    as one (tasks, c) array of keys, each row sorted stably. A loop over the distinct label
    counts (at most ``sqrt(2 * labels)`` of them), not over tasks: a quarter of lexsort's
    time at a million labels, where a design curve draws dozens of times."""
    key = rng.random(tasks.size)
    order = task_order(tasks)
    ordered = tasks[order]
    first = np.ones(tasks.size, dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, tasks.size))
    keep = np.zeros(tasks.size, dtype=bool)
    for c in np.unique(counts):
        at = starts[counts == c][:, None] + np.arange(c)  # (tasks, c) places in task order
        if c > k:
            ranked = np.argsort(key[order[at]], axis=1, kind="stable")
            at = np.take_along_axis(at, ranked[:, :k], axis=1)
        keep[order[at.ravel()]] = True
    return keep


def task_order(tasks: np.ndarray) -> np.ndarray:
    """The labels' places sorted by task, ties in place order (``np.argsort(tasks,
    kind="stable")``) by a least-significant-digit radix sort, 16 bits a pass (numpy's
    stable sort of 16-bit integers is a radix sort: task numbers are non-negative)."""
    order = np.arange(tasks.size)
    digits = np.asarray(tasks, dtype=np.int64)
    shift, top = 0, int(digits.max(initial=0))
    while True:  # one pass per 16 bits of the largest task number
        step = np.argsort(((digits >> shift) & 0xFFFF).astype(np.uint16), kind="stable")
        order, digits = order[step], digits[step]
        shift += 16
        if top >> shift == 0:
            return order


def subset(data: LabelSet, keep: np.ndarray) -> LabelSet:
    """The labels of ``data`` where ``keep`` is true, on the same tasks, workers and classes."""
    return LabelSet(data.tasks[keep], data.workers[keep], data.labels[keep], data.n_tasks,
                    data.n_workers, data.n_classes)


@dataclass(frozen=True)
class References:
    """What each method's answer is judged against, a class per task (-1: not judged): the
    truth for both, or each method's own answer on all the labels. ``mix``: the class shares
    each method's error is weighted to (a twin's tasks weighed as the real file's judged
    tasks are mixed: :func:`judged_mix`); None: every judged task alike."""

    vote: np.ndarray
    ds: np.ndarray
    against: str
    mix: tuple[float, ...] | None = None

    @classmethod
    def of(cls, data: LabelSet, truth: np.ndarray | None) -> References:
        """The truth where the file has one (for tasks it covers and someone labelled: a task
        without labels has no answer to judge, and counting it would make its truth an error
        of every method — AdultContent2's truth names 1,184 tasks nobody labelled of 1,517),
        else the full-data answers."""
        if truth is not None and bool(np.any(truth >= 0)):
            labelled = np.bincount(data.tasks, minlength=data.n_tasks) > 0
            judged = np.where(labelled, truth, -1)
            return cls(judged, judged, "truth")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vote = np.asarray(MajorityVote(random_state=0).fit(data).labels_, dtype=np.int64)
            ds = np.asarray(make_estimator("ds").fit(data).labels_, dtype=np.int64)
        return cls(vote, ds, "full-data answer")


def judged_mix(data: LabelSet, refs: References) -> tuple[float, ...] | None:
    """The class shares of the tasks ``refs`` judges against a truth that covers only some of
    ``data``'s labelled tasks; None when it covers all of them, or there is no truth.

    A truth on a subset is often drawn by class (AdultContent2's 333 gold tasks of 11,040
    are 56 % G where the crowd's answers are 86 % G), so a twin, whose tasks are drawn from
    the crowd's prior, is judged on its tasks weighted to this mix: each class's error
    weighs as much as it does in the real file's (post-stratification). Where the truth
    covers every labelled task the twin's prior is that mix already."""
    if refs.against != "truth":
        return None
    labelled = np.bincount(data.tasks, minlength=data.n_tasks) > 0
    judged = refs.vote >= 0
    if bool(judged[labelled].all()):
        return None
    counts = np.bincount(refs.vote[judged], minlength=data.n_classes).astype(np.float64)
    return tuple(float(x) for x in counts / counts.sum())


def errors(data: LabelSet, refs: References) -> tuple[float, float]:
    """Majority vote's error (ties fractional) and Dawid–Skene's on ``data`` against ``refs``
    (weighted by class to ``refs.mix`` when given; the fit's warnings are silenced: a draw of
    one label per task identifies nothing, and that is the point it measures)."""
    counts = np.zeros((data.n_tasks, data.n_classes))
    np.add.at(counts, (data.tasks, data.labels), 1.0)
    vote = fractional_tie_error(counts, refs.vote, refs.mix)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answer = np.asarray(make_estimator("ds").fit(data).labels_)
    return vote, error_rate(answer, refs.ds, refs.mix)


@dataclass(frozen=True)
class DesignCurve:
    """Errors at each design: ``ks`` labels per task, then the full data (``points`` =
    ``len(ks) + 1``); per method (majority vote, Dawid–Skene) the mean over the runs (draws of
    the real labels, or a twin's replicates) and its standard error, against ``against``.
    A real curve also keeps the number of tasks it judges (``judged``: an error as collected
    is one draw over that many; 0 where not recorded) and, against a truth that covers only
    some of the labelled tasks, their class shares (``mix``, :func:`judged_mix`: what a
    twin's errors are weighted to)."""

    ks: tuple[int, ...]
    vote: np.ndarray
    vote_se: np.ndarray
    ds: np.ndarray
    ds_se: np.ndarray
    runs: int
    against: str
    mix: tuple[float, ...] | None = None
    judged: int = 0

    @classmethod
    def from_runs(cls, ks: tuple[int, ...], vote: np.ndarray, ds: np.ndarray,
                  against: str, mix: tuple[float, ...] | None = None,
                  judged: int = 0) -> DesignCurve:
        """The curve of per-run errors ``vote`` and ``ds`` (points, runs)."""
        vote, ds = np.asarray(vote, dtype=np.float64), np.asarray(ds, dtype=np.float64)
        runs = vote.shape[1]

        def se(x: np.ndarray) -> np.ndarray:
            return x.std(axis=1, ddof=1) / np.sqrt(runs) if runs > 1 else np.zeros(x.shape[0])
        return cls(tuple(ks), vote.mean(axis=1), se(vote), ds.mean(axis=1), se(ds), runs,
                   against, mix, judged)

    @property
    def designs(self) -> tuple[str, ...]:
        """Each point's name: its labels per task, then ``full``."""
        return (*(str(k) for k in self.ks), "full")


def real_curve(data: LabelSet, truth: np.ndarray | None, *, draws: int = DRAWS,
               seed: int = 0, ks: tuple[int, ...] | None = None) -> DesignCurve:
    """The file's design curve: ``draws`` random draws of k labels per task for each k of
    :func:`k_grid` (or ``ks``), then all the labels (one run: its standard error is 0)."""
    refs = References.of(data, truth)
    if ks is None:
        ks = k_grid(np.bincount(data.tasks, minlength=data.n_tasks))
    rng = np.random.default_rng(seed)
    runs = np.array([[errors(subset(data, keep_k_per_task(data.tasks, k, rng)), refs)
                      for _ in range(draws)] for k in ks]).reshape(len(ks), draws, 2)
    full = np.broadcast_to(np.array(errors(data, refs)), (1, draws, 2))
    both = np.concatenate([runs, full], axis=0)
    return DesignCurve.from_runs(ks, both[..., 0], both[..., 1], refs.against,
                                 judged_mix(data, refs), int(np.sum(refs.ds >= 0)))


def short_task_lines(ks: tuple[int, ...], labels_per_task: Sequence[tuple[int, int]]
                     ) -> list[str]:
    """Where the file holds fewer than some design's k labels of a task (``labels_per_task``:
    ``(labels, tasks)`` pairs), the line saying that such a task keeps its own count at that
    k, in the real draws and the twin's design alike
    (:func:`~marketsim.study.design_sampler.design_counts`); else nothing."""
    short = [(k, sum(tasks for labels, tasks in labels_per_task if labels < k)) for k in ks]
    notes = [f"{count} at k = {k}" for k, count in short if count]
    if not notes:
        return []
    total = sum(tasks for _, tasks in labels_per_task)
    return [f"  a task the file holds fewer than k labels of keeps its own count at k, in the "
            f"real draws and the twin alike ({'; '.join(notes)}, of {total} tasks)"]


def mix_lines(real: DesignCurve) -> list[str]:
    """Where the truth covers only some tasks, the line saying the twin's errors are weighted
    to the judged tasks' class mix (:func:`judged_mix`) and its error as collected is one
    draw over that many tasks; else nothing."""
    if real.mix is None:
        return []
    shares = ", ".join(f"{100 * share:.0f}" for share in real.mix)
    return [f"  the truth covers {real.judged} of the labelled tasks: the twin's errors are "
            f"weighted to their class mix ({shares} % by class), and its error as collected "
            f"is one draw over {real.judged} tasks"]
