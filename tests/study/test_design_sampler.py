"""The design sampler (``study/design_sampler``): a twin's labels at exactly k per task without
a market, as ``calibrate`` judges its candidate worlds. It must give every task k distinct
workers, keep the market's world and initial graph, give each worker the share of the labels
the market does, answer through the worker model, and agree with the fixed-overlap market on
what ``calibrate`` compares: majority vote's and Dawid–Skene's errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation.design_curve import References, errors
from marketsim.scenario.parser import load_scenario, scenario_from_dict
from marketsim.scenario.specs import Scenario
from marketsim.study.design_sampler import (
    collected_counts,
    collected_labels,
    design_world,
    inclusion,
    labels_at_k,
    other_workers,
    sampler_problem,
    systematic_workers,
)
from marketsim.study.twin import (
    as_collected,
    collected_scenario,
    simulated_labels,
    twin_errors,
)
from marketsim.study.twin_curve import design_scenario, twin_runs

ROOT = Path(__file__).resolve().parents[2]


def skewed_crowd(n_tasks: int = 200, n_workers: int = 30, seed: int = 5,
                 **workers: object) -> Scenario:
    """Three classes, a few heavy workers (weights falling geometrically), look-alike tasks
    and task difficulty: the kind of world ``calibrate`` writes."""
    weights = (0.8 ** np.arange(n_workers)).round(6).tolist()
    return scenario_from_dict({
        "scenario": {"name": "skewed", "seed": seed, "replicates": 1},
        "tasks": {"count": n_tasks, "classes": 3},
        "workers": {"count": n_workers, "model": "confusion", "arrivals": {"weights": weights},
                    "confusion": {"sigma": 0.6, "lookalike": [[0.9, 0.1, 0.0], [0.05, 0.9, 0.05],
                                                              [0.0, 0.1, 0.9]]}, **workers},
        "budget": {"edges": 6 * n_tasks, "batch": n_tasks, "initial": "one-per-task"},
        "arms": [{"name": "as collected", "policy": "uniform", "initial": "one-per-task",
                  "inference": {"method": "ds"}}]})


def test_every_task_gets_k_distinct_workers_the_first_the_markets_own() -> None:
    scenario = skewed_crowd(n_tasks=100)
    world = design_world(scenario, 2)
    market, truth, _, _ = simulated_labels(design_scenario(scenario, 4), 2, times=False)
    assert sampler_problem(scenario, world) is None and (world.truth == truth).all()
    labels = labels_at_k(scenario, world, 2, 4)
    assert (np.bincount(labels.tasks, minlength=100) == 4).all()
    pairs = labels.tasks * scenario.workers.count + labels.workers
    assert np.unique(pairs).size == pairs.size
    first = np.isin(pairs, world.initial_tasks.astype(np.int64) * scenario.workers.count
                    + world.initial_workers)
    assert first.sum() == 100  # the initial graph's pairs are kept, as the market keeps them
    assert np.isin(world.initial_tasks.astype(np.int64) * scenario.workers.count
                   + world.initial_workers,
                   market.tasks.astype(np.int64) * scenario.workers.count + market.workers).all()


def test_same_seed_same_labels_and_another_k_other_draws() -> None:
    scenario = skewed_crowd()
    one = labels_at_k(scenario, design_world(scenario, 1), 1, 3)
    two = labels_at_k(scenario, design_world(scenario, 1), 1, 3)
    assert all(np.array_equal(a, b) for a, b in ((one.tasks, two.tasks),
                                                (one.workers, two.workers),
                                                (one.labels, two.labels)))


def test_inclusion_is_proportional_to_weight_capped_at_one() -> None:
    pi = inclusion(np.array([10.0, 1.0, 1.0, 1.0, 1.0, 0.0]), 3.0)
    assert pi[0] == 1.0 and pi[5] == 0.0
    assert np.allclose(pi[1:5], 0.5) and pi.sum() == pytest.approx(3.0)
    assert (inclusion(np.array([1.0, 2.0, 0.0]), 5.0) == [1.0, 1.0, 0.0]).all()


def test_each_worker_gives_the_share_of_labels_the_market_gives() -> None:
    scenario = skewed_crowd(n_tasks=150)
    market = np.zeros(30)
    sampled = np.zeros(30)
    for replicate in range(2):
        world = design_world(scenario, replicate)
        sampled += np.bincount(labels_at_k(scenario, world, replicate, 5).workers,
                               minlength=30)
        market += np.bincount(simulated_labels(design_scenario(scenario, 5), replicate,
                                               times=False)[0].workers, minlength=30)
    heavy = slice(0, 8)  # 83 % of the arrivals: over 100 labels each in all
    assert np.abs(sampled[heavy] - market[heavy]).max() <= 4.0 * np.sqrt(market[heavy]).max()
    assert sampled.sum() == market.sum() == 1500


def test_effect_answers_in_a_block_follow_each_pairs_probabilities() -> None:
    scenario = skewed_crowd(n_tasks=4)
    world = design_world(scenario, 0)
    answers = world.model.answers(world, 3, np.random.default_rng(1))
    tasks = np.repeat(np.arange(4), 20_000)
    workers = np.repeat(np.array([0, 3, 7, 1]), 20_000)
    got = answers.answer_block(tasks, workers)  # type: ignore[attr-defined]
    for t, w in ((0, 0), (1, 3), (2, 7), (3, 1)):
        freq = np.bincount(got[tasks == t], minlength=3) / 20_000
        assert np.abs(freq - answers._probs(t, w)).max() < 0.015  # type: ignore[attr-defined]


def test_a_crowd_with_a_capacity_is_left_to_the_market() -> None:
    scenario = skewed_crowd(n_tasks=40, capacity=30)
    assert "workers.capacity" in str(sampler_problem(scenario, design_world(scenario, 0)))
    sampled = twin_runs(scenario, (3,), range(1), True)
    assert np.array_equal(sampled, twin_runs(scenario, (3,), range(1), True, market=True))


def test_the_as_collected_uniform_market_buys_the_same_labels_refitting_majority_vote() -> None:
    scenario = skewed_crowd(n_tasks=60)
    ds_arm, truth, error, _ = simulated_labels(scenario, 0, times=False)
    mv_arm, _, _, _ = simulated_labels(collected_scenario(scenario), 0, times=False)
    assert collected_scenario(scenario).arms[0].inference.method == "mv"
    for a, b in ((ds_arm.tasks, mv_arm.tasks), (ds_arm.workers, mv_arm.workers),
                 (ds_arm.labels, mv_arm.labels)):
        assert np.array_equal(a, b)
    # the moments step's Dawid-Skene error, fitted once on them, is the market's last refit's
    assert twin_errors(scenario, range(1), market=True)[1][0] == error


def test_the_as_collected_counts_are_the_arms_own_where_a_sampler_can_draw_them() -> None:
    scenario = skewed_crowd(n_tasks=50)  # uniform, 6 labels a task in whole rounds
    assert (collected_counts(scenario) == 6).all()
    assert collected_counts(scenario.replace({"budget.edges": 6 * 50 + 7})) is None
    overlaps = [[3, 20], [7, 30]]
    fixed = scenario.with_arms({"name": "as collected", "initial": "one-per-task",
                                "policy": {"name": "fixed-overlap", "overlaps": overlaps}})
    counts = collected_counts(fixed)
    assert counts is not None and sorted(np.bincount(counts).nonzero()[0]) == [3, 7]
    assert (np.bincount(counts)[[3, 7]] == [20, 30]).all()
    adaptive = scenario.with_arms({"name": "greedy", "policy": "entropy-greedy"})
    assert collected_counts(adaptive) is None
    assert as_collected(adaptive, 0)[2] is not None  # the market's, with its own final error


def test_the_as_collected_sample_gives_each_task_its_count_from_distinct_workers() -> None:
    scenario = skewed_crowd(n_tasks=50).with_arms(
        {"name": "as collected", "initial": "one-per-task",
         "policy": {"name": "fixed-overlap", "overlaps": [[2, 10], [4, 25], [9, 15]]}})
    world = design_world(scenario, 3)
    labels = collected_labels(scenario, world, 3)
    counts = collected_counts(scenario)
    assert labels is not None and counts is not None
    assert (np.bincount(labels.tasks, minlength=50) == counts).all()
    pairs = labels.tasks * scenario.workers.count + labels.workers
    assert np.unique(pairs).size == pairs.size
    market, truth, _, _ = simulated_labels(scenario, 3, times=False)
    assert (truth == world.truth).all()
    assert (np.bincount(market.tasks, minlength=50) == counts).all()


def test_a_crowd_with_a_capacity_is_collected_by_its_market() -> None:
    scenario = skewed_crowd(n_tasks=40, capacity=30)
    assert collected_labels(scenario, design_world(scenario, 0), 0) is None
    assert np.array_equal(twin_errors(scenario, range(1)),
                          twin_errors(scenario, range(1), market=True))


def test_as_collected_sample_and_market_agree_on_majority_vote_and_dawid_skene() -> None:
    scenario = skewed_crowd(n_tasks=150)
    gaps = []
    for replicate in range(5):
        sampled, truth, _, _ = as_collected(scenario, replicate)
        market, _, _, _ = as_collected(scenario, replicate, market=True)
        refs = References(truth, truth, "truth")
        gaps.append([np.subtract(errors(sampled, refs), errors(market, refs))])
    assert_within_noise(np.asarray(gaps))


def paired_gaps(scenario: Scenario, ks: tuple[int, ...], replicates: int) -> np.ndarray:
    """Sampler minus market, (replicates, k, method) errors, each pair in one world."""
    gaps = []
    for replicate in range(replicates):
        world = design_world(scenario, replicate)
        refs = References(world.truth, world.truth, "truth")
        gaps.append([np.subtract(errors(labels_at_k(scenario, world, replicate, k), refs),
                                 errors(simulated_labels(design_scenario(scenario, k),
                                                         replicate, times=False)[0], refs))
                     for k in ks])
    return np.asarray(gaps)


def assert_within_noise(gaps: np.ndarray) -> None:
    """Each mean gap (per k and method) within three standard errors (and half a point)."""
    mean = gaps.mean(axis=0)
    se = gaps.std(axis=0, ddof=1) / np.sqrt(gaps.shape[0])
    assert (np.abs(mean) <= 3.0 * se + 0.005).all(), (mean, se)


def test_sampler_and_market_agree_on_majority_vote_and_dawid_skene() -> None:
    assert_within_noise(paired_gaps(skewed_crowd(n_tasks=150), (3, 5), 5))


@pytest.mark.slow
def test_sampler_and_market_agree_on_the_calibrated_rte_twin() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "calibrated_rte.toml")
    assert_within_noise(paired_gaps(scenario, (3, 5), 20))


def test_a_large_crowds_systematic_draw_keeps_each_workers_chance_and_excludes_the_first(
) -> None:
    rng = np.random.default_rng(3)
    weights = 0.9 ** np.arange(40)
    first = rng.choice(40, size=20_000, p=weights / weights.sum())
    picks = systematic_workers(first, weights, 4, rng)
    ordered = np.sort(picks, axis=1)
    assert (ordered[:, 1:] != ordered[:, :-1]).all() and (picks != first[:, None]).all()
    pareto = other_workers(first, weights, 4, rng)  # 800,000 keys: the exact sampler's way
    count = np.bincount(picks.ravel(), minlength=40)
    expected = np.bincount(pareto.ravel(), minlength=40)
    assert np.abs(count - expected).max() <= 5.0 * np.sqrt(expected.max())


def test_a_large_crowds_sampler_agrees_with_the_market(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setattr("marketsim.study.design_sampler.PARETO_KEYS", 0)  # every draw systematic
    assert_within_noise(paired_gaps(skewed_crowd(n_tasks=150), (3, 5), 5))


def test_a_design_never_gives_a_task_more_labels_than_the_file_has_on_it() -> None:
    """The real curve keeps all of a task's labels where it has fewer than k: the twin's
    design must be the same design (a short task keeps its own count), by the sampler and by
    the market alike; tasks with at least k labels get exactly k."""
    scenario = skewed_crowd(n_tasks=100).replace({"budget.edges": 400}).with_arms(
        {"name": "as collected", "initial": "one-per-task", "inference": {"method": "ds"},
         "policy": {"name": "fixed-overlap", "overlaps": [[2, 50], [6, 50]]}})
    collected = collected_counts(scenario)
    assert collected is not None and sorted(np.bincount(collected)) == [0] * 5 + [50, 50]
    world = design_world(scenario, 3)
    sampled = np.bincount(labels_at_k(scenario, world, 3, 5).tasks, minlength=100)
    market = np.bincount(simulated_labels(design_scenario(scenario, 5), 3, times=False)[0].tasks,
                         minlength=100)
    expected = np.minimum(collected, 5)
    assert np.array_equal(sampled, expected) and np.array_equal(market, expected)
    assert (np.bincount(labels_at_k(scenario, world, 3, 2).tasks, minlength=100) == 2).all()



def deck_crowd(n_tasks: int = 150) -> Scenario:
    """:func:`skewed_crowd` as a sparse file's twin with arrivals from a deck: 30 busy workers
    (counts falling geometrically) and 60 workers of one label each, 6 labels per task."""
    busy = 0.85 ** np.arange(30)
    counts = np.concatenate([np.floor(busy / busy.sum() * (6 * n_tasks - 60)), np.ones(60)])
    counts[0] += 6 * n_tasks - counts.sum()
    return skewed_crowd(n_tasks=n_tasks, n_workers=90,
                        arrivals={"order": "deck", "weights": counts.astype(int).tolist()})


def deck_of(scenario: Scenario) -> np.ndarray:
    return np.asarray(scenario.workers.arrivals.weights).astype(np.int64)


def test_a_deck_at_the_files_budget_gives_every_worker_their_count() -> None:
    scenario = deck_crowd()
    world = design_world(scenario, 1)
    labels = collected_labels(scenario, world, 1)
    assert labels is not None
    assert np.array_equal(np.bincount(labels.workers, minlength=90), deck_of(scenario))
    assert (np.bincount(labels.tasks, minlength=150) == 6).all()
    assert np.unique(labels.tasks * 90 + labels.workers).size == labels.tasks.size


def test_a_deck_at_half_the_budget_thins_each_count_hypergeometrically() -> None:
    """Mean squared gap from each worker's share over the hypergeometric variance: about 1
    (independent arrivals' binomial counts: about 2)."""
    scenario, counts = deck_crowd(), deck_of(deck_crowd())
    total, f = int(counts.sum()), 0.5
    var = counts * f * (1 - counts / total) * (total * (1 - f)) / (total - 1)
    stats = [((np.bincount(labels_at_k(scenario, design_world(scenario, r), r, 3).workers,
                           minlength=90) - counts * f) ** 2 / var).mean() for r in range(6)]
    assert 0.7 < np.mean(stats) < 1.35, stats


def test_a_decks_sampler_and_market_agree_on_majority_vote_and_dawid_skene() -> None:
    assert_within_noise(paired_gaps(deck_crowd(), (3, 5), 6))


def test_a_deck_of_busy_workers_only_places_every_card() -> None:
    """Twelve workers, every one busy (more labels than an eighth of the tasks): the last
    dealt one by one can find the slots left bunched on tasks they already hold. Their cards
    go to the repairs with the rest, and one clash per task is repaired a round (two on one
    task blocked each other): every worker gives exactly their count (session 28: 1 to 3 of
    the 900 labels were lost in every replicate)."""
    counts = np.array([110, 100, 95, 90, 85, 80, 75, 70, 65, 50, 45, 35])
    scenario = skewed_crowd(n_tasks=150, n_workers=counts.size,
                            arrivals={"order": "deck", "weights": counts.tolist()})
    for replicate in range(4):
        labels = collected_labels(scenario, design_world(scenario, replicate), replicate)
        assert labels is not None
        assert np.array_equal(np.bincount(labels.workers, minlength=counts.size), counts)
        assert (np.bincount(labels.tasks, minlength=150) == 6).all()
        assert np.unique(labels.tasks * counts.size + labels.workers).size == labels.tasks.size
