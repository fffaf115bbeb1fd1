"""report.md's Setup, Policies and Inference methods sections say what ran, per arm, with the
numbers of the run's resolved scenario (issue #38, point 4): the platform fee and the price a
label really costs, an arm's own initial graph, every worker model's parameters (GLAD's
difficulty, task types, look-alikes), and each arm's own policy options and inference settings
instead of the options of arms sharing a policy merged into one line.

The sections are rendered from the resolved scenario (the typed ``Scenario`` ``run.json``
records), without running the market, for every shipped scenario; the fee is also checked
against a run's ``curves.csv``."""

from __future__ import annotations

import csv
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from marketsim.cli import main
from marketsim.data.datasets import data_root
from marketsim.policies.registry import POLICIES
from marketsim.record.metric import ERROR_RATE
from marketsim.report.arm_text import arm_specs, methods_section, policies_section
from marketsim.report.glossary import unlink_terms
from marketsim.report.setup_text import setup_section
from marketsim.scenario.parser import load_scenario, parse_scenario
from marketsim.scenario.specs import Scenario

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.toml")) + sorted(
    (ROOT / "scenarios").glob("*/*.toml"))


def sections(scenario: Scenario) -> tuple[str, str, str]:
    """(Setup, Policies, Inference methods) of the report of ``scenario``'s run."""
    summary = SimpleNamespace(seed=scenario.seed, replicates=scenario.replicates)
    specs = arm_specs(scenario)
    names = [arm.name for arm in scenario.arms]
    return ("\n".join(setup_section(scenario, summary)),  # type: ignore[arg-type]
            "\n".join(policies_section(names, specs)),
            "\n".join(methods_section(names, specs, ERROR_RATE)))


def policy_block(policies: str, policy: str) -> list[str]:
    """The lines of the Policies section under the policy's heading."""
    block = policies.split(f"### `{policy}`\n", 1)[1].split("\n### ", 1)[0]
    return block.splitlines()


def options_of(policies: str, policy: str, arm: str) -> str:
    """The text giving ``arm``'s options: its own line if its block has one per arm (with the
    line of the options every arm there shares), else the block's one options line."""
    lines = policy_block(policies, policy)
    own = [ln for ln in lines if ln.startswith(f"- *{arm}*")]
    if own:
        return " ".join(own + [ln for ln in lines if ln.startswith("- every arm")])
    return " ".join(ln for ln in lines if ln.startswith("Options"))


def option_values(scenario: Scenario, policy: str) -> dict[str, dict[str, Any]]:
    """Each arm of ``policy``: the value of every option an arm of that policy sets (the
    policy's default for the arms that do not set it)."""
    arms = [a for a in scenario.arms if a.policy.name == policy]
    keys = {k for a in arms for k in a.policy.options}
    model = POLICIES[policy].Options if policy in POLICIES else None
    out = {}
    for arm in arms:
        values = {}
        for key in keys:
            if key in arm.policy.options:
                values[key] = arm.policy.options[key]
            elif model is not None:
                values[key] = model.model_fields[key].default
        out[arm.name] = values
    return out


def model_numbers(scenario: Scenario) -> list[str]:
    """Words the worker model's parameters must appear as."""
    w = scenario.workers
    model = w.model
    out = []
    if model == "spammer-hammer":
        out.append(f"{w.spammer_hammer.hammer_fraction:g}")
    if model in ("one-coin", "glad") and not (model == "glad" and w.glad.alpha):
        ab = w.ability
        out.append(f"Beta({ab.alpha:g}, {ab.beta:g})")
    if model == "glad":
        out.append(f"{w.glad.sigma:g}" if w.glad.difficulty == "lognormal"
                   else f"{w.glad.shape:g}")
    if model == "confusion":
        conf = w.confusion
        if conf.design == "diagonal-uniform":
            out.append(f"[{conf.low:g}, {conf.high:g}]")
        if conf.design == "dirichlet":
            out += [f"{conf.concentration:g}", f"{conf.diagonal_weight:g}"]
        if conf.type_matrices is not None:
            out.append(f"{len(conf.type_matrices)} types")
    if model in ("confusion", "communities"):
        effects = getattr(w, model)
        if effects.sigma:
            out.append(f"{effects.sigma:g}")
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_shipped_scenarios_describe_each_arm_and_every_mechanic(path: Path) -> None:
    replay = tomllib.loads(path.read_text()).get("replay", {})
    if "dataset" in replay and data_root() is None:
        pytest.skip(f"{path.name} replays reference data, not found")
    scenario = load_scenario(path)
    setup, policies, methods = sections(scenario)
    text = "\n".join((setup, policies, methods))
    assert "see the scenario" not in text
    # each arm's policy options with its own values (not another arm's)
    for policy in {a.policy.name for a in scenario.arms}:
        for arm, values in option_values(scenario, policy).items():
            shown = options_of(policies, policy, arm)
            for key, value in values.items():
                assert f"`{key} = {value!r}`" in shown, (arm, key, value, shown)
    # arms of one method with different settings are not merged into one line
    for a in scenario.arms:
        for b in scenario.arms:
            if a.inference.method == b.inference.method and a.inference != b.inference:
                line = next(ln for ln in methods.splitlines() if a.name in ln
                            and ln.startswith("- "))
                assert re.search(rf"[:,] {re.escape(b.name)}[.,]", line) is None, line
    # the price a label costs the requester, fee included
    fee = scenario.budget.fee
    if fee:
        prices = scenario.workers.tiers.prices if scenario.workers.tiers else (
            scenario.workers.price,)
        for price in prices:
            assert f"{price * (1 + fee):.2f}" in setup
        assert f"{100 * fee:g} %" in setup
    # an arm's own initial graph is named with the arm
    initials = {a.initial_graph(scenario.budget) for a in scenario.arms}
    if len(initials) > 1:
        for arm in scenario.arms:
            assert f"*{arm.name}*" in setup
    if scenario.replay is None:
        for words in model_numbers(scenario):
            assert words in setup, words
    else:
        assert "replays" in setup and "Beta(" not in setup
    if scenario.scenario.engine == "blocks":
        assert "blocks" in setup


