"""How well a truth file matches a label file: which labelled tasks it covers.

A truth file of another data set, or with ids shifted by one, matches the labels' tasks only
by accident; an error rate over those few tasks means nothing. :func:`check_truth_coverage`
refuses a truth file that covers none of the labelled tasks and measures the coverage
otherwise, for ``infer`` (which warns when it is partial) and the replay scenario.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.errors import InputError


@dataclass(frozen=True)
class TruthCoverage:
    """Coverage of the labelled tasks by a truth file.

    Attributes
    ----------
    covered : labelled tasks (at least one label row) that have a truth.
    total : labelled tasks.
    truth_only : tasks with a truth but no label row (truth for tasks nobody labelled).
    """

    covered: int
    total: int
    truth_only: int

    @property
    def fraction(self) -> float:
        """``covered / total`` (1.0 when there is no labelled task)."""
        return self.covered / self.total if self.total else 1.0

    @property
    def complete(self) -> bool:
        """Whether every labelled task has a truth."""
        return self.covered == self.total

    def as_dict(self) -> dict[str, int | float]:
        """JSON-ready: ``covered``, ``total``, ``fraction``, ``truth_only``."""
        return {"covered": self.covered, "total": self.total,
                "fraction": round(self.fraction, 6), "truth_only": self.truth_only}

    def warning(self, truth_file: str, metric: str = "error rate",
                over: int | None = None) -> str | None:
        """One line saying the coverage is partial, or None when it is complete.

        ``over`` is the number of tasks ``metric`` is computed over (default: every task
        with a truth, labelled or not).
        """
        if self.complete:
            return None
        extra = ""
        if self.truth_only:
            extra = (f", and has truth for {self.truth_only} task"
                     f"{'' if self.truth_only == 1 else 's'} nobody labelled")
        n = self.covered + self.truth_only if over is None else over
        return (f"{truth_file} covers {self.covered} of {self.total} tasks "
                f"({100 * self.fraction:.1f} %){extra}; the {metric} is over those "
                f"{n} task{'' if n == 1 else 's'} only")


def truth_coverage(data: LabelSet, truth: np.ndarray) -> TruthCoverage:
    """Coverage of ``data``'s labelled tasks by ``truth`` (aligned with ``data``'s tasks:
    class index with -1 unknown, or true mean with NaN unknown)."""
    truth = np.asarray(truth)
    known = np.isfinite(truth) if truth.dtype.kind == "f" else truth >= 0
    labelled = np.bincount(data.tasks, minlength=data.n_tasks) > 0
    return TruthCoverage(
        covered=int(np.count_nonzero(known & labelled)),
        total=int(np.count_nonzero(labelled)),
        truth_only=int(np.count_nonzero(known & ~labelled)),
    )


def check_truth_coverage(
    data: LabelSet, truth: np.ndarray, *, truth_file: str, labels_file: str
) -> TruthCoverage:
    """The coverage of ``data``'s tasks by ``truth``; InputError (naming ``truth_file``) when
    the truth covers none of the labelled tasks (ids of another data set, or shifted)."""
    coverage = truth_coverage(data, truth)
    if coverage.covered == 0 and coverage.total > 0:
        hint = ""
        if coverage.truth_only:
            hint = (f" (its {coverage.truth_only} task id{'s' if coverage.truth_only > 1 else ''}"
                    " match no labelled task: is it the truth of another data set?)")
        raise InputError(
            f"covers none of the {coverage.total} tasks of {labels_file}{hint}",
            source=truth_file,
        )
    return coverage
