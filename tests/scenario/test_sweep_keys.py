"""``[sweep]`` over any scenario key: an arm's policy and inference options by arm name or
index, each key checked against the schema (one line, did-you-mean), every point validated."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.specs import Scenario
from marketsim.scenario.sweep import expand
from marketsim.scenario.sweep_keys import key_path
from marketsim.scenario.toml_out import dumps

BASE = """
[tasks]
count = 20
[workers]
count = 5
[budget]
edges = 60
batch = 10
[[arms]]
name = "uniform + prior"
policy = "uniform"
inference = "one-coin"
[[arms]]
name = "adaptive"
policy = "random-forest"
"""
ARMS = ["uniform + prior", "adaptive"]


def scenario(sweep: str) -> object:
    return parse_scenario(tomllib.loads(BASE + "[sweep]\n" + sweep), "s.toml")


def test_arm_keys_by_name_and_index_reach_the_specs() -> None:
    points = expand(scenario('"arms.adaptive.policy.n_trees" = [3, 7]\n'
                             '"arms[0].inference.max_iter" = [10, 50]\n'))
    got = [(dict(p.arms[1].policy.options)["n_trees"], p.arms[0].inference.options.max_iter)
           for p in points]
    assert got == [(3, 10), (3, 50), (7, 10), (7, 50)]
    # The string forms became tables: the policy name and the method are kept.
    assert {p.arms[1].policy.name for p in points} == {"random-forest"}
    assert {p.arms[0].inference.method for p in points} == {"one-coin"}
    assert points[0].sweep_point == (("arms.adaptive.policy.n_trees", 3),
                                      ("arms[0].inference.max_iter", 10))


def test_an_arm_name_with_spaces_and_the_policy_itself_can_be_swept() -> None:
    points = expand(scenario('"arms.uniform + prior.policy" = ["uniform", "entropy-greedy"]\n'
                             'arms.adaptive.inference.method = ["mv", "ds"]\n'))
    assert [(p.arms[0].policy.name, p.arms[1].inference.method) for p in points] == [
        ("uniform", "mv"), ("uniform", "ds"), ("entropy-greedy", "mv"), ("entropy-greedy", "ds")]


def test_the_longest_matching_arm_name_wins() -> None:
    assert key_path("arms.a.b.policy", ["a", "a.b"], Scenario, "s") == ("arms", 1, "policy")
    assert key_path("arms.a.policy", ["a", "a.b"], Scenario, "s") == ("arms", 0, "policy")


def test_resolved_scenario_round_trips_arm_sweep_keys() -> None:
    sc = scenario('"arms[1].inference.max_iter" = [10, 50]\n'
                  '"arms.uniform + prior.inference.tol" = [0.001]\n')
    again = parse_scenario(tomllib.loads(dumps(sc.resolved_document())), "s.toml")
    assert again.sweep == sc.sweep
    assert [p.arms[1].inference.options.max_iter for p in expand(again)] == [10, 50]


@pytest.mark.parametrize(("sweep", "needle"), [
    ('"arms.adaptiv.policy.n_trees" = [3]',
     "sweep.arms.adaptiv.policy.n_trees names no arm 'adaptiv'"),
    ('"arms.adaptiv.policy.n_trees" = [3]', "did you mean adaptive?"),
    ('"arms[2].inference.max_iter" = [3]', "names arm 2, but the scenario has 2 arm(s)"),
    ('"arms[1].inference.max_itr" = [3]', "names no key 'max_itr'"),
    ('"arms[1].inference.max_itr" = [3]', "did you mean max_iter?"),
    ('workers.cout = [3]', "sweep.workers.cout names no key 'cout'"),
    ('wokers.count = [3]', "did you mean workers?"),
    ('arms.adaptive.name = ["x"]', "sweep.arms.adaptive.name cannot be swept"),
    ('"arms.adaptive" = [1]', "name one of the arm's keys"),
    ('"budget.batch.size" = [1]', "goes below budget.batch, which is not a table"),
    ('"arms.adaptive.policy.n_tres" = [3]', "did you mean n_trees?"),
    ('"arms[0].inference.max_iter" = [10, 0]',
     "sweep point arms[0].inference.max_iter=0: arms[0].inference.max_iter must be >= 1"),
])
def test_bad_sweep_keys_are_one_line_errors(sweep: str, needle: str) -> None:
    with pytest.raises(InputError) as exc:
        expand(scenario(sweep + "\n"))
    assert needle in str(exc.value)
    assert "\n" not in str(exc.value)


def test_validate_names_the_first_bad_point_exit_2(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BASE + '[sweep]\n"arms.adaptive.policy.n_trees" = [3, 0]\n')
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert "sweep point arms.adaptive.policy.n_trees=0: arms[1].policy.n_trees must be >= 1" \
        in err
    path.write_text(BASE + '[sweep]\n"arms.adaptive.policy.n_trees" = [3, 5]\n')
    assert main(["validate", str(path)]) == 0
    assert "sweep: 2 points over arms.adaptive.policy.n_trees (2)" in capsys.readouterr().out
