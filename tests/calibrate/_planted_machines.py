"""A synthetic mixed crowd with known parameters for ``calibrate``'s parameter recovery:
humans of per-worker confusion matrices with a task difficulty (the world ``calibrate`` fits:
``log beta ~ N(0, sigma^2)``, answers ``softmax(beta * log pi_j[c])``) and machine annotators
of the ``classifier`` kind answering every task through the machines component
(:func:`~marketsim.machines.panel.draw_panel`, following the humans' difficulty)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.special import log_softmax

from marketsim.aggregation.confusion_fit import counted_confusion, fit_confusion_world
from marketsim.aggregation.registry import make_estimator
from marketsim.cli.calibrate_models import fit_models
from marketsim.data.labels import LabelSet
from marketsim.data.mixed_labels import split_sources, with_machine_labels
from marketsim.machines.classifier import Classifier, ClassifierOptions
from marketsim.machines.panel import draw_panel
from marketsim.scenario.calibration import Calibration, labels_per_task

#: The planted models: different accuracy, rho, insight and overconfidence.
MODELS = ({"name": "big", "accuracy": 0.9, "rho": 0.6, "insight": 0.7, "overconfidence": 1.0},
          {"name": "small", "accuracy": 0.75, "rho": 0.2, "insight": 0.5,
           "overconfidence": 0.0},
          {"name": "odd", "accuracy": 0.82, "rho": -0.3, "insight": 0.8,
           "overconfidence": 2.0})
#: The humans' task difficulty (sd of log beta), workers and labels per task.
SIGMA, N_HUMANS, PER_TASK = 1.0, 40, 8


def planted_crowd(seed: int, n_tasks: int, models: tuple[dict, ...] = MODELS
                  ) -> tuple[LabelSet, np.ndarray]:
    """The mixed labels (humans, then each model's one answer per task with its confidence)
    and the true classes (binary tasks)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    accuracy = rng.uniform(0.65, 0.9, N_HUMANS)
    pi = np.stack([np.array([[a, 1 - a], [1 - a, a]]) for a in accuracy])
    log_beta = SIGMA * rng.standard_normal(n_tasks)
    tasks = np.repeat(np.arange(n_tasks), PER_TASK)
    workers = rng.permuted(np.tile(np.arange(N_HUMANS), (n_tasks, 1)), axis=1)[:, :PER_TASK]
    workers = workers.ravel()
    p = np.exp(log_softmax(np.exp(log_beta)[tasks, None]
                           * np.log(pi[workers, truth[tasks]]), axis=1))
    labels = (p.cumsum(axis=1) < rng.random(tasks.size)[:, None]).sum(axis=1)
    humans = LabelSet(tasks, workers, labels, n_tasks, N_HUMANS, 2)
    machines = [Classifier(ClassifierOptions(**m)) for m in models]
    panel = draw_panel(machines, truth, 2, -log_beta, rng)
    every = np.arange(n_tasks)
    answers = [panel.ask(m, every) for m in range(len(machines))]
    return with_machine_labels(
        humans, np.tile(every, len(machines)),
        np.repeat(N_HUMANS + np.arange(len(machines)), n_tasks),
        np.concatenate([a[0] for a in answers]), np.concatenate([a[1] for a in answers]),
        tuple(m["name"] for m in models)), truth


def write_planted(folder: Path, seed: int, n_tasks: int) -> tuple[Path, Path]:
    """The crowd as a mixed CSV file (task, worker, label, source, confidence; every model
    answer of every tenth task written twice, as a deterministic model asked again) and its
    truth file."""
    data, truth = planted_crowd(seed, n_tasks)
    sources = np.asarray(data.worker_sources)[data.workers]
    names = np.where(sources == "human", np.char.add("w", data.workers.astype(str)), sources)
    conf = np.where(np.isnan(data.confidence), "", data.confidence.astype(str))
    rows = [f"t{t},{w},{y},{s},{c}" for t, w, y, s, c in
            zip(data.tasks, names, data.labels, sources, conf, strict=True)]
    again = [r for r, s, t in zip(rows, sources, data.tasks, strict=True)
             if s != "human" and t % 10 == 0]
    labels, truth_file = folder / "mixed.csv", folder / "truth.csv"
    labels.write_text("task,worker,label,source,confidence\n" + "\n".join(rows + again) + "\n")
    truth_file.write_text("task,label\n" + "".join(f"t{i},{c}\n" for i, c in enumerate(truth)))
    return labels, truth_file


def fitted(seed: int, n_tasks: int, with_truth: bool) -> Calibration:
    """The planted crowd's models fitted as ``calibrate`` fits them: the humans' world with
    task difficulty on the human labels alone (each task's class from the truth, else
    Dawid–Skene's posterior), then the models against it."""
    data, truth = planted_crowd(seed, n_tasks)
    humans, answers, _ = split_sources(data)
    ds = make_estimator("ds").fit(humans)
    weights = np.eye(2)[truth] if with_truth else np.asarray(ds.proba_)
    start = counted_confusion(humans.tasks, humans.workers, humans.labels, weights,
                              humans.n_workers)
    world = fit_confusion_world(humans.tasks, humans.workers, humans.labels, weights,
                                humans.n_workers, start, coins=False, lookalike=False,
                                difficulty=True)
    prior = weights.mean(axis=0)
    cal = Calibration("planted", n_tasks, 2, humans.n_labels, prior,
                      np.bincount(humans.workers, minlength=humans.n_workers), (world,), "test",
                      labels_per_task(humans.tasks, n_tasks))
    reference = truth if with_truth else np.asarray(ds.labels_)
    return fit_models(cal, humans, truth if with_truth else None, reference, answers)