def scenario_of(text: str) -> Scenario:
    return parse_scenario(tomllib.loads(text), "s.toml")


BASE = """
[scenario]
name = "s"
replicates = 2
[tasks]
count = 40
[workers]
count = 10
{workers}
[budget]
edges = 200
batch = 40
{budget}
{arms}
"""


def make(workers: str = "", budget: str = "", arms: str = "") -> Scenario:
    arms = arms or '[[arms]]\nname = "u"\npolicy = "uniform"\n'
    return scenario_of(BASE.format(workers=workers, budget=budget, arms=arms))


def test_the_fee_inclusive_price_is_the_one_curves_csv_charges(tmp_path: Path) -> None:
    """The text said a label costs 2 while curves.csv charged 2.50 (a 25 % fee)."""
    text = BASE.format(workers="price = 2.0", budget="fee = 0.25",
                       arms='[[arms]]\nname = "u"\npolicy = "uniform"\n')
    (tmp_path / "s.toml").write_text(text)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"),
                 "--quiet", "--no-figures"]) == 0
    with (tmp_path / "run" / "curves.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    per_label = {round(float(r["money"]) / float(r["edges"]), 9) for r in rows}
    assert per_label == {2.5}
    report = unlink_terms((tmp_path / "run" / "report.md").read_text())
    setup = report.split("## Setup", 1)[1].split("\n## ", 1)[0]
    assert "costs the requester 2.50" in setup and "25 %" in setup
    assert "costs 2." not in setup


def test_tier_prices_show_the_fee_and_the_money_budget_counts_it() -> None:
    setup, _, _ = sections(make(
        workers="[workers.tiers]\ncuts = [0.8]\nprices = [1.0, 3.0]",
        budget="fee = 0.1\nmoney = 300\nmin_price = 0.5"))
    assert "tier 0 (score below 0.8) 1 (1.10 with the fee)" in setup
    assert "tier 1 (score 0.8 or more) 3 (3.30 with the fee)" in setup
    assert "the fee and gold included" in setup
    assert "minimum price of a label is 0.5" in setup


def test_an_arms_own_initial_graph_is_named_with_the_arm() -> None:
    scenario = make(arms='[[arms]]\nname = "warm"\npolicy = "uniform"\n'
                         '[[arms]]\nname = "cold"\npolicy = "uniform"\ninitial = "none"\n')
    setup, _, _ = sections(scenario)
    assert "*warm* starts where every task first gets one label" in setup
    assert "*cold* starts where no labels are given before the policy starts" in setup


def test_glad_difficulty_is_given_with_its_numbers() -> None:
    lognormal, _, _ = sections(make(workers='model = "glad"\n[workers.glad]\nsigma = 0.5'))
    assert "log β ~ N(0, sigma²) with sigma = 0.5" in lognormal and "Beta(6, 2)" in lognormal
    gamma, _, _ = sections(make(workers='model = "glad"\n[workers.glad]\n'
                                        'difficulty = "gamma"\nshape = 3.0'))
    assert "with shape = 3" in gamma and "see the scenario" not in gamma
    flat, _, _ = sections(make(workers='model = "glad"\n[workers.glad]\nsigma = 0.0'))
    assert "every task equally hard" in flat
    alphas = ", ".join(str(a) for a in (-1.0, 0.5, 1.5, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 3.0))
    given, _, _ = sections(make(workers=f'model = "glad"\n[workers.glad]\nalpha = [{alphas}]'))
    assert "given in the scenario (10 values from -1 to 3)" in given and "Beta(" not in given


def test_task_types_and_lookalikes_are_described() -> None:
    eye = "[[0.9, 0.1], [0.2, 0.8]]"
    mats = ", ".join([eye] * 10)
    other = ", ".join(["[[0.6, 0.4], [0.4, 0.6]]"] * 10)
    setup, _, _ = sections(make(workers=(
        'model = "confusion"\n[workers.confusion]\ndesign = "per-worker"\n'
        f"type_shares = [[0.25, 0.75]]\ntype_matrices = [[{mats}], [{other}]]\n"
        "lookalike = [[0.9, 0.1], [0.0, 1.0]]\nsigma = 0.7")))
    assert "Tasks come in 2 types" in setup and "25 %, 75 % for every class" in setup
    assert "type 1 0.850, type 2 0.600" in setup
    assert "class 1 as class 1 90 %, class 2 10 %" in setup
    assert "sigma = 0.7" in setup


def test_arms_sharing_a_policy_keep_their_own_options() -> None:
    """Overlap 2 and 4 were reported as one ``overlap = 4``."""
    scenario = make(arms=(
        '[[arms]]\nname = "two"\npolicy = { name = "fixed-overlap", overlap = 2 }\n'
        '[[arms]]\nname = "four"\npolicy = { name = "fixed-overlap", overlap = 4 }\n'))
    _, policies, _ = sections(scenario)
    assert "- *two*: `overlap = 2`" in policies
    assert "- *four*: `overlap = 4`" in policies


def test_lesson_5_reports_its_one_difference() -> None:
    """Both arms were given ``min_tier = 1``, erasing the lesson's one difference."""
    scenario = load_scenario(ROOT / "scenarios" / "teaching" / "05_prices_and_tiers.toml")
    _, policies, _ = sections(scenario)
    assert "- *everyone*: `min_tier = 0`" in policies
    assert "- *qualified only*: `min_tier = 1`" in policies


def test_inference_settings_of_each_arm_are_kept_apart() -> None:
    scenario = make(arms=(
        '[[arms]]\nname = "short"\npolicy = "uniform"\n'
        'inference = { method = "ds", max_iter = 10 }\n'
        '[[arms]]\nname = "long"\npolicy = "uniform"\n'
        'inference = { method = "ds", max_iter = 50 }\n'))
    _, _, methods = sections(scenario)
    lines = [ln for ln in methods.splitlines() if ln.startswith("- `ds`")]
    assert len(lines) == 2
    assert any("`max_iter = 10`" in ln and ln.endswith("Arms: short.") for ln in lines)
    assert any("`max_iter = 50`" in ln and ln.endswith("Arms: long.") for ln in lines)


def test_communities_are_given_with_their_shares_and_concentration() -> None:
    setup, _, _ = sections(make(workers=(
        'model = "communities"\n[workers.communities]\n'
        "confusion = [[[0.9, 0.1], [0.1, 0.9]], [[0.5, 0.5], [0.5, 0.5]]]\n"
        "weights = [3.0, 1.0]\nconcentration = 40.0")))
    assert "2 communities" in setup and "75 %, 25 %" in setup
    assert "0.900, 0.500" in setup and "Dirichlet(40 ×" in setup


def test_the_ability_prior_of_each_arm_is_given_with_its_numbers() -> None:
    scenario = make(
        workers="[workers.ability]\nalpha = 4.0\nbeta = 3.0\nlow = 0.2",
        arms=('[[arms]]\nname = "scenario prior"\npolicy = "uniform"\n'
              'inference = "one-coin-shifted-beta"\n'
              '[[arms]]\nname = "own prior"\npolicy = "uniform"\n'
              'inference = { method = "one-coin-shifted-beta", alpha = 9.0 }\n'))
    specs = arm_specs(scenario)
    methods = "\n".join(methods_section(list(specs), specs, ERROR_RATE, scenario))
    line = next(ln for ln in methods.splitlines() if ln.endswith("Arms: scenario prior."))
    assert "alpha = 4, beta = 3, low = 0.2 (the scenario's" in line
    line = next(ln for ln in methods.splitlines() if ln.endswith("Arms: own prior."))
    assert "alpha = 9, beta = 3, low = 0.2 (alpha set by the arm" in line


def test_an_arms_own_gold_is_not_said_to_be_every_arms() -> None:
    scenario = make(
        budget="[gold]\ncount = 5\nrate = 0.1",
        arms=('[[arms]]\nname = "shared"\npolicy = "uniform"\n'
              '[[arms]]\nname = "strict"\npolicy = "uniform"\n'
              "gold = { count = 8, rate = 0.3 }\nblocking = { after = 2, min_accuracy = 0.7 }\n"))
    setup, _, _ = sections(scenario)
    assert "For every arm:" not in setup
    assert "For every other arm: 5 gold (control) questions" in setup
    assert "Arm *strict* has its own rule: 8 gold (control) questions" in setup
    assert "less than 70 % correct after 2" in setup
