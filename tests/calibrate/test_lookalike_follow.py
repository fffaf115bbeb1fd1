"""Look-alike tasks whose errors are partly shared (``aggregation/lookalike_follow``): a
look-alike world whose every label follows the class a task looks like makes a task's errors
all shared, so its workers agree more than a real crowd's (Face's twin: 79 % of label pairs on
a task against 65 %, issue #40); each label following it with a probability fitted to the
file's agreement rate, the world keeps its labels' accuracy and agrees as the file does."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from marketsim.aggregation.accuracy_restored import label_table, world_table
from marketsim.aggregation.ambiguity_share import majority_wrong, pairs_share
from marketsim.aggregation.confusion_fit import ConfusionFit, world_log_likelihood
from marketsim.aggregation.curve_difficulty import SUFFIX as DIFFICULTY
from marketsim.aggregation.curve_difficulty import curve_worlds
from marketsim.aggregation.design_curve import real_curve
from marketsim.aggregation.lookalike_follow import (
    SUFFIX,
    expected_agreement,
    fitted_follow,
    follow_log_likelihood,
    follow_world,
    following,
    min_follow,
    pair_agreement,
    widened,
)
from marketsim.aggregation.world_replay import world_labels
from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.scenario.calibration import check_text
from tests.calibrate._lookalike_crowds import N_WORKERS, lookalike_crowd, lookalike_world

#: Three classes: 40 % of class-0 tasks look like class 1 in the labels, 30 % of class 2 like 1.
MARGINAL = np.array([[0.60, 0.40, 0.00],
                     [0.00, 1.00, 0.00],
                     [0.00, 0.30, 0.70]])


def world(follow: float = 1.0) -> ConfusionFit:
    """Workers right on 85 % of what they answer from (half a little better, half a little
    worse) whose labels follow the look-alike with probability ``follow``, the labels'
    look-alike mass :data:`MARGINAL` whatever ``follow``."""
    marginal = lookalike_world(0.85, MARGINAL)
    return following(marginal, follow) if follow < 1.0 else marginal


def crowd(true_world: ConfusionFit, seed: int = 0, n_tasks: int = 1500, per_task: int = 7
          ) -> tuple[LabelSet, np.ndarray]:
    """Labels of ``true_world`` on random pairs, and the truth as one-hot weights."""
    return lookalike_crowd(true_world, seed, n_tasks, per_task)


def test_the_expected_agreement_is_the_agreement_of_the_worlds_labels() -> None:
    data, weights = crowd(world(0.6), n_tasks=400)
    truth = weights.argmax(axis=1)
    rng = np.random.default_rng(5)
    for follow in (1.0, 0.6):
        w = world(follow)
        drawn = np.mean([pair_agreement(replace(data, labels=world_labels(
            w, data.tasks, data.workers, truth, rng))) for _ in range(100)])
        assert expected_agreement(w, w.lookalike, follow, data, weights) == pytest.approx(
            drawn, abs=0.003)


def test_following_less_keeps_the_labels_accuracy_and_shares_fewer_errors() -> None:
    all_shared, partly = world(), world(0.5)
    assert partly.follow == 0.5 and min_follow(MARGINAL) == pytest.approx(0.4)
    assert np.allclose(widened(MARGINAL, 0.4)[0], [0.0, 1.0, 0.0])  # the smallest f: a row full
    data, weights = crowd(partly)
    share = np.bincount(data.workers, minlength=N_WORKERS) / data.n_labels
    # the labels against the classes are the marginal world's, f M[s] + (1 - f) M[c] mixed
    assert np.allclose(label_table(data, weights), world_table(all_shared, share), atol=0.02)
    agree = [expected_agreement(w, w.lookalike, w.follow, data, weights)
             for w in (all_shared, partly)]
    assert agree[0] > agree[1] + 0.02


def test_the_follow_is_fitted_to_the_files_agreement_rate() -> None:
    data, weights = crowd(world(0.55))
    real = pair_agreement(data)
    f = fitted_follow(world(), real, data, weights)
    assert f == pytest.approx(0.55, abs=0.05)
    # a file that agrees as much as the world or more: no candidate
    assert fitted_follow(world(), real + 0.2, data, weights) is None


def test_the_log_likelihood_prefers_the_follow_the_labels_were_drawn_with() -> None:
    data, weights = crowd(world(0.5))
    args = (data.tasks, data.workers, data.labels, weights)
    assert follow_log_likelihood(world(), data, weights) == pytest.approx(
        world_log_likelihood(world(), *args))
    assert follow_log_likelihood(world(0.5), data, weights) > \
        follow_log_likelihood(world(), data, weights) + 10


def test_a_world_too_shared_gets_the_files_agreement_and_majority_profile() -> None:
    """Fitted as every label following (the look-alike mass of the labels right), the world
    agrees more than a crowd whose labels follow half the time; with ``f`` and the mass
    fitted it has the file's agreement, share of majority-wrong tasks and label table."""
    data, weights = crowd(world(0.5), n_tasks=2000)
    truth = weights.argmax(axis=1)
    judged = np.ones(data.n_tasks, dtype=bool)
    real_wrong = majority_wrong(data, data.labels, truth, judged)
    share_of = pairs_share(data, truth, judged)
    fitted = world()
    fit = replace(fitted, log_likelihood=world_log_likelihood(
        fitted, data.tasks, data.workers, data.labels, weights))
    real = pair_agreement(data)
    assert expected_agreement(fit, fit.lookalike, 1.0, data, weights) > real + 0.02
    partly = follow_world(fit, real, real_wrong, share_of, data, weights)
    assert partly is not None and partly.name == fit.name + SUFFIX and partly.on_curve
    assert partly.follow < 0.8 and partly.n_params == fit.n_params + 1
    assert expected_agreement(partly, partly.lookalike, partly.follow, data, weights) == \
        pytest.approx(real, abs=0.01)
    assert share_of(partly) == pytest.approx(real_wrong, abs=0.02)
    share = np.bincount(data.workers, minlength=N_WORKERS) / data.n_labels
    labels = replace(partly, lookalike=np.eye(3) + partly.follow * (partly.lookalike
                                                                    - np.eye(3)))
    assert np.allclose(world_table(labels, share), label_table(data, weights), atol=0.02)
    assert partly.log_likelihood > fit.log_likelihood


