"""Scenario validation: good files load with defaults; every bad value names its key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from marketsim.data.datasets import data_root
from marketsim.errors import InputError
from marketsim.policies.fixed_overlap import FixedOverlapPolicy
from marketsim.scenario.parser import load_scenario, parse_scenario, scenario_from_dict

ROOT = Path(__file__).resolve().parents[2]

BASE = {
    "tasks": {"count": 50},
    "workers": {"count": 5},
    "budget": {"edges": 100},
    "arms": [{"name": "u", "policy": "uniform"}],
}


def with_change(path: str, value: object) -> dict:
    """BASE with one dotted key set (a fresh deep copy)."""
    import copy

    data = copy.deepcopy(BASE)
    node = data
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
    node[keys[-1]] = value
    return data


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").rglob("*.toml")), ids=str)
def test_shipped_scenarios_load(path: Path) -> None:
    replay = tomllib.loads(path.read_text()).get("replay", {})
    if "dataset" in replay and data_root() is None:
        pytest.skip(f"{path.name} replays reference data, not found")
    scenario = load_scenario(path)
    assert scenario.arms
    assert scenario.budget.edges >= scenario.tasks.count or scenario.budget.initial == "none"


def test_defaults_are_filled_in() -> None:
    sc = parse_scenario(BASE, "x.toml")
    assert sc.tasks.classes == 2
    assert sc.tasks.prior == (0.5, 0.5)
    assert sc.workers.ability.alpha == 6.0 and sc.workers.ability.low == 0.1
    assert sc.budget.initial == "one-per-task"
    assert sc.arms[0].inference.method == "one-coin-shifted-beta"
    assert sc.to_dict()["workers"]["ability"]["beta"] == 2.0


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        ("workers.ability.alpha", -1, "workers.ability.alpha must be > 0"),
        ("workers.ability.low", 1.0, "workers.ability.low must be < 1"),
        ("tasks.count", 0, "tasks.count must be >= 1"),
        ("tasks.count", "many", "tasks.count must be an integer"),
        ("tasks.prior", [0.5, 0.6], "tasks.prior must sum to 1"),
        ("tasks.prior", [1.0], "tasks.prior must have 2 entries"),
        ("tasks.colour", "red", "tasks.colour is not a known key"),
        ("budget.edges", 10, "budget.edges must be >= tasks.count"),
        ("budget.edges", 10_000, "budget.edges must be <= tasks.count x workers.count"),
        ("budget.batch", 0, "budget.batch must be >= 1"),
        ("workers.model", "psychic", "workers.model must be one of"),
        ("workers.arrivals.rate", float("nan"), "workers.arrivals.rate must be a finite number"),
        ("arms.0.inference", "telepathy", "arms[0].inference.method must be one of"),
        ("arms.0.inference", {"method": "ds", "max_iter": 0}, "arms[0].inference.max_iter"),
        ("arms.0.colour", 1, "arms[0].colour is not a known key"),
        ("scenario.replicates", 0, "scenario.replicates must be >= 1"),
        ("scenario.seed", True, "scenario.seed must be an integer"),
    ],
)
def test_bad_values_name_the_key(path: str, value: object, needle: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(with_change(path, value), "bad.toml")
    message = str(info.value)
    assert message.startswith("bad.toml: ")
    assert needle in message
    assert "\n" not in message


def test_duplicate_arm_names_rejected() -> None:
    data = dict(BASE, arms=[{"name": "a", "policy": "uniform"}, {"name": "a", "policy": "oracle"}])
    with pytest.raises(InputError, match="arms\\[1\\].name must be a unique"):
        parse_scenario(data, "dup.toml")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_scenario(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[tasks\ncount = 3")
    with pytest.raises(InputError, match="invalid TOML"):
        load_scenario(broken)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8"):
        load_scenario(binary)


def _replay_doc(tmp_path: Path, policy: object) -> dict[str, object]:
    labels, truth = tmp_path / "labels.csv", tmp_path / "truth.csv"
    labels.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{(t + w) % 2}\n" for t in range(6) for w in range(3)))
    truth.write_text("task,truth\n" + "".join(f"t{t},{t % 2}\n" for t in range(6)))
    return {"scenario": {"name": "replay"},
            "replay": {"labels": str(labels), "truth": str(truth)},
            "arms": [{"name": "a", "policy": policy, "inference": "mv"}]}


@pytest.mark.parametrize("policy", ["fixed-overlap", "dynamic-overlap", "until-agreement"])
def test_a_platform_preset_in_a_replay_is_refused_at_parse(tmp_path: Path, policy: str) -> None:
    # Once a check inside the market (after the run folder existed); now the scenario's.
    spec = {"name": policy, **({"max_overlap": 3} if policy == "dynamic-overlap" else {})}
    with pytest.raises(InputError, match=rf"arms\[0\]\.policy .{policy}. closes tasks at an "
                       r"overlap the replayed file may not hold and needs a simulated crowd, "
                       r"not \[replay\]"):
        parse_scenario(_replay_doc(tmp_path, spec), str(tmp_path / "s.toml"))
    parse_scenario(_replay_doc(tmp_path, "uniform"), str(tmp_path / "s.toml"))


@pytest.mark.parametrize("policy", ["qasca", "explore-exploit", "oracle-workers",
                                    "known-workers"])
def test_other_worker_aware_policies_run_on_a_replay(tmp_path: Path, policy: str) -> None:
    # They choose among the tasks the arriving worker answered in the file (issue #40).
    scenario = parse_scenario(_replay_doc(tmp_path, policy), str(tmp_path / "s.toml"))
    assert scenario.arms[0].policy.name == policy


def test_a_platform_preset_object_in_a_replay_is_refused_too(tmp_path: Path) -> None:
    doc = _replay_doc(tmp_path, FixedOverlapPolicy())
    with pytest.raises(InputError, match=r"arms\[0\]\.policy .*needs a simulated crowd"):
        scenario_from_dict(doc, source=str(tmp_path / "s.toml"))
