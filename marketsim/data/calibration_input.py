"""What a label file must have for ``marketsim calibrate`` to fit a crowd to it, and what it
lacks that makes the fit say little (warnings).

A twin is fitted to the labelled tasks only: a truth file that also covers tasks nobody labelled
would otherwise add tasks to the twin and spread the file's labels thinner (the "as collected"
arm would not be how the data were collected); its classes are the classes the workers gave (a
class only the truth file names is taken out, loudly, and its tasks' truth ignored). Refused: a
file whose labels name one class only (there is no crowd error to fit). Warned about: no truth
and nothing to learn accuracy from (one worker, or one label per task: Dawid–Skene's posterior
is then the labels themselves and every worker looks perfect; with more, the errors the whole
crowd shares are invisible, so the twin is optimistic), a truth file covering part of the tasks,
a truth on tasks labelled by another mix of workers than the rest (:func:`judged_crowd_note`),
every task's labels in agreement (:func:`unanimous_note`: no worker error to learn from),
a class nobody answered (taken out), a class with under 1 % of the labels (a stray value in a
binary file makes the twin K-class), and very few tasks.
"""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.errors import InputError

#: A class given in fewer than this share of the labels is reported as rare.
RARE_CLASS = 0.01
#: Rare classes named one line each up to this many; beyond, one line names this many.
MAX_RARE_NOTES = 3
#: Fewer labelled tasks than this: the fit rests on too few tasks to choose a world.
FEW_TASKS = 20
#: Binomial standard errors by which the busiest workers' share of the labels on the tasks
#: with a truth must differ from their share of all labels to be reported (a random subset of
#: AdultContent2's, HITspam's or ZenCrowd's tasks, 100 to a third of them, stayed within 3.3
#: in 300 draws each; AdultContent2's gold is at -38.8, HITspam's at -10.2).
JUDGED_CROWD_Z = 5.0


def labelled_only(data: LabelSet, truth: np.ndarray | None
                  ) -> tuple[LabelSet, np.ndarray | None, int]:
    """``data`` and ``truth`` restricted to the tasks with at least one label (ids kept, order
    kept) and how many tasks were dropped (tasks only the truth file names)."""
    labelled = np.bincount(data.tasks, minlength=data.n_tasks) > 0
    dropped = int(data.n_tasks - np.count_nonzero(labelled))
    if not dropped:
        return data, truth, 0
    index = np.cumsum(labelled) - 1
    kept = LabelSet(index[data.tasks], data.workers, data.labels, int(labelled.sum()),
                    data.n_workers, data.n_classes, np.asarray(data.task_ids)[labelled],
                    data.worker_ids, data.class_ids, data.scores)
    return kept, None if truth is None else np.asarray(truth)[labelled], dropped


def worker_classes_only(data: LabelSet, truth: np.ndarray | None
                        ) -> tuple[LabelSet, np.ndarray | None, list[str]]:
    """``data`` with the classes no worker gave taken out (classes renumbered in order, ids
    kept), the truth of the tasks of such a class set unknown (-1), and one note per class
    taken out. A twin's workers answer the classes the real ones gave: a class only the truth
    file names would otherwise be answered by the fit's smoothing alone (11.7 % of a twin's
    labels, in one file, answered a class no real worker ever gave)."""
    given = np.bincount(data.labels, minlength=data.n_classes) > 0
    if given.all():
        return data, truth, []
    kept = np.flatnonzero(given)
    names = ", ".join(_class_name(data, int(k)) for k in kept)
    notes = []
    for k in np.flatnonzero(~given).tolist():
        tasks = 0 if truth is None else int(np.count_nonzero(truth == k))
        where = (f"the truth of its {tasks} task{'s' if tasks > 1 else ''} is ignored (their "
                 "class comes from Dawid-Skene's posterior)") if tasks else "no task has it"
        notes.append(f"class {_class_name(data, k)} is never given as a label, so it is not a "
                     f"class of the twin (whose classes are the ones workers gave: {names}); "
                     f"{where}")
    code = np.cumsum(given) - 1
    out = LabelSet(data.tasks, data.workers, code[data.labels], data.n_tasks, data.n_workers,
                   max(kept.size, 1), data.task_ids, data.worker_ids,
                   np.asarray(data.class_ids)[kept], data.scores)
    if truth is not None:
        truth = np.where((truth >= 0) & given[np.maximum(truth, 0)],
                         code[np.maximum(truth, 0)], -1)
    return out, truth, notes


def _class_name(data: LabelSet, k: int) -> str:
    return repr(str(np.asarray(data.class_ids)[k]))


def check_calibratable(data: LabelSet, truth: np.ndarray | None, labels_file: str) -> None:
    """InputError (naming ``labels_file``) when the labels cannot be fitted: none at all, or
    one class only in the labels (the truth's other classes are no twin's:
    :func:`worker_classes_only`)."""
    if data.n_labels == 0:
        raise InputError("has no labels", source=labels_file)
    used = np.bincount(data.labels, minlength=data.n_classes) > 0
    if np.count_nonzero(used) < 2:
        only = _class_name(data, int(np.argmax(used)))
        raise InputError(f"every label is class {only}: there is no crowd error to fit (a "
                         "twin's classes are the classes workers gave; give labels of at "
                         "least two classes)", source=labels_file)


