"""Per-worker confusion matrices with look-alike tasks, task difficulty and pulls
(``[workers.confusion]`` ``design = "per-worker"``, ``lookalike``, ``lookalike_follow``,
``sigma``, ``pull``):
simulated frequencies match the formula P(l | c) = sum_s lookalike[c, s] softmax(beta log
pi_j[s])[l] (mixed with the pulled class by the task's strength), per worker, per class and
per difficulty bin; the keys are off by default."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import parse_scenario
from marketsim.study.seeds import world_rng
from marketsim.workers.task_effects import EffectAnswers, mean_confusion, tempered
from tests.helpers import within

MATRICES = [[[0.9, 0.1], [0.3, 0.7]], [[0.6, 0.4], [0.05, 0.95]], [[0.5, 0.5], [0.5, 0.5]]]
LOOKALIKE = [[0.9, 0.1], [0.25, 0.75]]
PULLS = {"pull": [[0.8, 0.2], [0.1, 0.9]], "pull_strengths": [0.3, 0.9],
         "pull_weights": [0.6, 0.4]}


def scenario(tasks: int = 20_000, **confusion: Any) -> dict[str, Any]:
    """Every worker labels every task once (the initial graph)."""
    return {
        "scenario": {"seed": 5},
        "tasks": {"count": tasks, "classes": 2, "prior": [0.6, 0.4]},
        "workers": {"count": 3, "model": "confusion",
                    "confusion": {"design": "per-worker", "matrices": MATRICES, **confusion}},
        "budget": {"edges": tasks * 3, "initial": "bernoulli", "initial_probability": 1.0,
                   "batch": tasks},
        "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}],
    }


def frequencies(world: Any, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's answer shares per true class (workers, K, K) and the counts per row."""
    counts = np.zeros((3, k, k))
    np.add.at(counts, (world.initial_workers, world.truth[world.initial_tasks],
                       world.initial_labels), 1)
    rows = counts.sum(axis=2, keepdims=True)
    return counts / rows, rows


def test_per_worker_matrices_are_answered_as_given() -> None:
    sc = parse_scenario(scenario(), "x")
    world = draw_world(sc.crowd, world_rng(5, 0))
    shares, rows = frequencies(world)
    within(shares, np.asarray(MATRICES), rows)
    assert np.allclose(world.confusion, MATRICES)
    assert world.params is None  # no effects: the plain model's draws


@pytest.mark.parametrize("effects", [{"lookalike": LOOKALIKE}, {"sigma": 1.2},
                                     {"lookalike": LOOKALIKE, "sigma": 0.8}, PULLS,
                                     {**PULLS, "lookalike": LOOKALIKE, "sigma": 0.5},
                                     {"lookalike": LOOKALIKE, "lookalike_follow": 0.4},
                                     {"lookalike": LOOKALIKE, "lookalike_follow": 0.6,
                                      "sigma": 0.5}])
def test_effects_match_the_mean_formula_per_worker_and_class(effects: dict) -> None:
    sc = parse_scenario(scenario(**effects), "x")
    world = draw_world(sc.crowd, world_rng(5, 1))
    shares, rows = frequencies(world)
    expected = mean_confusion(np.asarray(MATRICES), sc.workers.confusion)
    within(shares, expected, rows)
    assert np.allclose(world.confusion, expected)
    if "lookalike" in effects:  # the class each task looks like follows lookalike[c]
        looks = world.params.looks
        for c in range(2):
            sel = world.truth == c
            within(np.bincount(looks[sel], minlength=2) / sel.sum(), np.asarray(LOOKALIKE[c]),
                   np.full(2, sel.sum()))


