"""Every sentence report.md writes about its own statistics holds in the edge cases: one
replicate (no interval, no replicate pairs), an arm that never reaches a target, a target
reached in some replicates only, no replicate where both arms reached it."""

from __future__ import annotations

import re

import pytest

import marketsim
from marketsim.record.metric import ERROR_RATE
from marketsim.record.summary_model import ArmSummary, ReachInterval
from marketsim.report.comparison_text import key_results
from marketsim.report.results_text import reach_interval
from marketsim.scenario.arm_specs import ArmSpec

TINY = {
    "scenario": {"name": "edge", "seed": 1, "replicates": 1},
    "tasks": {"count": 30},
    "workers": {"count": 6, "ability": {"alpha": 2, "beta": 2}},
    "budget": {"edges": 90, "batch": 30},
    "arms": [{"name": "uniform", "policy": "uniform"},
             {"name": "entropy", "policy": "entropy-greedy"}],
}


def _specs(**policies: str) -> dict[str, ArmSpec]:
    """Arms by name, each running the named policy."""
    return {n: ArmSpec.model_validate({"name": n, "policy": p}) for n, p in policies.items()}


@pytest.fixture(scope="module")
def one_replicate(tmp_path_factory: pytest.TempPathFactory) -> str:
    """report.md of a one-replicate study whose arms reach neither target."""
    out = tmp_path_factory.mktemp("edge") / "run"
    marketsim.run(marketsim.scenario_from_dict(TINY), out=out, progress=False)
    return (out / "report.md").read_text(encoding="utf-8")


def test_one_replicate_claims_no_interval_band_or_comparison(one_replicate: str) -> None:
    report = one_replicate
    assert "95 % confidence band" not in report and "no confidence band" not in report
    assert "a confidence band needs at least two replicates, so none is drawn" in report
    assert "95 % confidence interval (Student" not in report
    assert "a confidence interval needs at least two replicates" in report
    assert "with its 95 % Student-t interval" not in report
    assert "**1 replicate world**" in report
    paired = report.split("## Paired comparisons")[1].split("\n## ")[0]
    assert "with one replicate there are no replicate pairs" in paired
    assert "paired t-interval in brackets" not in paired
    assert "**" not in paired.split("\n", 3)[3]  # nothing in bold: nothing detected
    assert not re.search(r"\[[-+]?\d", paired)  # no interval anywhere
    table = report.split("## Labels needed to reach")[1].split("\n## ")[0]
    assert table.count("not reached in its one replicate") == 4
    assert "0/1" not in table


def arm(reached: list[float | None], curve: float | None) -> ArmSummary:
    """A summary arm whose replicates reached the 5 % target after ``reached`` labels (None:
    never), its mean curve after ``curve``; 1 % is never reached."""
    done = [v for v in reached if v is not None]
    ci = {"mean": sum(done) / len(done) if done and len(done) == len(reached) else None,
          "low": None, "high": None, "n": len(done), "reached": len(done), "of": len(reached)}
    return ArmSummary.model_construct(
        replicates=len(reached), replicate_ids=list(range(len(reached))),
        edges_to_reach={"0.05": curve, "0.01": None},
        edges_to_reach_replicates={"0.05": reached, "0.01": [None] * len(reached)},
        edges_to_reach_ci95={"0.05": ReachInterval(**ci),
                             "0.01": ReachInterval(**{**ci, "mean": None, "reached": 0})},
        time_to_reach_replicates={}, time_to_reach_ci95={})


def test_reached_in_some_replicates_and_in_none_are_said_so() -> None:
    assert reach_interval(arm([100.0, None], 120.0), "0.05") == " (reached in 1 of 2 replicates)"
    assert reach_interval(arm([None, None], None), "0.05") == (
        " (not reached in any of the 2 replicates)")
    assert reach_interval(arm([None], None), "0.05") == " (not reached in its one replicate)"


def test_in_short_says_which_arms_never_reached_and_when_nothing_can_be_tested() -> None:
    """An arm that never reached a target is named as such, not 'not detectably different';
    no pair where both reached it means no test, not 'detectable with 0 replicates'."""
    specs = _specs(a="entropy-greedy", b="qasca", c="oracle")
    arms = {"a": arm([100.0, 140.0], 120.0), "b": arm([None, None], None)}
    lines = key_results(arms, specs, ["a", "b"], ERROR_RATE)
    assert lines[0] == ("- **5 % error**: only *a* reached it: 120 on average; *b* did not reach "
                        "it within the budget.")
    # both reached it in every replicate they ran, but they ran different replicates (a
    # partial run): no pair
    arms = {"a": arm([100.0, 140.0], 120.0),
            "c": arm([200.0, 200.0], 200.0).model_copy(update={"replicate_ids": [2, 3]})}
    text = key_results(arms, specs, ["a", "c"], ERROR_RATE)[0]
    assert "detectable with 0 replicates" not in text
    assert ("no difference from *c* (200) can be tested: a paired comparison needs two "
            "replicates where both reached it, and there were none") in text


def test_a_baseline_that_missed_the_target_is_named_once() -> None:
    """The uniform baseline missed the target: the sentence names it among the arms that did
    not reach it, and does not say so a second time."""
    specs = _specs(a="entropy-greedy", u="uniform")
    arms = {"a": arm([100.0, 140.0], 120.0), "u": arm([None, None], None)}
    line = key_results(arms, specs, ["a", "u"], ERROR_RATE)[0]
    assert line.count("*u*") == 1 and line.count("did not reach it") == 1, line


def test_one_replicate_plot_keeps_the_whole_curve_in_view() -> None:
    """With one replicate there is no interval: the y axis must still reach the curve's top."""
    from marketsim.report.plots import draw_error_vs_budget

    one = ArmSummary.model_construct(
        replicates=1, edges=[100, 200, 300], error=[0.4, 0.1, 0.02],
        error_low=[None] * 3, error_high=[None] * 3, plain_rmse=None,
        money=None, sim_time=None)
    fig, *_ = draw_error_vs_budget({"uniform": one}, scenario_name="one", n_tasks=100,
                                   targets=(0.05, 0.01))
    assert fig.axes[0].get_ylim()[1] >= 0.4
