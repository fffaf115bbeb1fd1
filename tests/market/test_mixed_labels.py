"""A market's two halves joined (issue #41): the humans' label log and its machine
annotators' answers as one label set with sources and confidence, read by ``ds-confidence``
as it reads a mixed label file: each machine's accuracy per confidence bin learnt from the
humans, within binomial tolerance of how often it really was right there, and a model's
repeats at temperature 0 counted once."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from marketsim.aggregation.confidence_ds import ConfidenceDS, confidence_bins
from marketsim.aggregation.model_repeats import count_model_answers_once
from marketsim.data.labels import LabelSet
from marketsim.data.mixed_labels import with_machine_labels
from marketsim.data.sources import HUMAN
from marketsim.machines.classifier import Classifier, ClassifierOptions
from marketsim.machines.panel import draw_panel
from marketsim.market.label_log import LabelLog
from marketsim.market.ledger import Ledger
from marketsim.market.machine_calls import MachineCalls

N_TASKS, N_HUMANS, HUMANS_PER_TASK, N_BINS = 800, 30, 5, 4
MACHINES = ({"accuracy": 0.8}, {"accuracy": 0.7, "overconfidence": 3.0}, {"accuracy": 0.9})


def tiny_market(repeat: bool) -> tuple[LabelSet, np.ndarray]:
    """A market's label log of humans (accuracy 0.7 to 0.9, five a task) and three machines
    asked about every task through the call service (twice each with ``repeat``), joined;
    and the truth."""
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 2, N_TASKS)
    tasks = np.repeat(np.arange(N_TASKS), HUMANS_PER_TASK)
    workers = np.concatenate([rng.choice(N_HUMANS, HUMANS_PER_TASK, replace=False)
                              for _ in range(N_TASKS)])
    skill = rng.uniform(0.7, 0.9, N_HUMANS)
    right = rng.random(tasks.size) < skill[workers]
    log = LabelLog(N_TASKS, N_HUMANS, 2, capacity=tasks.size)
    log.extend(tasks, workers, np.where(right, truth[tasks], 1 - truth[tasks]))
    env = simpy.Environment()
    ledger = Ledger(np.ones(N_HUMANS), edges=100_000, money=None, capacity=None)
    annotators = [Classifier(ClassifierOptions(name=f"m{i}", price=0.01, **o))
                  for i, o in enumerate(MACHINES)]
    panel = draw_panel(annotators, truth, 2, None, np.random.default_rng(3))
    calls = MachineCalls(env, panel, ledger, first_id=N_HUMANS)
    for m in range(len(MACHINES)):
        for _ in range(2 if repeat else 1):
            calls.ask(m, np.arange(N_TASKS))
    env.run()
    calls.check_books("the end")
    return calls.mixed_labels(log.view()), truth


def test_the_join_carries_sources_confidence_and_every_label() -> None:
    mixed, _ = tiny_market(repeat=False)
    assert mixed.n_workers == N_HUMANS + len(MACHINES)
    assert mixed.sources == (HUMAN,) * N_HUMANS + ("m0", "m1", "m2")
    assert mixed.n_labels == N_TASKS * (HUMANS_PER_TASK + len(MACHINES))
    assert mixed.confidence is not None
    human = mixed.workers < N_HUMANS
    assert np.isnan(mixed.confidence[human]).all()
    assert np.isfinite(mixed.confidence[~human]).all()


def test_ds_confidence_learns_each_machines_accuracy_per_confidence_bin() -> None:
    mixed, truth = tiny_market(repeat=False)
    fit = ConfidenceDS(n_bins=N_BINS).fit(mixed)
    assert fit.models_ == ("m0", "m1", "m2")
    machine = mixed.workers >= N_HUMANS
    model = mixed.workers[machine] - N_HUMANS
    conf = mixed.confidence[machine]  # type: ignore[index]
    bins = confidence_bins(model, conf, len(MACHINES), N_BINS, "quantile")
    right = mixed.labels[machine] == truth[mixed.tasks[machine]]
    n = np.bincount(model * (N_BINS + 1) + bins, minlength=len(MACHINES) * (N_BINS + 1))
    hits = np.bincount(model * (N_BINS + 1) + bins, weights=right, minlength=n.size)
    n, hits = n.reshape(-1, N_BINS + 1)[:, :N_BINS], hits.reshape(-1, N_BINS + 1)[:, :N_BINS]
    assert (fit.bin_labels_[:, :N_BINS] == n).all()
    real = hits / n
    tolerance = 3 * np.sqrt(np.maximum(real * (1 - real), 0.01) / n)
    assert np.all(np.abs(fit.bin_accuracy_[:, :N_BINS] - real) < tolerance)
    # the over-confident machine states far more than it gets right in some bin; the fit
    # follows what it gets right there, not what it states
    stated = np.bincount(bins[model == 1], weights=conf[model == 1], minlength=N_BINS + 1)
    stated = stated[:N_BINS] / n[1]
    worst = int(np.argmax(stated - real[1]))
    assert stated[worst] - real[1, worst] > 0.2 > tolerance[1, worst]

def test_a_machines_repeats_at_temperature_zero_count_once() -> None:
    once, _ = tiny_market(repeat=False)
    twice, _ = tiny_market(repeat=True)
    assert twice.n_labels == once.n_labels + N_TASKS * len(MACHINES)
    deduped, dropped = count_model_answers_once(twice)
    assert dropped == N_TASKS * len(MACHINES)
    assert deduped.n_labels == once.n_labels
    np.testing.assert_array_equal(deduped.labels, once.labels)
    fit_once = ConfidenceDS(n_bins=N_BINS).fit(once)
    fit_twice = ConfidenceDS(n_bins=N_BINS).fit(twice)
    np.testing.assert_array_equal(fit_twice.bin_labels_, fit_once.bin_labels_)
    np.testing.assert_allclose(fit_twice.proba_, fit_once.proba_)


def test_a_machine_answer_outside_the_machines_is_refused() -> None:
    humans = LabelSet.from_arrays([0, 1], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="machines after the humans"):
        with_machine_labels(humans, np.array([0]), np.array([1]), np.array([0]),
                            np.array([0.9]), ("gpt",))
    joined = with_machine_labels(humans, np.array([0]), np.array([2]), np.array([0]),
                                 np.array([0.9]), ("gpt",))
    assert joined.sources == (HUMAN, HUMAN, "gpt") and joined.has_models