def test_difficulty_tempers_each_row_per_bin_of_beta() -> None:
    """Per octile of beta: worker 0's share of answers l on tasks that look like s matches
    softmax(beta log pi[s])[l] averaged over the bin; log beta has sd sigma."""
    sc = parse_scenario(scenario(sigma=1.0), "x")
    world = draw_world(sc.crowd, world_rng(5, 2))
    beta = world.params.beta
    assert abs(np.std(np.log(beta)) - 1.0) < 0.03
    mine = world.initial_workers == 0
    tasks, labels = world.initial_tasks[mine], world.initial_labels[mine]
    edges = np.quantile(beta, np.linspace(0, 1, 9))
    which = np.clip(np.searchsorted(edges, beta[tasks], side="right") - 1, 0, 7)
    for b in range(8):
        for s in range(2):
            sel = (which == b) & (world.params.looks[tasks] == s)
            p = tempered(np.asarray(MATRICES[0][s]), beta[tasks[sel]])[:, 1].mean()
            within(np.array([np.mean(labels[sel] == 1)]), np.array([p]),
                   np.array([sel.sum()]))


def test_market_answers_follow_the_same_rows() -> None:
    """The per-label answers the market draws (:class:`EffectAnswers`) agree with the
    vectorised initial answers' formula."""
    sc = parse_scenario(scenario(tasks=400, lookalike=LOOKALIKE, sigma=0.7), "x")
    world = draw_world(sc.crowd, world_rng(5, 3))
    answers = EffectAnswers(world.params, np.random.default_rng(0), world.truth)
    reps = 60
    counts = np.zeros((3, 2, 2))
    for task in range(400):
        for worker in range(3):
            for _ in range(reps):
                label, score = answers.answer(task, worker)
                assert score is None
                counts[worker, world.truth[task], label] += 1
    rows = counts.sum(axis=2, keepdims=True)
    expected = np.zeros((3, 2, 2))
    for task in range(400):
        row = tempered(np.asarray(MATRICES), world.params.beta[task])[:, world.params.looks[task]]
        expected[:, world.truth[task]] += row * reps
    within(counts / rows, expected / rows, rows / reps)  # tasks, not answers, vary


def test_effects_are_off_by_default_and_recorded_as_off() -> None:
    plain = parse_scenario({**scenario(), "workers": {"count": 3, "model": "confusion"}}, "x")
    assert plain.workers.confusion.sigma == 0 and plain.workers.confusion.lookalike is None
    record = plain.to_dict()["workers"]["confusion"]  # run.json v2: every value it ran with
    assert record["sigma"] == 0 and not {"lookalike", "matrices"} & set(record)
    given = parse_scenario(scenario(sigma=0.5, lookalike=LOOKALIKE), "x").to_dict()
    assert given["workers"]["confusion"]["sigma"] == 0.5
    assert given["workers"]["confusion"]["lookalike"] == [[0.9, 0.1], [0.25, 0.75]] or \
        given["workers"]["confusion"]["lookalike"] == ((0.9, 0.1), (0.25, 0.75))


def test_relabelling_the_classes_relabels_the_answers() -> None:
    """Metamorphic: swapping the two classes in the prior, every matrix (rows and columns) and
    the look-alike matrix swaps the classes of the answer frequencies."""
    doc = scenario(lookalike=LOOKALIKE, sigma=0.6)
    swap = scenario(lookalike=[r[::-1] for r in LOOKALIKE[::-1]], sigma=0.6)
    swap["workers"]["confusion"]["matrices"] = [[r[::-1] for r in m[::-1]] for m in MATRICES]
    swap["tasks"]["prior"] = [0.4, 0.6]
    a = draw_world(parse_scenario(doc, "x").crowd, world_rng(5, 4))
    b = draw_world(parse_scenario(swap, "x").crowd, world_rng(5, 5))
    fa, ra = frequencies(a)
    fb, _ = frequencies(b)
    within(fb[:, ::-1, ::-1], fa, ra, z=6.4)  # two samples: sqrt(2) x 4.5


