"""Validation of the continuous-score and task-feature scenario keys: every bad value is one
line naming its dotted key; keys of one model are rejected for the others; policies and
inference methods must fit the market."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from marketsim.errors import InputError
from marketsim.market.inference import estimator_factory
from marketsim.scenario.parser import parse_scenario
from tests.helpers import validate_in_process

SCORES: dict[str, Any] = {
    "tasks": {"count": 40},
    "workers": {"count": 6, "model": "gaussian-scores"},
    "budget": {"edges": 120},
    "arms": [{"name": "em", "policy": "uniform", "inference": "gaussian-em"}],
}
CLASSES: dict[str, Any] = {
    "tasks": {"count": 40, "features": {"count": 3}},
    "workers": {"count": 6},
    "budget": {"edges": 120},
    "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}],
}


def changed(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with the dotted key set (``arms.0.policy``); ``...`` deletes."""
    data = copy.deepcopy(base)
    node: Any = data
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
    if value is ...:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


def test_score_defaults() -> None:
    sc = parse_scenario(SCORES, "s.toml")
    assert sc.worker_model.scores and sc.tasks.classes == 1 and sc.tasks.prior == (1.0,)
    assert sc.tasks.means is not None and (sc.tasks.means.alpha, sc.tasks.means.beta) == (1, 1)
    assert sc.workers.gaussian_scores.good_fraction == 0.7
    assert sc.workers.gaussian_scores.sigma == 0.1
    assert sc.tasks.features is None
    # Without an inference key a continuous arm runs the seed 001 EM.
    no_inf = changed(SCORES, "arms.0.inference", ...)
    assert parse_scenario(no_inf, "s.toml").arms[0].inference.method == "gaussian-em"
    assert sc.to_dict()["workers"]["gaussian_scores"]["sigma"] == 0.1


def test_feature_defaults_and_explicit_probabilities() -> None:
    sc = parse_scenario(CLASSES, "f.toml")
    assert not sc.worker_model.scores and sc.tasks.means is None
    assert sc.tasks.features is not None
    assert sc.tasks.features.count == 3 and sc.tasks.features.informativeness == 0.5
    explicit = changed(CLASSES, "tasks.features.probabilities", [[0.9, 0.1, 0.5], [0.2, 0.8, 0.5]])
    spec = parse_scenario(explicit, "f.toml").tasks.features
    assert spec is not None and spec.probabilities == ((0.9, 0.1, 0.5), (0.2, 0.8, 0.5))


