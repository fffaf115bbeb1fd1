"""A truth on some of the tasks, drawn by class (``aggregation/design_curve.judged_mix``): the
twin, whose tasks follow the crowd's prior, is judged on its tasks weighted to the gold
tasks' class mix, so that the same crowd reads the same error in the file and in its twin;
and a truth on tasks another part of the crowd labelled is said loudly
(``data/calibration_input.judged_crowd_note``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation.curve_choice import choose_on_curve, curve_lines
from marketsim.aggregation.design_curve import (
    References,
    errors,
    judged_mix,
    real_curve,
)
from marketsim.aggregation.metrics import stratified_mean
from marketsim.data.calibration_input import calibration_warnings
from marketsim.data.labels import LabelSet
from tests.calibrate._calibrated import calibrated

#: Each class's chance of a right label: class 1 is hard, class 0 easy.
RIGHT = np.array([0.9, 0.6])


def crowd(n_tasks: int, hard_share: float, seed: int, per_task: int = 5
          ) -> tuple[LabelSet, np.ndarray]:
    """Binary tasks, a ``hard_share`` of them of the hard class, each labelled by
    ``per_task`` distinct workers of 40, right with their class's chance."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_tasks) < hard_share).astype(np.int64)
    workers = np.argsort(rng.random((n_tasks, 40)), axis=1)[:, :per_task].ravel()
    tasks = np.repeat(np.arange(n_tasks), per_task)
    right = rng.random(tasks.size) < RIGHT[truth[tasks]]
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    return LabelSet(tasks, workers, labels, n_tasks, 40, 2), truth