def test_a_pulled_task_draws_every_worker_to_the_same_wrong_class() -> None:
    """A task pulls toward another class as often as ``pull[c]`` says, with the strengths in
    their weights; on it each worker answers the pulled class with probability a + (1 - a)
    pi_j[c, p], on the other tasks from its own row: the errors a task's workers share."""
    sc = parse_scenario(scenario(**PULLS), "x")
    world = draw_world(sc.crowd, world_rng(5, 6))
    pulled, strength = world.params.pulled, world.params.strength
    for c in range(2):
        sel = world.truth == c
        within(np.bincount(pulled[sel], minlength=2) / sel.sum(), np.asarray(PULLS["pull"][c]),
               np.full(2, sel.sum()))
    away = pulled != world.truth
    assert set(np.round(strength[away], 6)) == {0.3, 0.9} and not strength[~away].any()
    within(np.array([np.mean(strength[away] == 0.3)]), np.array([0.6]),
           np.array([away.sum()]))
    tasks, workers, labels = world.initial_tasks, world.initial_workers, world.initial_labels
    mats = np.asarray(MATRICES)
    for a in (0.0, 0.3, 0.9):
        for j in range(3):
            sel = (workers == j) & np.isclose(strength[tasks], a)
            c, p = world.truth[tasks[sel]], pulled[tasks[sel]]
            expected = a + (1 - a) * mats[j, c, p]  # the pulled class (the truth where a = 0)
            within(np.array([np.mean(labels[sel] == p)]), np.array([expected.mean()]),
                   np.array([sel.sum()]))


def test_market_and_block_answers_follow_the_pulled_rows() -> None:
    """The per-label answers (:meth:`EffectAnswers.answer`) and the design sampler's blocks
    (:meth:`EffectAnswers.answer_block`) draw from the same pulled rows as the world."""
    sc = parse_scenario(scenario(tasks=300, sigma=0.4, **PULLS), "x")
    world = draw_world(sc.crowd, world_rng(5, 7))
    reps = 40
    tasks = np.repeat(np.arange(300), 3 * reps)
    workers = np.tile(np.repeat(np.arange(3), reps), 300)
    expected = world.params.rows(tasks, workers)[:, 1]
    answers = EffectAnswers(world.params, np.random.default_rng(0), world.truth)
    block = answers.answer_block(tasks, workers)
    single = np.array([answers.answer(int(t), int(w))[0] for t, w in zip(tasks, workers,
                                                                          strict=True)])
    for got in (block, single):
        for a in (0.0, 0.3, 0.9):
            sel = np.isclose(world.params.strength[tasks], a)
            within(np.array([got[sel].mean()]), np.array([expected[sel].mean()]),
                   np.array([sel.sum()]))


def test_a_label_follows_the_look_alike_class_with_probability_lookalike_follow() -> None:
    """On tasks of class c that look like s != c, worker j answers from f pi_j[s] + (1 - f)
    pi_j[c]: in the initial answers, the market's per-label answers and the block answers."""
    f = 0.3
    sc = parse_scenario(scenario(tasks=6000, lookalike=LOOKALIKE, lookalike_follow=f), "x")
    world = draw_world(sc.crowd, world_rng(5, 6))
    pi = np.asarray(MATRICES)
    looks, truth = world.params.looks, world.truth
    answers = EffectAnswers(world.params, np.random.default_rng(1), truth)
    tasks = world.initial_tasks
    workers = world.initial_workers
    block = answers.answer_block(tasks, workers)
    single = np.array([answers.answer(int(t), int(j))[0] for t, j in zip(
        tasks[:6000], workers[:6000], strict=True)])
    for c in range(2):
        s = 1 - c
        for j in range(3):
            sel = (truth[tasks] == c) & (looks[tasks] == s) & (workers == j)
            p = f * pi[j, s, 1] + (1 - f) * pi[j, c, 1]
            for labels in (world.initial_labels[sel], block[sel]):
                within(np.array([np.mean(labels == 1)]), np.array([p]), np.array([sel.sum()]))
            few = sel[:6000]
            within(np.array([np.mean(single[few] == 1)]), np.array([p]), np.array([few.sum()]))