def calibration_warnings(data: LabelSet, truth: np.ndarray | None, dropped: int = 0
                         ) -> list[str]:
    """One line per thing the fit cannot learn from ``data`` (after :func:`labelled_only`,
    which dropped ``dropped`` tasks only the truth named)."""
    notes: list[str] = []
    per_task = np.bincount(data.tasks, minlength=data.n_tasks)
    known = np.zeros(data.n_tasks, dtype=bool) if truth is None else truth >= 0
    if dropped:
        notes.append(f"the truth file names {dropped} task{'s' if dropped > 1 else ''} nobody "
                     "labelled; the twin has the labelled tasks only")
    if not known.any() and (data.n_workers == 1 or per_task.max() <= 1):
        why = "one worker" if data.n_workers == 1 else "one label per task"
        notes.append(f"{why} and no truth file: Dawid-Skene's posterior is the labels "
                     "themselves, so every worker looks always right and the twin's error "
                     "says nothing; give --truth")
    elif not known.any():
        notes.append("no truth file: the tasks' classes are Dawid-Skene's, so a task most "
                     "workers get wrong counts as right and the twin cannot share that error; "
                     "expect its error to be below the real one (see "
                     "docs/explanation/models/calibration/calibrate.md)")
    elif not known.all():
        notes.append(f"the truth covers {int(known.sum())} of {data.n_tasks} tasks; the other "
                     "tasks' classes come from Dawid-Skene's posterior")
        notes += judged_crowd_note(data, known)
    notes += unanimous_note(data, per_task, truth)
    counts = np.bincount(data.labels, minlength=data.n_classes)
    rare = np.flatnonzero((counts > 0) & (counts < RARE_CLASS * data.n_labels))
    if rare.size > MAX_RARE_NOTES:  # many: one line, not one per class
        shown = ", ".join(f"{_class_name(data, int(k))} {int(counts[k])}"
                          for k in rare[:MAX_RARE_NOTES])
        notes.append(f"{rare.size} of the {data.n_classes} classes are each under "
                     f"{100 * RARE_CLASS:g} % of the {data.n_labels} labels ({shown}, ...); "
                     f"the twin has {data.n_classes} classes, each worker a "
                     f"{data.n_classes} x {data.n_classes} confusion matrix (is the answer "
                     "column a number, a count or a score, rather than a class?)")
        rare = rare[:0]
    for k in rare:
        notes.append(f"class {_class_name(data, int(k))} is {int(counts[k])} of "
                     f"{data.n_labels} labels (under {100 * RARE_CLASS:g} %); the twin has "
                     f"{data.n_classes} classes (a stray value in a binary file?)")
    if data.n_tasks < FEW_TASKS:
        notes.append(f"only {data.n_tasks} labelled task{'s' if data.n_tasks > 1 else ''}: the "
                     "world chosen and the twin's error rest on very little")
    return notes


def judged_crowd_note(data: LabelSet, known: np.ndarray) -> list[str]:
    """The warning, if any, that the tasks with a truth (``known``, some of them) were
    labelled by another mix of workers than the file as a whole: the fewest busiest workers
    who give half of all labels give a share of those tasks' labels more than
    :data:`JUDGED_CROWD_Z` binomial standard errors off. A twin reproduces the crowd as a
    whole, and its design curve is judged on those tasks only, so it can miss them however
    true its world (AdultContent2: 26 workers give 50 % of the labels and 17 % of the gold
    tasks'; they answer G to almost everything)."""
    per_worker = np.bincount(data.workers, minlength=data.n_workers)
    order = np.argsort(-per_worker, kind="stable")
    cumulative = np.cumsum(per_worker[order])
    busiest = int(np.searchsorted(cumulative, cumulative[-1] / 2)) + 1
    heavy = np.zeros(data.n_workers, dtype=bool)
    heavy[order[:busiest]] = True
    overall = float(cumulative[busiest - 1] / cumulative[-1])
    judged = known[data.tasks]
    on_judged = float(np.mean(heavy[data.workers[judged]]))
    se = np.sqrt(overall * (1.0 - overall) / int(judged.sum()))
    if overall >= 1.0 or abs(on_judged - overall) <= JUDGED_CROWD_Z * se:
        return []
    return [f"the tasks with a truth were labelled by another mix of workers than the rest: "
            f"the {busiest} busiest workers give {100 * overall:.0f} % of all labels and "
            f"{100 * on_judged:.0f} % of those tasks'; the twin reproduces the crowd as a "
            "whole and is judged on those tasks only, so its design curve may miss them "
            "however true its world (docs/explanation/models/calibration/partial-truth.md)"]


def unanimous_note(data: LabelSet, per_task: np.ndarray, truth: np.ndarray | None
                   ) -> list[str]:
    """The warning, if any, that every task with two labels or more (at least
    :data:`FEW_TASKS` of them) got one class from all its workers and yet the truth differs
    on some: the file shows no disagreement, as if each task's answer had been copied to
    every worker who saw it (HITspam's CrowdFlower file: 5,380 tasks of 2 to 45 labels, each
    unanimous, 34 of the 100 with a truth wrong). A twin reproduces such errors only as
    look-alike tasks, which every worker sees as another class: the file cannot tell those
    from copied answers, and the twin's workers still disagree now and then."""
    several = per_task >= 2
    if truth is None or int(several.sum()) < FEW_TASKS:
        return []
    pairs = np.unique(data.tasks.astype(np.int64) * data.n_classes + data.labels)
    classes_per_task = np.bincount(pairs // data.n_classes, minlength=data.n_tasks)
    if bool((classes_per_task[several] > 1).any()):
        return []
    answer = np.full(data.n_tasks, -1)
    answer[pairs // data.n_classes] = pairs % data.n_classes
    judged = several & (truth >= 0)
    wrong = int(np.sum(answer[judged] != truth[judged]))
    if not wrong:
        return []
    return [f"all {int(several.sum())} tasks with two labels or more got one class from "
            f"every worker, and {wrong} of the {int(judged.sum())} with a truth are wrong: "
            "the file shows no disagreement between workers (were each task's answers "
            "copied to all its workers?); the twin makes those errors look-alike tasks, "
            "which every worker sees as another class"]