SCENARIO = """
[scenario]
name = "follow"
seed = 1
replicates = 1
[tasks]
count = 400
classes = 2
[workers]
count = 20
model = "confusion"
[workers.confusion]
design = "per-worker"
lookalike = [[0.6, 0.4], [0.0, 1.0]]
{follow}
matrices = [{rows}]
[budget]
edges = 4000
initial = "one-per-task"
[[arms]]
name = "uniform"
policy = "uniform"
inference = "mv"
"""


def test_a_scenario_reads_lookalike_follow_only_with_lookalike() -> None:
    rows = ", ".join(["[[0.9, 0.1], [0.1, 0.9]]"] * 20)
    scenario = check_text(SCENARIO.format(follow="lookalike_follow = 0.5", rows=rows), "<test>")
    assert scenario.workers.options.lookalike_follow == 0.5
    assert "follows the class the task looks like with probability 50" in \
        scenario.workers.options.words()
    no_look = SCENARIO.replace("lookalike = [[0.6, 0.4], [0.0, 1.0]]\n", "")
    with pytest.raises(InputError, match="lookalike_follow"):
        check_text(no_look.format(follow="lookalike_follow = 0.5", rows=rows), "<test>")


def test_a_following_world_gets_the_tasks_difficulty_its_crowd_was_drawn_with() -> None:
    """CF_amt (issue #40): a world whose labels follow the look-alike put its tasks'
    accuracies in two heaps where the real crowd's spread between them; its difficulty is
    sized on the design curve, and its likelihood is of labels that follow, with difficulty."""
    data, weights = crowd(replace(world(0.5), sigma=1.0), seed=5)
    truth = weights.argmax(axis=1)
    real = real_curve(data, truth, draws=3, ks=(2, 3))
    flat = replace(world(0.5), log_likelihood=follow_log_likelihood(world(0.5), data, weights))
    (spread,) = curve_worlds((flat,), data, truth, np.ones(data.n_tasks, bool), real, weights)
    assert spread.follow == flat.follow and 0.75 <= spread.sigma <= 1.5
    assert spread.name.endswith(DIFFICULTY) and spread.n_params == flat.n_params + 1
    assert spread.log_likelihood == pytest.approx(follow_log_likelihood(spread, data, weights))
    assert spread.log_likelihood > flat.log_likelihood + 10


def test_the_likelihood_of_following_labels_tempers_each_row_by_the_tasks_difficulty() -> None:
    data, weights = crowd(replace(world(0.5), sigma=1.0), seed=6, n_tasks=600)
    args = (data.tasks, data.workers, data.labels, weights)
    drawn = replace(world(0.5), sigma=1.0)
    assert follow_log_likelihood(drawn, data, weights) > \
        follow_log_likelihood(world(0.5), data, weights) + 10
    every = replace(world(), sigma=1.0)  # every label following: the look-alike world's own
    assert follow_log_likelihood(every, data, weights) == pytest.approx(
        world_log_likelihood(every, *args))
