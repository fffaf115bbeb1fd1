"""The classifier kind of machine annotator (issue #41, acceptance bullet 1): the same answer
when asked again at temperature 0, a within-task correlation above it, errors by the humans'
task difficulty and their correlation with it, the confidence's reliability curve, and the
errors a family shares. Statistical checks use large vectorised draws (milliseconds) and
tolerances of several binomial standard errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, logit, ndtr, ndtri
from scipy.stats import multivariate_normal

from marketsim.machines.classifier import Classifier, ClassifierOptions
from marketsim.machines.panel import draw_panel, normal_scores

N = 40_000


def machine(**options: object) -> Classifier:
    return Classifier(ClassifierOptions(name=str(options.pop("name", "m")), **options))


def tasks_of(k: int, n: int = N, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, k, size=n)


def binomial_tol(p: float, n: int, sds: float = 4.5) -> float:
    return sds * np.sqrt(max(p * (1 - p), 1e-4) / n)


@settings(max_examples=25, deadline=None)
@given(accuracy=st.floats(0.3, 0.99), rho=st.floats(-1, 1), shared=st.floats(0, 1),
       insight=st.floats(0.05, 0.95), overconfidence=st.floats(-0.9, 5),
       k=st.integers(2, 6), seed=st.integers(0, 2**32 - 1))
def test_same_answer_and_confidence_when_asked_again_at_temperature_zero(
        accuracy: float, rho: float, shared: float, insight: float, overconfidence: float,
        k: int, seed: int) -> None:
    machines = [machine(name="a", accuracy=accuracy, rho=rho, family="f", shared=shared,
                        insight=insight, overconfidence=overconfidence)]
    truth = tasks_of(k, 300, seed)
    human = np.random.default_rng(seed).standard_normal(300)
    panel = draw_panel(machines, truth, k, human, np.random.default_rng(seed))
    labels, conf = panel.ask(0, np.arange(300))
    again = np.random.default_rng(seed + 1).permutation(np.repeat(np.arange(300), 2))
    labels2, conf2 = panel.ask(0, again)
    assert np.array_equal(labels2, labels[again]) and np.array_equal(conf2, conf[again])
    assert ((conf >= 0) & (conf <= 1)).all() and ((labels >= 0) & (labels < k)).all()


def test_a_new_draw_per_call_above_temperature_zero_with_the_within_task_correlation() -> None:
    tau, accuracy = 0.4, 0.8
    panel = draw_panel([machine(accuracy=accuracy, temperature=tau)], tasks_of(2), 2, None,
                       np.random.default_rng(1))
    tasks = np.arange(N)
    first, _ = panel.ask(0, tasks)
    second, _ = panel.ask(0, tasks)
    truth = panel.known[0].truth
    right1, right2 = first == truth, second == truth
    c = ndtri(accuracy)
    both = multivariate_normal(mean=[0, 0], cov=[[1, 1 - tau], [1 - tau, 1]]).cdf([c, c])
    assert abs(right1.mean() - accuracy) < binomial_tol(accuracy, N)
    assert abs((right1 & right2).mean() - both) < binomial_tol(both, N)
    assert (right1 != right2).any()  # not the same answer every time


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, -0.6])
def test_errors_by_human_difficulty_follow_rho(rho: float) -> None:
    accuracy = 0.8
    z = np.random.default_rng(2).standard_normal(N)
    # the humans' difficulty on any monotone scale (here GLAD's -log beta with beta = e^-z)
    panel = draw_panel([machine(accuracy=accuracy, rho=rho)], tasks_of(3), 3, np.exp(z) * 3,
                       np.random.default_rng(3))
    labels, _ = panel.ask(0, np.arange(N))
    wrong = labels != panel.known[0].truth
    scores = normal_scores(np.exp(z) * 3)
    assert scores is not None
    c = ndtri(accuracy)
    p_wrong = 1 - ndtr((c - rho * scores) / np.sqrt(max(1 - rho ** 2, 1e-12)))
    bins = np.quantile(scores, [0, 0.25, 0.5, 0.75, 1.0])
    which = np.clip(np.searchsorted(bins, scores, side="right") - 1, 0, 3)
    for b in range(4):
        inside = which == b
        expected = p_wrong[inside].mean()
        assert abs(wrong[inside].mean() - expected) < binomial_tol(expected, int(inside.sum()))
    # the correlation of errors with the humans' difficulty: E[z·1{wrong}] = ρ φ(c)
    expected_cov = rho * np.exp(-c ** 2 / 2) / np.sqrt(2 * np.pi)
    assert abs(np.mean(scores * wrong) - expected_cov) < 4.5 * np.std(scores * wrong) / np.sqrt(N)
    assert abs(np.corrcoef(panel.known[0].hardness, scores)[0, 1] - rho) < 0.02


def expected_calibration_error(conf: np.ndarray, right: np.ndarray, bins: int = 10
                               ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """ECE over equal-width bins, and each bin's mean confidence, accuracy and count."""
    which = np.minimum((conf * bins).astype(int), bins - 1)
    count = np.bincount(which, minlength=bins)
    mean_conf = np.bincount(which, conf, bins) / np.maximum(count, 1)
    accuracy = np.bincount(which, right.astype(float), bins) / np.maximum(count, 1)
    return float(np.sum(count * np.abs(mean_conf - accuracy)) / conf.size), mean_conf, \
        accuracy, count


