"""The notebook explorer (``marketsim.widgets.explore``, the ``notebook`` extra): moving its
slider re-runs the scenario at the new value and redraws the figure."""

from __future__ import annotations

import sys

import pytest

from marketsim import scenario_from_dict
from marketsim.errors import InputError

pytest.importorskip("ipywidgets", reason="the 'notebook' extra (ipywidgets) is not installed")

from marketsim.widgets import explore  # noqa: E402 - after the extra's check

SMALL = {
    "scenario": {"name": "widget test", "seed": 3, "replicates": 2},
    "tasks": {"count": 40},
    "workers": {"count": 6},
    "budget": {"edges": 160, "batch": 20},
    "arms": [{"name": "uniform", "policy": "uniform"},
             {"name": "adaptive", "policy": "entropy-greedy"}],
}


def test_moving_the_slider_reruns_and_redraws() -> None:
    explorer = explore(scenario_from_dict(SMALL), key="budget.edges", values=[80, 160])
    first_png, first = bytes(explorer.image.value), explorer.result
    assert first_png.startswith(b"\x89PNG") and first.summary.arms["uniform"].edges[-1] == 80
    explorer.slider.value = 1  # what dragging the slider to "160" does
    second = explorer.result
    assert second.scenario.budget.edges == 160
    assert second.summary.arms["uniform"].edges[-1] == 160
    assert bytes(explorer.image.value) != first_png  # the figure was redrawn with the new study
    assert "adaptive" in explorer.caption.value and "uniform" in explorer.caption.value
    explorer.slider.value = 0  # back: the study of that value again, not a new run
    assert explorer.result is first and bytes(explorer.image.value) == first_png


def test_an_arm_setting_and_bad_input() -> None:
    explorer = explore(scenario_from_dict(SMALL), key="arms.adaptive.policy", values=[
        "entropy-greedy", "uniform"], replicates=1)
    explorer.slider.value = 1
    assert explorer.result.scenario.arms[1].policy.name == "uniform"
    with pytest.raises(InputError, match="x must be"):
        explore(scenario_from_dict(SMALL), key="budget.edges", values=[80], x="cost")
    with pytest.raises(InputError, match="at least one value"):
        explore(scenario_from_dict(SMALL), key="budget.edges", values=[])


def test_without_ipywidgets_one_line_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # as if it were not installed
    with pytest.raises(ModuleNotFoundError) as info:
        explore(scenario_from_dict(SMALL), key="budget.edges", values=[80])
    assert "marketsim[notebook]" in str(info.value) and "\n" not in str(info.value)