def gold_by_class(truth: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """The truth kept on ``per_class`` tasks of each class, -1 elsewhere: a gold set drawn
    by class, as AdultContent2's is."""
    rng = np.random.default_rng(seed)
    gold = np.full(truth.size, -1)
    for c in (0, 1):
        keep = rng.choice(np.flatnonzero(truth == c), per_class, replace=False)
        gold[keep] = c
    return gold


def test_one_crowd_reads_one_error_in_its_file_and_in_a_twin_weighted_to_the_gold() -> None:
    data, truth = crowd(6000, 0.1, seed=0)
    real = real_curve(data, gold_by_class(truth, 300, seed=1), draws=2, ks=(3,))
    assert real.judged == 600 and real.mix is not None
    assert np.allclose(real.mix, (0.5, 0.5))
    twin, twin_truth = crowd(6000, 0.1, seed=2)  # the crowd itself, drawn again
    weighted = errors(twin, References(twin_truth, twin_truth, "truth", real.mix))
    plain = errors(twin, References(twin_truth, twin_truth, "truth"))
    expected = real.vote[-1]  # about (0.009 + 0.317) / 2 at five labels
    noise = np.sqrt(expected * (1 - expected) / 600)
    assert abs(weighted[0] - expected) < 4 * noise  # the same crowd, the same error
    assert expected - plain[0] > 0.1  # unweighted: 90 % easy tasks read a quarter of it
    assert abs(weighted[1] - real.ds[-1]) < 4 * noise


def test_a_truth_on_every_labelled_task_or_none_weights_nothing() -> None:
    data, truth = crowd(300, 0.3, seed=3)
    assert real_curve(data, truth, draws=2, ks=(3,)).mix is None
    assert real_curve(data, None, draws=2, ks=(3,)).mix is None
    partial = np.where(np.arange(300) < 100, truth, -1)
    refs = References.of(data, partial)
    mix = judged_mix(data, refs)
    assert mix is not None
    assert np.isclose(mix[1], np.mean(truth[:100] == 1))
    assert real_curve(data, partial, draws=2, ks=(3,)).judged == 100


def test_each_class_weighs_its_share_and_a_class_not_judged_drops_out() -> None:
    misses = np.array([1.0, 0.0, 0.0, 0.0, 1.0])
    classes = np.array([0, 0, 0, 0, 1])
    assert stratified_mean(misses, classes, None) == 0.4
    assert stratified_mean(misses, classes, (0.5, 0.5)) == 0.625  # 0.25 and 1.0 alike
    assert stratified_mean(misses[:4], classes[:4], (0.5, 0.5)) == 0.25  # class 1 absent


def test_the_printed_curve_says_the_twin_is_weighted_to_the_gold_mix() -> None:
    data, truth = crowd(2000, 0.1, seed=4)
    real = real_curve(data, gold_by_class(truth, 100, seed=5), draws=2, ks=(3,))
    choice = choose_on_curve(real, ("w",), (0,), (real,), real.judged)
    text = "\n".join(curve_lines(choice))
    assert "the truth covers 200 of the labelled tasks" in text
    assert "(50, 50 % by class)" in text


def test_a_gold_set_the_busiest_workers_left_alone_is_said_and_a_random_one_is_not() -> None:
    """Four busy workers give every label of tasks 100 on, others tasks 0-99 (AdultContent2:
    26 workers give half of all labels and a sixth of the gold tasks')."""
    rng = np.random.default_rng(6)
    n_tasks = 1000
    tasks = np.repeat(np.arange(n_tasks), 4)
    busy = np.tile(np.arange(4), n_tasks)
    others = np.argsort(rng.random((n_tasks, 40)), axis=1)[:, :4].ravel() + 4
    workers = np.where(tasks >= 100, busy, others)
    data = LabelSet(tasks, workers, rng.integers(0, 2, tasks.size), n_tasks, 44, 2)
    truth = rng.integers(0, 2, n_tasks)
    apart = np.where(np.arange(n_tasks) < 100, truth, -1)
    said = [w for w in calibration_warnings(data, apart)
            if "labelled by another mix of workers" in w]
    assert len(said) == 1 and "the 3 busiest workers give 68 % of all labels and 0 %" in said[0]
    mixed = np.where(rng.random(n_tasks) < 0.1, truth, -1)  # gold drawn at random
    assert not any("another mix" in w for w in calibration_warnings(data, mixed))


def test_a_file_whose_every_task_is_unanimous_and_yet_wrong_is_said() -> None:
    """HITspam's CrowdFlower file: every task's labels agree and 34 of the 100 tasks with a
    truth are wrong; no twin of independent workers reproduces that."""
    rng = np.random.default_rng(7)
    n_tasks = 60
    tasks = np.repeat(np.arange(n_tasks), 3)
    workers = np.tile(np.arange(3), n_tasks)
    truth = rng.integers(0, 2, n_tasks)
    answer = np.where(np.arange(n_tasks) < 20, 1 - truth, truth)  # 20 wrong, by all three
    copied = LabelSet(tasks, workers, answer[tasks], n_tasks, 3, 2)
    said = [w for w in calibration_warnings(copied, truth) if "one class from every" in w]
    assert len(said) == 1 and "20 of the 60 with a truth are wrong" in said[0]
    perfect = LabelSet(tasks, workers, truth[tasks], n_tasks, 3, 2)  # unanimous and right
    assert not any("one class from every" in w for w in calibration_warnings(perfect, truth))
    one_dissent = answer[tasks].copy()
    one_dissent[0] = 1 - one_dissent[0]
    split = LabelSet(tasks, workers, one_dissent, n_tasks, 3, 2)
    assert not any("one class from every" in w for w in calibration_warnings(split, truth))


@pytest.mark.slow
def test_a_crowd_that_shares_its_errors_gets_a_twin_as_wrong_as_its_gold(
        tmp_path: Path) -> None:
    """Workers nearly always right about the class a task looks like, and 30 % of the tasks
    looking like the other class: a unanimous-looking file whose errors only a truth shows
    (HITspam). With a truth on one task in 15 the twin's look-alikes are reached (the mass
    fitted against Dawid-Skene's answers elsewhere is a fifteenth of it) and its design curve
    is the gold's, within issue #40's 1.5 points; the fit table reads the gold."""
    rng = np.random.default_rng(3)
    n_tasks, n_workers, per_task = 1500, 30, 5
    truth = rng.integers(0, 2, n_tasks)
    seen = np.where(rng.random(n_tasks) < 0.3, 1 - truth, truth)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task].ravel()
    labels = np.where(rng.random(tasks.size) < 0.98, seen[tasks], 1 - seen[tasks])
    crowd, gold = tmp_path / "crowd.csv", tmp_path / "gold.csv"
    crowd.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{y}\n" for t, w, y in zip(tasks, workers, labels, strict=True)))
    kept = rng.choice(n_tasks, 100, replace=False)
    gold.write_text("task,label\n" + "".join(f"t{t},{truth[t]}\n" for t in kept))
    run = calibrated(crowd, tmp_path / "twin.toml", "--truth", str(gold), "--seed", "1")
    assert run.code == 0, run.stderr
    fit = json.loads((tmp_path / "twin.fit.json").read_text())
    curve = fit["design_curve"]
    assert curve["judged_tasks"] == 100
    for method in ("majority_vote_error", "dawid_skene_error"):
        real, twin = np.array(curve["real"][method]), np.array(curve["twin"][method])
        assert np.all(real > 0.2)  # the gold's error: the look-alikes, at every design
        assert np.max(np.abs(twin - real)) < 0.015 + 2 * np.sqrt(0.3 * 0.7 / 100 / 10), \
            (method, real, twin)
    rows = {r["statistic"]: r for r in fit["goodness_of_fit"]}
    shared = rows["tasks on which most labels are wrong (shared errors among those with a "
                  "truth, weighted to their class mix)"]
    assert abs(float(shared["real"]) - float(shared["simulated"])) < 0.1
