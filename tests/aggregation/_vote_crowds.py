"""Planted crowds and the RTE data for the weighted-vote tests (Wawa, ZeroBasedSkill, M-MSR)."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.data.datasets import find_data_dir
from marketsim.data.labels import LabelSet
from marketsim.errors import InputError


def planted(accuracy: list[float], n_tasks: int, k: int, seed: int,
            density: float = 1.0) -> tuple[LabelSet, np.ndarray]:
    """One-coin crowd with known truth: worker j is right with ``accuracy[j]``, else a uniform
    wrong class; each (task, worker) pair is observed with ``density``."""
    rng = np.random.default_rng(seed)
    acc = np.asarray(accuracy)
    truth = rng.integers(0, k, n_tasks)
    t, w = np.nonzero(rng.random((n_tasks, acc.size)) < density)
    wrong = (truth[t] + rng.integers(1, k, t.size)) % k
    labels = np.where(rng.random(t.size) < acc[w], truth[t], wrong)
    return LabelSet(t, w, labels, n_tasks, acc.size, k), truth


def rte() -> tuple[object, object]:
    """RTE (Snow et al. 2008, as in Zhang et al. 2014; ``<data>/zhang2014``) as a DataFrame
    and a truth Series; skips when the data are absent."""
    pd = pytest.importorskip("pandas")
    try:  # $MARKETSIM_DATA, else the shared data folder beside the repository
        folder = find_data_dir() / "zhang2014"
    except InputError:
        pytest.skip("no reference data folder")
    crowd_file, truth_file = folder / "rte_crowd.txt", folder / "rte_truth.txt"
    if not crowd_file.exists() or not truth_file.exists():
        pytest.skip("RTE data absent")
    crowd = np.loadtxt(crowd_file, dtype=np.int64, ndmin=2)
    truth = np.loadtxt(truth_file, dtype=np.int64, ndmin=2)
    df = pd.DataFrame({"task": crowd[:, 0], "worker": crowd[:, 1], "label": crowd[:, 2]})
    return df, pd.Series(truth[:, 1], index=truth[:, 0]).groupby(level=0).first()


def accuracy(pred: object, truth: object) -> float:
    """Accuracy (%) of a predicted Series on the tasks with a known truth."""
    common = truth.index.intersection(pred.index)  # type: ignore[attr-defined]
    return 100.0 * float((pred.loc[common] == truth.loc[common]).mean())  # type: ignore[attr-defined]


def rank_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (no ties expected)."""
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])