@pytest.mark.parametrize("insight", [0.3, 0.7, 0.95])
def test_calibrated_confidence_has_a_small_expected_calibration_error(insight: float) -> None:
    panel = draw_panel([machine(accuracy=0.75, insight=insight)], tasks_of(2), 2, None,
                       np.random.default_rng(4))
    labels, conf = panel.ask(0, np.arange(N))
    ece, *_ = expected_calibration_error(conf, labels == panel.known[0].truth)
    assert ece < 0.015
    assert abs(conf.mean() - 0.75) < 0.01  # confident as often as it is right


def test_overconfidence_sharpens_confidence_along_the_documented_reliability_curve() -> None:
    o = 1.5
    calibrated = draw_panel([machine(accuracy=0.75)], tasks_of(2), 2, None,
                            np.random.default_rng(5))
    sharp = draw_panel([machine(accuracy=0.75, overconfidence=o)], tasks_of(2), 2, None,
                       np.random.default_rng(5))
    labels, q = calibrated.ask(0, np.arange(N))
    labels_o, c = sharp.ask(0, np.arange(N))
    assert np.array_equal(labels, labels_o)
    np.testing.assert_allclose(c, expit((1 + o) * logit(q)), rtol=1e-9, atol=1e-12)
    right = labels_o == sharp.known[0].truth
    ece_cal, *_ = expected_calibration_error(q, right)
    ece, mean_conf, accuracy, count = expected_calibration_error(c, right)
    assert ece > 3 * ece_cal + 0.05
    # the reliability curve: accuracy at reported confidence c is expit(logit(c) / (1 + o))
    which = np.minimum((c * 10).astype(int), 9)
    predicted = np.bincount(which, expit(logit(np.clip(c, 1e-12, 1 - 1e-12)) / (1 + o)), 10)
    predicted /= np.maximum(count, 1)
    for b in np.flatnonzero(count > 500):
        assert abs(accuracy[b] - predicted[b]) < binomial_tol(predicted[b], int(count[b]))


def test_a_family_shares_errors_and_wrong_classes_independent_machines_do_not() -> None:
    k = 4
    family = [machine(name="a", accuracy=0.7, family="f", shared=0.8),
              machine(name="b", accuracy=0.7, family="f", shared=0.8)]
    apart = [machine(name="a", accuracy=0.7), machine(name="b", accuracy=0.7)]
    truth = tasks_of(k)
    rates = []
    for machines in (family, apart):
        panel = draw_panel(machines, truth, k, None, np.random.default_rng(6))
        (la, _), (lb, _) = panel.ask(0, np.arange(N)), panel.ask(1, np.arange(N))
        both = (la != truth) & (lb != truth)
        rates.append((both.mean(), (la == lb)[both].mean()))
    (fam_both, fam_same), (ind_both, ind_same) = rates
    assert abs(ind_both - 0.09) < binomial_tol(0.09, N)  # independent: 0.3 × 0.3
    assert fam_both > ind_both + 0.05  # correlated latent hardness
    assert abs(ind_same - 1 / 3) < 0.03 and fam_same > 0.75  # the family's wrong class


def test_a_confusion_matrix_sets_accuracy_per_class_and_the_wrong_classes() -> None:
    rows = ((0.9, 0.08, 0.02), (0.1, 0.6, 0.3), (0.0, 0.5, 0.5))
    panel = draw_panel([machine(confusion=rows)], tasks_of(3), 3, None, np.random.default_rng(7))
    labels, _ = panel.ask(0, np.arange(N))
    truth = panel.known[0].truth
    for c in range(3):
        answered = np.bincount(labels[truth == c], minlength=3) / np.sum(truth == c)
        for answer in range(3):
            assert abs(answered[answer] - rows[c][answer]) < binomial_tol(rows[c][answer],
                                                                          int(np.sum(truth == c)))


def test_adding_a_machine_leaves_the_others_answers_unchanged() -> None:
    truth = tasks_of(2, 500)
    one = draw_panel([machine(name="a")], truth, 2, None, np.random.default_rng(8))
    two = draw_panel([machine(name="a"), machine(name="b", family="x")], truth, 2, None,
                     np.random.default_rng(8))
    assert np.array_equal(one.ask(0, np.arange(500))[0], two.ask(0, np.arange(500))[0])
