"""The SimPy market: arrivals, budget, no repeated (task, worker) pairs, refresh cadence,
reproducibility and parallel determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.record.units import canonical_rows
from marketsim.scenario.parser import load_scenario
from marketsim.study.runner import market_setup, run_study
from marketsim.study.seeds import unit_streams, world_rng


def build_market(path: Path, arm: int = 0, replicate: int = 0) -> Market:
    sc = load_scenario(path)
    spec = sc.arms[arm]
    return Market(
        market_setup(sc),
        draw_world(sc.crowd, world_rng(sc.seed, replicate)),
        make_policy(spec.policy.name, dict(spec.policy.options)),
        estimator_factory(sc.crowd, spec.inference),
        unit_streams(sc.seed, replicate, arm),
        keep_graph=True,
    )


def test_budget_spent_exactly_and_no_pair_twice(small_scenario_path: Path) -> None:
    for arm in (0, 1):
        market = build_market(small_scenario_path, arm)
        market.run()
        labels = market.log.view()
        assert labels.n_labels == market.budget
        pairs = labels.tasks * labels.n_workers + labels.workers
        assert np.unique(pairs).size == pairs.size
        # The networkx graph is kept in step with the label arrays.
        assert market.graph is not None
        assert market.graph.number_of_edges() == market.budget


def test_initial_graph_one_label_per_task_round_robin(small_scenario_path: Path) -> None:
    market = build_market(small_scenario_path)
    w = market.world
    assert np.array_equal(np.sort(w.initial_tasks), np.arange(120))
    counts = np.bincount(w.initial_workers, minlength=8)
    assert counts.max() - counts.min() <= 1


def test_refresh_cadence_and_time_moves(small_scenario_path: Path) -> None:
    market = build_market(small_scenario_path)
    curve = market.run()
    edges = [p.edges for p in curve]
    assert edges[0] == 120 and edges[-1] == 600
    # A refresh every batch (40) labels: the steps are exactly the batch size.
    assert set(np.diff(edges)) == {40}
    times = [p.sim_time for p in curve]
    assert times[0] == 0.0 and all(b >= a for a, b in zip(times, times[1:], strict=False))
    assert times[-1] > 0


def test_arrivals_are_poisson_with_the_scenario_rate(tmp_path: Path) -> None:
    # No labelling time: every arrival of an idle worker is one label, so the label count over
    # the simulated time estimates the arrival rate.
    text = (Path(__file__).parents[1] / "conftest.py").read_text()
    scenario_text = text.split('SMALL_SCENARIO = """', 1)[1].split('"""', 1)[0]
    path = tmp_path / "rate.toml"
    path.write_text(scenario_text.format(service=0.0).replace("[workers.service]",
                    "[workers.arrivals]\nrate = 4.0\n[workers.service]"))
    market = build_market(path)
    curve = market.run()
    rate = (curve[-1].edges - curve[0].edges) / curve[-1].sim_time
    assert 3.4 < rate < 4.6


def test_error_falls_as_budget_is_spent(small_scenario_path: Path) -> None:
    curve = build_market(small_scenario_path).run()
    assert curve[-1].error_rate < curve[0].error_rate


def test_same_seed_same_curves_any_jobs(small_scenario_path: Path) -> None:
    sc = load_scenario(small_scenario_path)
    serial = canonical_rows(run_study(sc, jobs=1))
    again = canonical_rows(run_study(sc, jobs=1))
    parallel = canonical_rows(run_study(sc, jobs=2))
    assert serial == again == parallel
    other = canonical_rows(run_study(sc.with_overrides(seed=12)))
    assert other != serial


def test_arms_share_world_and_initial_labels(small_scenario_path: Path) -> None:
    a = build_market(small_scenario_path, arm=0)
    b = build_market(small_scenario_path, arm=1)
    assert np.array_equal(a.world.truth, b.world.truth)
    assert np.array_equal(a.world.initial_labels, b.world.initial_labels)
    assert a.run()[0].edges == b.run()[0].edges
