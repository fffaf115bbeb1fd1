"""Worker models, initial graphs and real-data replay inside the market."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation.registry import make_estimator
from marketsim.errors import SimulationError
from marketsim.market.inference import estimator_factory
from marketsim.market.market import Market
from marketsim.market.replay import replay_world
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.replay import load_replay
from marketsim.study.runner import market_setup, run_unit
from marketsim.study.seeds import initial_graph_rng, unit_streams, world_rng

ROOT = Path(__file__).resolve().parents[2]
ZHANG = Path(os.environ.get("MARKETSIM_DATA", ROOT.parent / "shared" / "data" / "zhang2014"))


def scenario(**workers: object) -> dict:
    return {
        "scenario": {"seed": 3},
        "tasks": {"count": 400, "classes": 3, "prior": [0.5, 0.3, 0.2]},
        "workers": {"count": 20, **workers},
        "budget": {"edges": 4000, "batch": 400},
        "arms": [{"name": "ds", "policy": "uniform",
                  "inference": {"method": "ds", "class_prior": "estimate"}}],
    }


def test_diagonal_uniform_confusion_rows_and_answers() -> None:
    sc = parse_scenario(scenario(model="confusion", confusion={"low": 0.5, "high": 0.8}), "x")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    conf = world.confusion
    assert conf.shape == (20, 3, 3)
    assert np.allclose(conf.sum(axis=2), 1.0)
    diag = np.einsum("jcc->jc", conf)
    assert diag.min() >= 0.5 and diag.max() <= 0.8
    # Off-diagonal mass is spread evenly over the wrong classes.
    off = conf[:, 0, 1:]
    assert np.allclose(off[:, 0], off[:, 1])


def test_dirichlet_answers_follow_the_confusion_matrices() -> None:
    sc = parse_scenario(
        scenario(model="confusion", confusion={"design": "dirichlet", "diagonal_weight": 3.0}),
        "x",
    )
    unit_world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    market = Market(
        market_setup(sc), unit_world, make_policy("uniform", {}),
        estimator_factory(sc.crowd, sc.arms[0].inference),
        unit_streams(sc.seed, 0, 0), keep_graph=False,
    )
    market.run()
    lab = market.log.view()
    truth = unit_world.truth[lab.tasks]
    # Pooled over workers, the answer frequencies match the mean confusion row per class.
    for c in range(3):
        sel = truth == c
        observed = np.bincount(lab.labels[sel], minlength=3) / sel.sum()
        expected = unit_world.confusion[lab.workers[sel], c].mean(axis=0)
        assert np.allclose(observed, expected, atol=0.04)


def test_spammer_hammer_hammers_are_always_right() -> None:
    sc = parse_scenario(scenario(model="spammer-hammer", spammer_hammer={"hammer_fraction": 0.4}),
                        "x")
    world = draw_world(sc.crowd, world_rng(sc.seed, 1))
    acc = np.einsum("jcc->jc", world.confusion)[:, 0]
    assert set(np.round(acc, 6)) <= {1.0, round(1 / 3, 6)}
    hammers = acc == 1.0
    assert 0 < hammers.sum() < 20
    ok = world.initial_labels == world.truth[world.initial_tasks]
    assert ok[hammers[world.initial_workers]].all()


def test_bernoulli_initial_graph_density_and_budget() -> None:
    data = scenario(model="confusion")
    data["budget"] = {"edges": 3000, "initial": "bernoulli", "initial_probability": 0.25}
    sc = parse_scenario(data, "x")
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    n = world.initial_tasks.size
    assert abs(n - 0.25 * 400 * 20) < 4 * np.sqrt(400 * 20 * 0.25 * 0.75)
    pairs = world.initial_tasks * 20 + world.initial_workers
    assert np.unique(pairs).size == pairs.size
    data["budget"]["edges"] = 1000  # fewer than the draw: trimmed, never overspent
    small = parse_scenario(data, "x")
    assert draw_world(small.crowd, world_rng(small.seed, 0)).initial_tasks.size == 1000


def test_per_arm_initial_graph_shares_the_world() -> None:
    data = scenario(model="confusion")
    data["budget"] = {"edges": 2000, "initial": "bernoulli", "initial_probability": 0.2}
    data["arms"].append({"name": "policy", "policy": "uniform", "initial": "one-per-task"})
    sc = parse_scenario(data, "x")
    a = run_unit(sc, 0, 0)
    b = run_unit(sc, 0, 1)
    assert a.rows[0].edges >= 1500  # the Bernoulli graph, about 1,600 labels
    assert b.rows[0].edges == 400  # one label per task
    assert a.rows[-1].edges == b.rows[-1].edges == 2000
    w1 = draw_world(sc.crowd, world_rng(sc.seed, 0), "one-per-task",
                    initial_graph_rng(sc.seed, 0, "one-per-task"))
    w2 = draw_world(sc.crowd, world_rng(sc.seed, 0))
    assert np.array_equal(w1.truth, w2.truth) and np.array_equal(w1.confusion, w2.confusion)


def test_confusion_error_falls_for_dawid_skene() -> None:
    sc = parse_scenario(scenario(model="confusion"), "x")
    rows = run_unit(sc, 0, 0).rows
    assert rows[-1].confusion_error < rows[0].confusion_error


@pytest.mark.skipif(not (ZHANG / "rte_crowd.txt").is_file(), reason="RTE data not available")
def test_replay_hands_out_only_real_answers_and_ends_on_the_whole_file() -> None:
    data = {
        "scenario": {"seed": 5},
        "replay": {"dataset": "rte", "data_dir": str(ZHANG)},
        "budget": {"batch": 500},
        "arms": [
            {"name": "uniform", "policy": "uniform",
             "inference": {"method": "ds", "class_prior": "estimate"}},
            {"name": "entropy", "policy": "entropy-greedy",
             "inference": {"method": "ds", "class_prior": "estimate"}},
        ],
    }
    sc = parse_scenario(data, str(ROOT / "inline.toml"))
    assert (sc.tasks.count, sc.workers.count, sc.budget.edges) == (800, 164, 8000)
    replay = load_replay(sc.replay)
    real = dict(zip(replay.pair_keys.tolist(), replay.labels.labels.tolist(), strict=True))
    whole = make_estimator("ds", class_prior=None).fit(replay.labels)
    whole_error = float(np.mean(whole.labels_ != replay.truth))
    for arm in (0, 1):
        world = replay_world(replay, "one-per-task", 2, np.asarray(sc.tasks.prior),
                             initial_graph_rng(sc.seed, 0, "one-per-task"))
        market = Market(
            market_setup(sc), world, make_policy(sc.arms[arm].policy.name, {}),
            estimator_factory(sc.crowd, sc.arms[arm].inference), unit_streams(sc.seed, 0, arm),
            keep_graph=False, replay=replay,
        )
        curve = market.run()
        lab = market.log.view()
        keys = (lab.tasks * lab.n_workers + lab.workers).tolist()
        assert len(set(keys)) == len(keys) == 8000
        assert all(real[k] == z for k, z in zip(keys, lab.labels.tolist(), strict=True))
        assert curve[-1].edges == 8000
        assert curve[-1].error_rate == pytest.approx(whole_error, abs=1e-12)


def test_replay_errors_name_the_key(tmp_path: Path) -> None:
    from marketsim.errors import InputError

    base = {"arms": [{"name": "u", "policy": "uniform"}]}
    with pytest.raises(InputError, match="replay.dataset give either"):
        parse_scenario({**base, "replay": {}}, str(tmp_path / "s.toml"))
    with pytest.raises(InputError, match="unknown dataset 'nope'"):
        parse_scenario({**base, "replay": {"dataset": "nope", "data_dir": str(tmp_path)}},
                       str(tmp_path / "s.toml"))


def test_an_empty_initial_graph_starts_with_one_refresh_at_zero_labels() -> None:
    """``initial = "none"``: the first refresh sees no labels (it used to be triggered twice
    and crash every market)."""
    data = scenario()
    data["budget"] = {"edges": 800, "batch": 400, "initial": "none"}
    sc = parse_scenario(data, "x")
    rows = run_unit(sc, 0, 0).rows
    assert [r.edges for r in rows] == [0, 400, 800]
    assert rows[-1].error_rate < rows[0].error_rate


def test_every_worker_model_is_registered_with_its_facts() -> None:
    """Every discovered worker model selects itself by name; each draws worlds that carry it
    with its options, and its facts say what its labels and headline error are."""
    from marketsim.scenario.crowd_specs import WORKER_MODEL_NAMES
    from marketsim.workers.registry import WORKER_MODELS

    assert tuple(WORKER_MODELS) == WORKER_MODEL_NAMES
    for name, cls in WORKER_MODELS.items():
        assert cls.name == name and cls.default_method in cls.methods
        assert (cls.labels, cls.metric) in {("classes", "error_rate"), ("scores", "rmse")}
        doc = scenario(model=name)
        if cls.table is not None and cls.example:
            doc["workers"][cls.table] = dict(cls.example)
        if cls.scores:
            doc["tasks"] = {"count": 400}
            doc["arms"][0]["inference"] = cls.default_method
        sc = parse_scenario(doc, "x")
        assert sc.worker_model is cls
        world = draw_world(sc.crowd, world_rng(sc.seed, 0))
        assert type(world.model) is cls and world.model.options == sc.workers.options
        assert (world.initial_scores is not None) == cls.scores
        answers = world.model.answers(world, sc.tasks.classes, np.random.default_rng(0))
        label, score = answers.answer(0, 0)
        assert 0 <= label < sc.tasks.classes and (score is not None) == cls.scores


def _sparse_replay(tmp_path: Path) -> dict:
    """A tiny replay file where each worker answered only some tasks: workers 0-2 always
    right, 3-5 right on every third task; worker j skips the tasks with (task + j) % 3 == 0."""
    rows = [f"t{i},w{j},{i % 2 if j < 3 or i % 3 == 0 else 1 - i % 2}" for i in range(30)
            for j in range(6) if (i + j) % 3]
    (tmp_path / "labels.csv").write_text("task,worker,label\n" + "\n".join(rows) + "\n")
    (tmp_path / "truth.csv").write_text("task,label\n" + "".join(f"t{i},{i % 2}\n"
                                                                 for i in range(30)))
    return {"scenario": {"seed": 4},
            "replay": {"labels": str(tmp_path / "labels.csv"),
                       "truth": str(tmp_path / "truth.csv")},
            "budget": {"edges": 100, "batch": 10}}


@pytest.mark.parametrize("policy", [{"name": "qasca"}, {"name": "explore-exploit"}])
def test_a_worker_aware_policy_on_a_replay_gets_only_the_files_answers(
        tmp_path: Path, policy: dict) -> None:
    # Issue #40: adaptive designs against replay. The policy chooses per arriving worker among
    # the tasks that worker answered in the file. The budget needs the poor workers' answers:
    # explore-exploit declines them only while a good worker has an answer of the file left
    # (else the market would be stuck, every worker declined).
    document = {**_sparse_replay(tmp_path), "arms": [
        {"name": "a", "policy": policy, "inference": {"method": "ds"}}]}
    sc = parse_scenario(document, str(tmp_path / "s.toml"))
    replay = load_replay(sc.replay)
    real = dict(zip(replay.pair_keys.tolist(), replay.labels.labels.tolist(), strict=True))
    world = replay_world(replay, "one-per-task", 2, np.asarray(sc.tasks.prior),
                         initial_graph_rng(sc.seed, 0, "one-per-task"))
    market = Market(market_setup(sc), world, make_policy(policy["name"], {}),
        estimator_factory(sc.crowd, sc.arms[0].inference), unit_streams(sc.seed, 0, 0),
        keep_graph=False, replay=replay)
    curve = market.run()
    lab = market.log.view()
    keys = (lab.tasks * lab.n_workers + lab.workers).tolist()
    assert len(set(keys)) == len(keys) == 100 == curve[-1].edges
    assert all(real[k] == z for k, z in zip(keys, lab.labels.tolist(), strict=True))


def test_a_worker_aware_replay_that_abandoned_its_last_answers_says_so(tmp_path: Path) -> None:
    # An abandoned hand-out is never offered to its worker again, and only they hold the
    # file's answer: a budget of the whole file cannot be bought, and the error says why.
    document = {**_sparse_replay(tmp_path), "arms": [
        {"name": "a", "policy": "qasca", "inference": "mv"}]}
    document["budget"] = {"edges": 120, "batch": 10}
    document["workers"] = {"service": {"mean": 1.0, "abandon": 0.3}}
    sc = parse_scenario(document, str(tmp_path / "s.toml"))
    with pytest.raises(SimulationError, match="the replayed file has no answer left from any "
                       "of them"):
        run_unit(sc, 0, 0)


def test_uniform_on_a_replay_gives_every_task_its_share_within_one(tmp_path: Path) -> None:
    # Uniform's even rounds hold on a replay as in a simulated crowd (a pass hands every task
    # out once, across refits; a worker with no answer left among the pass's tasks waits), so a
    # twin and a replay of its file buy the same design (issue #40, point 4). The file's four
    # answers a task allow 3 or 4 labels each for 100; the rare worker 5 is needed; a refit
    # every 7 labels cuts each pass of 30.
    document = {**_sparse_replay(tmp_path), "arms": [
        {"name": "u", "policy": "uniform", "inference": "mv"}]}
    document["budget"] = {"edges": 100, "batch": 7}
    document["workers"] = {"arrivals": {"weights": [5, 5, 5, 5, 5, 1]}}
    sc = parse_scenario(document, str(tmp_path / "s.toml"))
    replay = load_replay(sc.replay)
    for replicate in range(3):
        world = replay_world(replay, "one-per-task", 2, np.asarray(sc.tasks.prior),
                             initial_graph_rng(sc.seed, replicate, "one-per-task"))
        market = Market(market_setup(sc), world, make_policy("uniform", {}),
                        estimator_factory(sc.crowd, sc.arms[0].inference),
                        unit_streams(sc.seed, replicate, 0), keep_graph=False, replay=replay)
        assert market.run()[-1].edges == 100
        per_task = np.bincount(market.log.view().tasks, minlength=30)
        assert per_task.min() == 3 and per_task.max() == 4
