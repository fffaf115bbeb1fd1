"""Python reaches every study (issue #38, point 12): a scenario with a ``[sweep]`` runs point by
point (``replace(sweep=None)``, ``without_sweep()``), as a whole (``marketsim.sweep``) and in the
notebook explorer; ``compare`` draws every run down to its own error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import marketsim
from marketsim.errors import InputError

SWEEP_TOML = """
[scenario]
name = "api sweep"
seed = 11
replicates = 2

[tasks]
count = 60

[workers]
count = 8

[budget]
edges = 240
batch = 60

[sweep]
"workers.count" = [5, 9]

[[arms]]
name = "uniform"
policy = "uniform"
"""


def sweep_scenario(tmp_path: Path) -> marketsim.Scenario:
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP_TOML, encoding="utf-8")
    return marketsim.load_scenario(path)


@pytest.mark.parametrize("change", [{"sweep": None}, {"sweep": {}}])
def test_replace_without_a_grid_removes_the_sweep(tmp_path: Path, change: dict) -> None:
    sc = sweep_scenario(tmp_path)
    assert sc.sweep
    plain = sc.replace(change)
    assert not plain.sweep and not sc.without_sweep().sweep
    assert plain.workers.count == 8 and "sweep" not in plain.document()
    point = sc.without_sweep().replace({"workers.count": 9})
    result = marketsim.run(point, progress=False)
    assert result.summary.arms["uniform"].edges[-1] == 240


def test_run_refusal_names_a_way_that_works(tmp_path: Path) -> None:
    sc = sweep_scenario(tmp_path)
    with pytest.raises(InputError) as info:
        marketsim.run(sc, progress=False)
    message = str(info.value)
    assert "without_sweep()" in message and "marketsim.sweep(scenario)" in message


def test_sweep_runs_a_sweep_scenarios_own_grid(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    sc = sweep_scenario(tmp_path)
    frame = marketsim.sweep(sc)
    assert list(frame["workers.count"]) == [5, 9]
    again = marketsim.run(sc.without_sweep().replace({"workers.count": 9}), progress=False)
    assert frame["final_error"].iloc[1] == again.summary.arms["uniform"].final_error_mean
    other = marketsim.sweep(sc, {"budget.edges": [120]})  # a grid given replaces the scenario's
    assert list(other["budget.edges"]) == [120] and "workers.count" not in other.columns


def test_explore_a_sweep_scenario(tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    from marketsim.widgets import explore

    explorer = explore(sweep_scenario(tmp_path), key="workers.count", values=[5, 9])
    explorer.slider.value = 1
    assert explorer.result.scenario.workers.count == 9 and not explorer.result.scenario.sweep


SMALL = {
    "scenario": {"name": "floor", "seed": 4, "replicates": 2},
    "tasks": {"count": 20},
    "workers": {"count": 10},
    "budget": {"edges": 200, "batch": 20},
    "arms": [{"name": "uniform", "policy": "uniform"}],
}


def test_compare_draws_every_run_at_the_lowest_floor() -> None:
    import matplotlib.pyplot as plt

    few = marketsim.run(marketsim.scenario_from_dict(SMALL), progress=False)
    many_tasks = marketsim.scenario_from_dict(SMALL).replace(
        {"tasks.count": 400, "budget.edges": 4000, "budget.batch": 400})
    many = marketsim.run(many_tasks, progress=False)
    try:
        for order in ((few, many), (many, few)):
            ax = marketsim.compare(*order, names=["a", "b"])
            drawn = {line.get_label(): np.asarray(line.get_ydata(), dtype=float)
                     for line in ax.get_lines() if "(n=" in str(line.get_label())}
            for label, result in zip(("a", "b"), order, strict=True):
                mean = np.asarray(result.summary.arms["uniform"].error, dtype=float)
                shown = drawn[f"{label}: uniform (n=2)"]
                # the floor is half of one task's error of the run with the most tasks
                assert np.allclose(shown, np.maximum(mean, 0.5 / 400))
            low = min(many.summary.arms["uniform"].error)
            assert low < 0.5 / 20  # the case the first run's floor hid
    finally:
        plt.close("all")