@pytest.mark.parametrize(
    ("base", "path", "value", "needle"),
    [
        (SCORES, "workers.gaussian_scores.good_fraction", 1.5,
         "workers.gaussian_scores.good_fraction must be <= 1, got 1.5"),
        (SCORES, "workers.gaussian_scores.sigma", 0,
         "workers.gaussian_scores.sigma must be > 0"),
        (SCORES, "workers.gaussian_scores.sigma", "wide",
         "workers.gaussian_scores.sigma must be a number"),
        (SCORES, "workers.gaussian_scores.pi", 0.5,
         "workers.gaussian_scores.pi is not a known key"),
        (SCORES, "tasks.means.alpha", 0, "tasks.means.alpha must be > 0"),
        (SCORES, "tasks.means.mode", 1, "tasks.means.mode is not a known key"),
        (SCORES, "tasks.classes", 3, "tasks.classes does not apply with workers.model = "
                                     "'gaussian-scores'"),
        (SCORES, "tasks.prior", [0.5, 0.5], "tasks.prior does not apply"),
        (SCORES, "workers.ability", {"alpha": 2}, "workers.ability does not apply"),
        (SCORES, "workers.confusion", {"low": 0.5},
         "workers.confusion only applies with workers.model = 'confusion'"),
        (SCORES, "tasks.features", {"count": 2}, "tasks.features needs class labels"),
        (SCORES, "arms.0.inference", "ds", "arms[0].inference.method 'ds' estimates classes"),
        (SCORES, "arms.0.inference", {"method": "mv"},
         "arms[0].inference.method 'mv' estimates classes"),
        (SCORES, "arms.0.inference", "nope",
         "arms[0].inference.method must be one of gaussian-em, gaussian-hard-em"),
        (SCORES, "arms.0.inference", {"method": "gaussian-em", "class_prior": "estimate"},
         "arms[0].inference.class_prior does not apply to 'gaussian-em'"),
        (SCORES, "arms.0.inference", {"method": "gaussian-hard-em", "warm_start": True},
         "arms[0].inference.warm_start does not apply"),
        (SCORES, "arms.0.policy", "entropy-greedy",
         "arms[0].policy 'entropy-greedy' needs class labels"),
        (SCORES, "arms.0.policy", {"name": "knowledge-gradient"},
         "arms[0].policy.name 'knowledge-gradient' needs class labels"),
        (SCORES, "arms.0.policy", "oracle", "arms[0].policy 'oracle' needs class labels"),
        (SCORES, "arms.0.policy", "random-forest", "arms[0].policy 'random-forest' needs class"),
        (CLASSES, "workers.gaussian_scores", {"sigma": 0.2},
         "workers.gaussian_scores only applies with workers.model = 'gaussian-scores'"),
        (CLASSES, "tasks.means", {"alpha": 2},
         "tasks.means only applies with workers.model = 'gaussian-scores'"),
        (CLASSES, "arms.0.inference", "gaussian-em",
         "arms[0].inference.method 'gaussian-em' estimates continuous scores"),
        (CLASSES, "arms.0.inference", {"method": "ds", "low": 0.2},
         "arms[0].inference.low applies only to method 'one-coin-shifted-beta', not 'ds'"),
        (CLASSES, "arms.0.inference", {"method": "opt-ds", "spectral_rule": "paper"},
         "arms[0].inference.spectral_rule"),
        (CLASSES, "arms.0.policy", "uncertainty",
         "arms[0].policy 'uncertainty' ranks by the variance of continuous task means"),
        (changed(CLASSES, "tasks.classes", 3), "arms.0.policy", "knowledge-gradient",
         "arms[0].policy 'knowledge-gradient' supports binary tasks only"),
        (CLASSES, "tasks.features.count", 0, "tasks.features.count must be >= 1"),
        (CLASSES, "tasks.features.count", ..., "tasks.features.count is required"),
        (CLASSES, "tasks.features.informativeness", 1.5,
         "tasks.features.informativeness must be <= 1"),
        (CLASSES, "tasks.features.informative", 0.5,
         "tasks.features.informative is not a known key"),
        (CLASSES, "tasks.features.probabilities", [[0.5, 0.5, 0.5]],
         "tasks.features.probabilities must be 2 arrays (one per class) of 3 numbers"),
        (CLASSES, "tasks.features.probabilities", [[0.5, 0.5, 2.0], [0.5, 0.5, 0.5]],
         "tasks.features.probabilities entries must be probabilities in [0, 1]"),
        (changed(CLASSES, "tasks.features.informativeness", 0.2),
         "tasks.features.probabilities", [[0.5] * 3, [0.5] * 3], "give either"),
    ],
)
def test_bad_values_name_their_key(
    base: dict[str, Any], path: str, value: Any, needle: str
) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(changed(base, path, value), "bad.toml")
    message = str(info.value)
    assert needle in message, message
    assert message.startswith("bad.toml: ") and "\n" not in message


def test_replay_rejects_gaussian_scores_and_features(tmp_path: Path) -> None:
    (tmp_path / "labels.csv").write_text("task,worker,label\nt1,w1,a\nt1,w2,b\nt2,w1,a\n")
    (tmp_path / "truth.csv").write_text("task,label\nt1,a\nt2,b\n")
    base: dict[str, Any] = {
        "replay": {"labels": "labels.csv", "truth": "truth.csv"},
        "arms": [{"name": "u", "policy": "uniform", "inference": "mv"}],
    }
    source = str(tmp_path / "s.toml")
    assert parse_scenario(base, source).tasks.count == 2  # the files themselves are fine
    with pytest.raises(InputError, match="workers.model 'gaussian-scores' is not available "
                                         "with \\[replay\\]"):
        parse_scenario({**base, "workers": {"model": "gaussian-scores"}}, source)
    with pytest.raises(InputError, match="tasks.features is not available with \\[replay\\]"):
        parse_scenario({**base, "tasks": {"features": {"count": 2}}}, source)


def test_cli_exit_2_one_line_for_a_bad_continuous_key(tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[tasks]\ncount = 10\n[workers]\ncount = 3\nmodel = "gaussian-scores"\n'
        "[workers.gaussian_scores]\ngood_fraction = -0.1\n[budget]\nedges = 20\n"
        '[[arms]]\nname = "a"\npolicy = "uniform"\n'
    )
    proc = validate_in_process(bad, capsys)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "workers.gaussian_scores.good_fraction must be >= 0" in lines[0]
    assert str(bad) in lines[0]


def test_spectral_rule_reaches_the_estimator() -> None:
    """``spectral_rule`` picks opt-ds's spectral start; unset, the estimator's default
    (the numbering-independent "equivariant") is used."""
    for rule, expected in ((None, "equivariant"), ("authors", "authors")):
        inference = {"method": "opt-ds"} | ({} if rule is None else {"spectral_rule": rule})
        sc = parse_scenario(changed(CLASSES, "arms.0.inference", inference), "x.toml")
        est = estimator_factory(sc.crowd, sc.arms[0].inference)()
        assert est.get_params()["spectral_rule"] == expected
