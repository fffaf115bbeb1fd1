"""Continuous-score (seed 001) and task-feature (seed 004) markets: what the world draws, what the
label log carries, what the recorder measures, and that runs are reproducible."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.study.runner import market_setup, run_study, run_unit
from marketsim.study.seeds import initial_graph_rng, unit_streams, world_rng
from marketsim.workers.gaussian_scores import ScoreParams

SCORES: dict[str, Any] = {
    "scenario": {"seed": 7, "replicates": 2},
    "tasks": {"count": 150, "means": {"alpha": 2.0, "beta": 2.0}},
    "workers": {"count": 20, "model": "gaussian-scores",
                "gaussian_scores": {"good_fraction": 0.7, "sigma": 0.08}},
    "budget": {"edges": 900, "batch": 150},
    "arms": [
        {"name": "uniform + EM", "policy": "uniform", "inference": "gaussian-em"},
        {"name": "uncertainty + EM", "policy": "uncertainty", "inference": "gaussian-em"},
        {"name": "uniform + hard EM", "policy": "uniform", "inference": "gaussian-hard-em",
         "initial": "bernoulli"},
    ],
}


def scenario(data: dict[str, Any] = SCORES, **changes: Any) -> Scenario:
    """``data`` with top-level tables updated, parsed."""
    raw = copy.deepcopy(data)
    for key, value in changes.items():
        raw[key] = {**raw.get(key, {}), **value}
    return parse_scenario(raw, "inline.toml")


def market(sc: Scenario, arm: int = 0, replicate: int = 0, **kw: Any) -> Market:
    spec = sc.arms[arm]
    world = draw_world(
        sc.crowd, world_rng(sc.seed, replicate), spec.initial_graph(sc.budget),
        None if spec.initial is None else initial_graph_rng(sc.seed, replicate, spec.initial),
    )
    return Market(market_setup(sc), world,
                  make_policy(spec.policy.name, dict(spec.policy.options)),
                  estimator_factory(sc.crowd, spec.inference),
                  unit_streams(sc.seed, replicate, arm),
                  **kw)


def test_world_draws_means_types_and_scored_initial_graph() -> None:
    sc = scenario()
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    assert world.model.scores and isinstance(world.params, ScoreParams)
    means = world.params.means
    assert means.shape == (150,) and np.all((means > 0) & (means < 1))
    assert world.params.good.sum() == 14  # round(0.7 * 20): an exact count
    assert world.initial_scores is not None and world.initial_scores.shape == (150,)
    # Beta(2, 2) means: mean 1/2, variance 1/20.
    assert abs(means.mean() - 0.5) < 0.05 and abs(means.var() - 0.05) < 0.015


def test_arms_share_means_and_types_even_with_another_initial_graph() -> None:
    sc = scenario()
    a = draw_world(sc.crowd, world_rng(sc.seed, 1))
    b = draw_world(sc.crowd, world_rng(sc.seed, 1), "bernoulli",
                   initial_graph_rng(sc.seed, 1, "bernoulli"))
    c = draw_world(sc.crowd, world_rng(sc.seed, 2))
    assert np.array_equal(a.params.means, b.params.means)
    assert np.array_equal(a.params.good, b.params.good)
    assert not np.array_equal(a.params.means, c.params.means)
    assert a.initial_tasks.size != b.initial_tasks.size


def test_every_label_has_a_score_in_range_from_the_right_distribution() -> None:
    sc = scenario(budget={"edges": 1500})
    m = market(sc, keep_graph=True)
    m.run()
    lab = m.log.view()
    assert lab.n_labels == m.log.size == sc.budget.edges  # budget spent, not overspent
    assert lab.scores is not None and lab.scores.shape == (lab.n_labels,)
    assert np.all(np.isfinite(lab.scores))
    assert lab.scores.min() >= 0.0 and lab.scores.max() <= 1.0
    pairs = lab.tasks * lab.n_workers + lab.workers
    assert np.unique(pairs).size == pairs.size  # a worker scores a task at most once
    world = m.world
    good = world.params.good[lab.workers]
    resid = lab.scores[good] - world.params.means[lab.tasks[good]]
    assert abs(resid.mean()) < 0.01 and abs(resid.std() - 0.08) < 0.01
    bad = lab.scores[~good]  # uniform on [0, 1], whatever the task
    assert abs(bad.mean() - 0.5) < 0.05 and abs(bad.var() - 1 / 12) < 0.015
    assert np.corrcoef(bad, world.params.means[lab.tasks[~good]])[0, 1] < 0.15
    # The graph records the same scores.
    assert m.graph is not None
    for k in (0, -1):  # an initial label and a bought one
        edge = m.graph.edges[f"t{lab.tasks[k]}", f"w{lab.workers[k]}"]
        assert edge["score"] == pytest.approx(lab.scores[k])


def test_recorder_measures_rmse_plain_rmse_and_good_calls() -> None:
    curve = market(scenario()).run()
    assert [p.edges for p in curve] == list(range(150, 901, 150))
    for p in curve:
        assert p.rmse == p.error_rate and np.isfinite(p.plain_rmse)
        assert np.isnan(p.confusion_error)
    # One score per task: the EM's weighted mean is that score, exactly the plain mean.
    assert curve[0].rmse == pytest.approx(curve[0].plain_rmse)
    last = curve[-1]
    assert last.rmse < 0.7 * last.plain_rmse  # the EM discounts the bad annotators
    assert last.good_accuracy >= 0.9
    assert last.ability_error < curve[1].ability_error


def test_metrics_match_a_direct_computation() -> None:
    from marketsim.aggregation.bad_annotators import plain_means

    m = market(scenario())
    m.run()
    lab, est, world = m.log.view(), m.estimator, m.world
    assert est is not None
    means = np.where(np.isnan(est.means_), 0.5, est.means_)
    plain = np.where(np.isnan(plain_means(lab)), 0.5, plain_means(lab))
    last = m.curve[-1]
    assert last.rmse == pytest.approx(np.sqrt(np.mean((means - world.params.means) ** 2)))
    assert last.plain_rmse == pytest.approx(np.sqrt(np.mean((plain - world.params.means) ** 2)))
    seen = np.bincount(lab.workers, minlength=lab.n_workers) > 0
    calls = (est.good_proba_ > 0.5) == world.params.good
    assert last.good_accuracy == pytest.approx(calls[seen].mean())


def test_unscored_tasks_count_with_the_prior_mean() -> None:
    sc = scenario(budget={"edges": 300, "initial": "none", "batch": 100})
    curve = market(sc).run()
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    assert curve[0].edges == 0
    assert curve[0].rmse == pytest.approx(np.sqrt(np.mean((world.params.means - 0.5) ** 2)))
    assert curve[-1].edges == 300


def test_same_seed_same_curves_and_arms_differ() -> None:
    sc = scenario()
    first = run_study(sc)
    again = run_study(sc)
    rows = [r for u in sorted(first, key=lambda u: (u.arm, u.replicate)) for r in u.rows]
    rows2 = [r for u in sorted(again, key=lambda u: (u.arm, u.replicate)) for r in u.rows]
    assert rows == rows2
    one = run_unit(sc, 0, 0).rows
    assert one == run_unit(sc, 0, 0).rows
    assert run_unit(sc, 0, 1).rows != one
    assert run_unit(sc, 1, 0).rows != one


def test_uncertainty_policy_spreads_trust_where_it_is_missing() -> None:
    """Tasks scored only by annotators believed bad get more scores under ``uncertainty``."""
    sc = scenario(budget={"edges": 750, "batch": 30})  # rounds much smaller than the tasks
    ms = {arm: market(sc, arm) for arm in (0, 1)}
    for m in ms.values():
        m.run()
    weight = {}
    for arm, m in ms.items():
        lab, est = m.log.view(), m.estimator
        assert est is not None
        w = np.bincount(lab.tasks, weights=est.good_proba_[lab.workers], minlength=lab.n_tasks)
        weight[arm] = w
    # Fewer tasks are left with little trusted weight, and the weights are more even, when the
    # variance sigma^2 / W_i is targeted.
    assert (weight[1] < 2.5).mean() < 0.5 * (weight[0] < 2.5).mean()
    assert weight[1].std() < weight[0].std()
    assert ms[1].curve[-1].rmse < ms[0].curve[-1].rmse


# --- task features --------------------------------------------------------------------------

FEATURES: dict[str, Any] = {
    "scenario": {"seed": 4},
    "tasks": {"count": 300, "features": {"count": 6, "informativeness": 0.8}},
    "workers": {"count": 15, "model": "confusion", "confusion": {"low": 0.55, "high": 0.8}},
    "budget": {"edges": 900, "batch": 150},
    "arms": [
        {"name": "ds", "policy": "uniform",
         "inference": {"method": "ds", "class_prior": "estimate"}},
        {"name": "ds-features", "policy": "uniform",
         "inference": {"method": "ds-features", "class_prior": "estimate"}},
        {"name": "ds-features bernoulli", "policy": "entropy-greedy", "initial": "bernoulli",
         "inference": {"method": "ds-features", "class_prior": "estimate"}},
    ],
}


def test_features_are_drawn_from_the_classes_and_shared_by_arms() -> None:
    sc = scenario(FEATURES)
    a = draw_world(sc.crowd, world_rng(sc.seed, 0))
    b = draw_world(sc.crowd, world_rng(sc.seed, 0), "bernoulli",
                   initial_graph_rng(sc.seed, 0, "bernoulli"))
    assert a.features is not None and b.features is not None and a.feature_proba is not None
    assert a.features.shape == (300, 6) and set(np.unique(a.features)) <= {0.0, 1.0}
    assert np.array_equal(a.features, b.features) and np.array_equal(a.truth, b.truth)
    assert np.all(np.abs(a.feature_proba - 0.5) <= 0.4)
    # Without features nothing changes in the world stream (older scenarios keep their worlds).
    plain = copy.deepcopy(FEATURES)
    del plain["tasks"]["features"]
    c = draw_world(parse_scenario(plain, "x").crowd, world_rng(sc.seed, 0))
    assert c.features is None and np.array_equal(c.truth, a.truth)


def test_explicit_feature_probabilities_are_used() -> None:
    phi = [[0.9, 0.1], [0.2, 0.7]]
    sc = scenario(FEATURES, tasks={"count": 4000, "features": {"count": 2, "probabilities": phi}},
                  budget={"edges": 4000})
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    assert world.features is not None and np.array_equal(world.feature_proba, phi)
    for c in (0, 1):
        freq = world.features[world.truth == c].mean(axis=0)
        assert np.allclose(freq, phi[c], atol=0.04)


def test_features_reach_ds_features_and_lower_its_error() -> None:
    sc = scenario(FEATURES)
    ds, feat = market(sc, 0), market(sc, 1)
    ds.run()
    feat.run()
    assert feat.estimator is not None and ds.estimator is not None
    assert feat.estimator.feature_proba_.shape == (2, 6)  # it was given the features
    assert not hasattr(ds.estimator, "feature_proba_")  # plain D&S ignores them
    assert feat.world.feature_proba is not None
    assert np.abs(feat.estimator.feature_proba_ - feat.world.feature_proba).mean() < 0.1
    assert feat.curve[-1].error_rate < ds.curve[-1].error_rate - 0.02
    # Same labels at the start (same world and initial graph): the gain is the features'.
    assert np.array_equal(ds.world.initial_labels, feat.world.initial_labels)


def test_features_market_is_reproducible_and_rows_have_no_score_metrics() -> None:
    sc = scenario(FEATURES, budget={"edges": 600})
    rows = run_unit(sc, 0, 2).rows
    assert rows == run_unit(sc, 0, 2).rows
    assert all(np.isnan(r.rmse) and np.isnan(r.plain_rmse) for r in rows)
    assert rows[-1].edges == 600
