"""The GLAD worker model (task difficulty) and weighted arrivals: simulated frequencies match
the formula P(correct) = sigmoid(alpha_j * beta_i), per difficulty bin and per worker."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from marketsim.errors import InputError
from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.scenario.parser import parse_scenario
from marketsim.study.runner import market_setup
from marketsim.study.seeds import unit_streams, world_rng
from marketsim.workers.draws import weighted_workers
from marketsim.workers.glad import GladAnswers, mean_accuracy

ALPHA = [-0.5, 0.3, 1.0, 2.0, 4.0]


def scenario(tasks: int = 20_000, classes: int = 2, edges: int | None = None,
             **glad: object) -> dict:
    return {
        "scenario": {"seed": 11},
        "tasks": {"count": tasks, "classes": classes},
        "workers": {"count": len(ALPHA), "model": "glad", "glad": {"alpha": ALPHA, **glad}},
        "budget": {"edges": edges or tasks * len(ALPHA), "initial": "bernoulli",
                   "initial_probability": 1.0, "batch": tasks},
        "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}],
    }


def binned_check(right: np.ndarray, p: np.ndarray, bins: int = 8) -> None:
    """Per bin of the formula's probability: the observed share of right answers lies within
    4.5 binomial standard errors of the mean formula probability."""
    edges = np.quantile(p, np.linspace(0, 1, bins + 1))
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)
    for b in range(bins):
        sel = which == b
        expected = p[sel].mean()
        se = np.sqrt(max(expected * (1 - expected), 1e-4) / sel.sum())
        assert abs(right[sel].mean() - expected) < 4.5 * se + 1e-9, (b, right[sel].mean(),
                                                                      expected)


@pytest.mark.parametrize("glad", [{"sigma": 1.0}, {"difficulty": "gamma", "shape": 1.5}])
def test_initial_answers_match_the_formula_per_difficulty_bin_and_worker(glad: dict) -> None:
    sc = parse_scenario(scenario(**glad), "x")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    alpha, beta = world.params.alpha, world.params.beta
    assert np.array_equal(alpha, ALPHA)
    t, w = world.initial_tasks, world.initial_workers
    right = world.initial_labels == world.truth[t]
    p = expit(alpha[w] * beta[t])
    for j in range(len(ALPHA)):  # per worker, binned by the task's difficulty
        binned_check(right[w == j], p[w == j])
        # and the worker's overall accuracy is the model's mean accuracy
        mean = mean_accuracy(np.asarray(ALPHA), sc.workers.glad)[j]
        se = np.sqrt(mean * (1 - mean) / (w == j).sum())
        assert abs(right[w == j].mean() - mean) < 4.5 * se
    assert np.allclose(world.ability, mean_accuracy(np.asarray(ALPHA), sc.workers.glad))


def test_difficulty_distributions_have_their_declared_shape() -> None:
    beta = draw_world(parse_scenario(scenario(sigma=0.7), "x").crowd,
                      world_rng(11, 0)).params.beta
    assert abs(np.log(beta).std() - 0.7) < 0.02 and abs(np.log(beta).mean()) < 0.02
    gamma = draw_world(parse_scenario(scenario(difficulty="gamma", shape=3.0), "x").crowd,
                       world_rng(11, 0)).params.beta
    assert abs(gamma.mean() - 1.0) < 0.02 and abs(gamma.var() - 1 / 3) < 0.03
    flat = draw_world(parse_scenario(scenario(sigma=0.0), "x").crowd,
                      world_rng(11, 0)).params.beta
    assert np.all(flat == 1.0)  # sigma = 0: every task equally hard, accuracy sigmoid(alpha)


def test_per_label_answers_match_the_formula_and_wrong_classes_are_uniform() -> None:
    sc = parse_scenario(scenario(tasks=6000, classes=3, sigma=1.2), "x")
    world = draw_world(sc.crowd, world_rng(sc.seed, 1))
    answers = GladAnswers(world.truth, world.params, 3, np.random.default_rng(5))
    tasks = np.repeat(np.arange(6000), len(ALPHA))
    workers = np.tile(np.arange(len(ALPHA)), 6000)
    got = np.array([answers.answer(int(i), int(j))[0] for i, j in zip(tasks, workers,
                                                                      strict=True)])
    truth = world.truth[tasks]
    right = got == truth
    binned_check(right, expit(world.params.alpha[workers] * world.params.beta[tasks]))
    wrong_offset = (got[~right] - truth[~right]) % 3  # 1 or 2, each half the time
    share = (wrong_offset == 1).mean()
    assert abs(share - 0.5) < 4.5 * np.sqrt(0.25 / wrong_offset.size)


def test_abilities_from_the_ability_table_when_alpha_is_not_given() -> None:
    doc = scenario(tasks=500)
    doc["workers"] = {"count": 400, "model": "glad", "ability": {"alpha": 4, "beta": 2,
                                                                 "low": 0.2}}
    doc["budget"] = {"edges": 1000, "batch": 500}
    world = draw_world(parse_scenario(doc, "x").crowd, world_rng(11, 0))
    p = expit(world.params.alpha)  # accuracy on a typical task (beta = 1)
    assert p.min() >= 0.2 and abs(p.mean() - (0.2 + 0.8 * 4 / 6)) < 0.02


def test_weighted_workers_follow_their_weights() -> None:
    weights = np.array([0.0, 1.0, 2.0, 7.0])
    picked = weighted_workers(weights, np.random.default_rng(0).random(200_000))
    share = np.bincount(picked, minlength=4) / picked.size
    assert share[0] == 0 and np.allclose(share, weights / 10, atol=0.005)


def test_weighted_arrivals_in_the_market_give_labels_by_share() -> None:
    doc = scenario(tasks=1500, edges=2000, sigma=0.5)
    doc["workers"]["arrivals"] = {"weights": [0.5, 0.5, 1, 2, 4]}
    doc["budget"] = {"edges": 2000, "initial": "one-per-task", "batch": 400}
    sc = parse_scenario(doc, "x")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    market = Market(market_setup(sc), world, make_policy("uniform", {}),
                    estimator_factory(sc.crowd, sc.arms[0].inference), unit_streams(sc.seed, 0, 0),
                    keep_graph=False)
    market.run()
    per_worker = np.bincount(market.log.view().workers, minlength=5)
    assert per_worker.sum() == 2000
    assert np.allclose(per_worker / 2000, np.array([0.5, 0.5, 1, 2, 4]) / 8, atol=0.04)


def test_a_worker_who_would_never_arrive_is_refused_at_parse() -> None:
    """A zero weight would leave a worker who never arrives but still counts as one who may
    work: the market could never tell it is stuck. Refused in one line."""
    doc = scenario(tasks=40, edges=100, sigma=0.5)
    doc["workers"]["arrivals"] = {"weights": [0, 1, 1, 2, 4]}
    with pytest.raises(InputError, match=r"workers\.arrivals\.weights entries must be finite "
                       r"numbers > 0"):
        parse_scenario(doc, "x")


def test_glad_world_draw_is_reproducible() -> None:
    sc = parse_scenario(scenario(tasks=500, sigma=1.0), "x")
    a, b = draw_world(sc.crowd, world_rng(11, 2)), draw_world(sc.crowd, world_rng(11, 2))
    assert np.array_equal(a.params.beta, b.params.beta)
    assert np.array_equal(a.initial_labels, b.initial_labels)


@pytest.mark.parametrize(("glad", "message"), [
    ({"alpha": [1.0, 2.0]}, "workers.glad.alpha must have workers.count = 5 entries"),
    ({"difficulty": "gamma", "sigma": 1.0}, "workers.glad.sigma applies only to difficulty"),
    ({"alpha": [1.0, 2.0, 3.0, 4.0, 99.0]}, "workers.glad.alpha entries must lie in"),
    ({"sigma": -1.0}, "workers.glad.sigma"),
])
def test_bad_glad_keys_are_one_line_errors(glad: dict, message: str) -> None:
    doc = scenario(tasks=100)
    doc["workers"]["glad"] = glad
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        parse_scenario(doc, "x")


def test_bad_weights_and_tables_of_other_models_are_refused() -> None:
    doc = scenario(tasks=100)
    doc["workers"]["arrivals"] = {"weights": [1, 2]}
    with pytest.raises(InputError, match="workers.arrivals.weights must have"):
        parse_scenario(doc, "x")
    doc["workers"]["arrivals"] = {"weights": [0, 0, 0, 0, 0]}
    with pytest.raises(InputError, match="must be finite numbers > 0"):
        parse_scenario(doc, "x")
    doc = scenario(tasks=100)
    doc["workers"]["model"] = "one-coin"
    with pytest.raises(InputError, match="only applies with workers.model = 'glad'"):
        parse_scenario(doc, "x")


@pytest.mark.parametrize("glad", [{"sigma": 0.5}, {"difficulty": "gamma", "shape": 3.0}])
def test_resolved_document_round_trips_and_records_the_new_keys(glad: dict) -> None:
    import tomllib

    from marketsim.scenario.toml_out import dumps

    doc = scenario(tasks=100, **glad)
    doc["workers"]["arrivals"] = {"weights": [1, 2, 3, 4, 5]}
    sc = parse_scenario(doc, "x")
    text = dumps(sc.resolved_document())
    assert parse_scenario(tomllib.loads(text), "x") == sc
    record = sc.to_dict()["workers"]
    assert record["glad"]["alpha"] == ALPHA and record["arrivals"]["weights"] == [1, 2, 3, 4, 5]
