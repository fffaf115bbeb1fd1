"""M-MSR on a crowd in several connected parts (#38 item 14): each part is estimated and
oriented on its own, and a worker the data say nothing about votes as a neutral worker."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from marketsim.aggregation import MMSR
from marketsim.data.labels import LabelSet


def main_crowd(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fifty binary tasks, seven workers right 60-90 % of the time."""
    rng = np.random.default_rng(seed)
    n, m = 50, 7
    truth = rng.integers(0, 2, n)
    skill = rng.uniform(0.6, 0.9, m)
    t, w = np.nonzero(rng.random((n, m)) < 0.6)
    labels = np.where(rng.random(t.size) < skill[w], truth[t], 1 - truth[t])
    return t, w, labels, truth


def fit(data: LabelSet) -> MMSR:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MMSR().fit(data)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_two_workers_elsewhere_change_nothing_on_the_main_crowd(seed: int) -> None:
    """Two workers who agree on three tasks of their own: the main crowd's answers stay
    as they were (one global eigenvector made whole groups adversarial: 0.18 -> 0.86)."""
    t, w, labels, truth = main_crowd(seed)
    n, m = truth.size, 7
    alone = fit(LabelSet(t, w, labels, n, m, 2))
    extra = np.array([1, 0, 1])
    more = fit(LabelSet(np.r_[t, n + np.arange(3), n + np.arange(3)],
                        np.r_[w, [m] * 3, [m + 1] * 3], np.r_[labels, extra, extra],
                        n + 3, m + 2, 2))
    np.testing.assert_array_equal(more.labels_[:n], alone.labels_)
    np.testing.assert_allclose(more.skill_[:m], alone.skill_, rtol=1e-9)
    assert np.all(more.skill_[m:] > 0.5)  # they agree: better than chance, not adversaries
    assert more.labels_[n:].tolist() == extra.tolist()


@pytest.mark.parametrize("label", [0, 1])
def test_a_lone_worker_is_neutral_and_decides_their_own_task(label: int) -> None:
    """A worker who shares no task gets a small positive weight, not 0: their task takes
    their answer, whichever way the classes are spelled."""
    t, w, labels, truth = main_crowd(5)
    n, m = truth.size, 7
    est = fit(LabelSet(np.r_[t, n], np.r_[w, m], np.r_[labels, label], n + 1, m + 1, 2))
    assert est.skills_[m] > 0
    assert est.labels_[n] == label


def test_a_part_with_no_information_votes_by_majority() -> None:
    """Two workers who agree on exactly half of their common tasks (C = 0): nothing says
    who is right; both are neutral and each task goes by its own votes and the tie rule."""
    t, w, labels, truth = main_crowd(6)
    n, m = truth.size, 7
    add_t = n + np.array([0, 0, 1, 1, 2])
    add_w = m + np.array([0, 1, 0, 1, 1])
    add_l = np.array([1, 1, 1, 0, 1])
    est = fit(LabelSet(np.r_[t, add_t], np.r_[w, add_w], np.r_[labels, add_l], n + 3, m + 2,
                       2))
    assert np.all(est.skills_[m:] > 0)
    assert est.labels_[n] == 1 and est.labels_[n + 2] == 1
