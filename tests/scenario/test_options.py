"""Issue #25 point 7: every option of every policy, estimator and worker model is checked at
parse (one line naming the key), never filtered out, never first checked at run time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from marketsim.aggregation.registry import METHODS
from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.market.inference import estimator_factory
from marketsim.policies.registry import POLICIES
from marketsim.scenario.inference_spec import InferenceSpec, settings_model
from marketsim.scenario.parser import parse_scenario

#: A valid value of every inference setting, for some method.
VALUES: dict[str, Any] = {"init": "random", "max_iter": 5, "tol": 0.0,
                          "class_prior": "estimate", "alpha": 2.0, "beta": 3.0, "low": 0.2,
                          "warm_start": True, "spectral_rule": "authors"}
#: Settings each method really uses (what its estimator reads for this method).
USED = {
    "mv": set(), "kos-svd": set(), "ghosh-svd": set(), "eigen-ratio": set(),
    "kos": {"max_iter"},
    "one-coin": {"init", "max_iter", "tol", "class_prior", "warm_start"},
    "one-coin-spectral": {"init", "max_iter", "tol", "class_prior", "warm_start"},
    "one-coin-beta": {"init", "max_iter", "tol", "class_prior", "warm_start", "alpha", "beta"},
    "one-coin-shifted-beta": {"init", "max_iter", "tol", "class_prior", "warm_start", "alpha",
                              "beta", "low"},
    "ds": {"init", "max_iter", "tol", "class_prior", "warm_start", "spectral_rule"},
    "opt-ds": {"init", "max_iter", "tol", "class_prior", "warm_start", "spectral_rule"},
    "ds-confidence": {"init", "max_iter", "tol", "class_prior", "warm_start", "spectral_rule"},
    "ds-features": {"init", "max_iter", "tol", "class_prior", "warm_start"},
    "glad": {"init", "max_iter", "tol", "class_prior", "warm_start"},
    "mace": {"tol", "warm_start"},  # and its own mode, n_restarts
    "gaussian-em": {"max_iter", "tol"}, "gaussian-hard-em": {"max_iter", "tol"},
    # Their own settings (n_iter, lr_init, ...), none of the shared EM ones but M-MSR's tol.
    "wawa": set(), "zbs": set(), "mmsr": {"tol"},
}


def _doc(inference: Any = "one-coin", policy: Any = "uniform",
         workers: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"scenario": {"name": "options"}, "tasks": {"count": 10},
            "workers": workers or {"count": 4}, "budget": {"edges": 20},
            "arms": [{"name": "a", "policy": policy, "inference": inference}]}


def _score_workers(method: str) -> dict[str, Any] | None:
    return {"count": 4, "model": "gaussian-scores"} if METHODS[method].output == "scores" \
        else None


def test_every_method_is_listed() -> None:
    assert set(USED) == set(METHODS)


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("setting", list(VALUES))
def test_a_setting_the_method_ignores_is_refused(method: str, setting: str) -> None:
    doc = _doc({"method": method, setting: VALUES[setting]}, workers=_score_workers(method))
    if setting in USED[method]:
        parse_scenario(doc, "s.toml")
        return
    with pytest.raises(InputError) as err:
        parse_scenario(doc, "s.toml")
    message = str(err.value)
    assert f"arms[0].inference.{setting}" in message and "\n" not in message


def test_ds_alpha_names_the_method_and_its_options() -> None:
    with pytest.raises(InputError, match=r"s\.toml: arms\[0\]\.inference\.alpha is not an "
                                         r"option of method 'ds' \(its options: init, "
                                         r"max_iter, tol, class_prior, smoothing, "
                                         r"spectral_delta, spectral_rule, warm_start\)"):
        parse_scenario(_doc({"method": "ds", "alpha": 3}), "s.toml")


@pytest.mark.parametrize(("inference", "key"), [
    ({"method": "ds-features", "init": "spectral"}, "init"),  # valid for ds, not ds-features
    ({"method": "ds", "max_iter": "5"}, "max_iter"),          # wrong type
    ({"method": "one-coin-beta", "alpha": -1.0}, "alpha"),     # out of range
    ({"method": "one-coin-shifted-beta", "low": 1.0}, "low"),
    ({"method": "opt-ds", "spectral_rule": "best"}, "spectral_rule"),
    ({"method": "ds", "class_prior": [0.2, 0.2]}, "class_prior"),
    ({"method": "ds", "mx_iter": 5}, "mx_iter"),                # unknown: did-you-mean
])
def test_bad_values_are_one_line_errors_at_parse(inference: dict[str, Any], key: str) -> None:
    with pytest.raises(InputError) as err:
        parse_scenario(_doc(inference), "s.toml")
    assert f"arms[0].inference.{key}" in str(err.value) and "\n" not in str(err.value)


def test_unknown_inference_key_suggests_the_right_one() -> None:
    with pytest.raises(InputError, match="did you mean max_iter"):
        parse_scenario(_doc({"method": "ds", "max_iters": 5}), "s.toml")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


SPECTRAL_FEATURES = """
[scenario]
name = "spectral features"
[tasks]
count = 10
[tasks.features]
count = 2
[workers]
count = 4
[budget]
edges = 20
[[arms]]
name = "f"
policy = "uniform"
inference = { method = "ds-features", init = "spectral" }
"""


def test_run_refuses_before_the_folder_exists(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    scenario = _write(tmp_path / "s.toml", SPECTRAL_FEATURES)
    out = tmp_path / "out"
    for args in (["validate", str(scenario)], ["run", str(scenario), "--out", str(out)]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert "arms[0].inference.init must be one of majority, random; got 'spectral'" in err
    assert not out.exists()


def test_the_market_never_drops_a_setting() -> None:
    scenario = parse_scenario(_doc("ds"), "s.toml")
    beta_settings = settings_model("one-coin-beta")(alpha=3.0)
    with pytest.raises(RuntimeError, match="internal error: .* method 'ds' does not take: "
                                           "alpha is not an option"):
        estimator_factory(scenario.crowd, InferenceSpec.resolved("ds", beta_settings))


def test_the_market_builds_what_was_checked() -> None:
    doc = _doc({"method": "one-coin-shifted-beta", "max_iter": 7})
    doc["workers"] = {"count": 4, "ability": {"alpha": 5.0, "beta": 3.0, "low": 0.25}}
    scenario = parse_scenario(doc, "s.toml")
    est = estimator_factory(scenario.crowd, scenario.arms[0].inference)()
    params = est.get_params()
    assert (params["max_iter"], params["alpha"], params["beta"], params["low"],
            est.prior) == (7, 5.0, 3.0, 0.25, "shifted-beta")
    assert list(params["class_prior"]) == [0.5, 0.5]


@pytest.mark.parametrize("name", list(POLICIES))
def test_unknown_policy_option_is_refused_with_a_suggestion(name: str) -> None:
    workers = {"count": 4, "model": "gaussian-scores"} if name == "uncertainty" else None
    inference = "gaussian-em" if workers else "one-coin"
    with pytest.raises(InputError) as err:
        parse_scenario(_doc(inference, {"name": name, "n_tres": 3}, workers), "s.toml")
    assert "arms[0].policy.n_tres" in str(err.value)
    if name == "random-forest":
        assert "did you mean n_trees" in str(err.value)


PLUGIN = '''
from marketsim.options import F, Options
from marketsim.policies.base import Policy


class PickyOptions(Options):
    level: int = F(1, "how picky")


class Picky(Policy[PickyOptions]):
    name = "picky"
    Options = PickyOptions

    def __init__(self, **options):
        super().__init__(**options)
        if self.options.level not in (1, 2):
            raise ValueError(f"level must be 1 or 2, got {self.options.level!r}")

    def bind(self, info):
        self.n = info.n_tasks

    def rank(self, state, rng):
        return rng.permutation(self.n)
'''


def test_plugin_policy_values_are_checked_at_parse(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "picky_plugin.py", PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    policy = {"name": "picky_plugin:Picky", "level": 3}
    with pytest.raises(InputError, match=r"arms\[0\]\.policy: policy 'picky_plugin:Picky' "
                                         r"refuses its options: level must be 1 or 2, got 3"):
        parse_scenario(_doc(policy=policy), "s.toml", allow_imports=True)
    parse_scenario(_doc(policy={**policy, "level": 2}), "s.toml", allow_imports=True)


@pytest.mark.parametrize(("design", "key"), [("dirichlet", "low"), ("dirichlet", "high"),
                                             ("diagonal-uniform", "concentration"),
                                             ("diagonal-uniform", "diagonal_weight")])
def test_confusion_keys_of_the_other_design_are_refused(design: str, key: str) -> None:
    workers = {"count": 4, "model": "confusion", "confusion": {"design": design, key: 0.5}}
    with pytest.raises(InputError, match=rf"workers\.confusion\.{key} applies only to design"):
        parse_scenario(_doc(workers=workers), "s.toml")
