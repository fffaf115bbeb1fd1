"""Issue #39 point 3: every inference method is one class whose parameters are declared once.

The contract, over the whole registry: the estimator the market builds for a scenario arm
``{method = NAME}`` left at its defaults is the estimator ``NAME``'s class builds in Python
with its defaults, once the scenario-dependent settings are resolved as documented
(:mod:`marketsim.scenario.inference_spec`: ``class_prior`` is the scenario's prior, an unset
ability-prior setting the scenario's ``[workers.ability]``) — the same parameters and the
same answer on a small label set. A plug-in method (``module:Class``, from
``plugins/smoothed_vote.py``) is held to the same contract.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import marketsim.aggregation as package
from marketsim.aggregation.estimator import Estimator
from marketsim.aggregation.registry import METHODS, method_class
from marketsim.data.labels import LabelSet
from marketsim.market.inference import estimator_factory
from marketsim.scenario.inference_spec import ability_settings
from marketsim.scenario.parser import parse_scenario

PRIOR = [0.6, 0.4]
ABILITY = {"alpha": 5.0, "beta": 3.0, "low": 0.2}
#: A method from outside marketsim, by its import path (``plugins/smoothed_vote.py``).
PLUGIN = "smoothed_vote:SmoothedVote"


@pytest.fixture(autouse=True)
def plugin_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plug-in's folder on the path (its module imported by the scenario that names it)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "plugins"))
    yield


def _class(method: str) -> type[Estimator]:
    return method_class(method, allow_imports=True)


def _scenario(method: str) -> Any:
    """A scenario whose prior and ability distribution are not the Python defaults, so a
    setting resolved from the wrong place shows."""
    scores = _class(method).output == "scores"
    workers: dict[str, Any] = {"count": 6, "model": "gaussian-scores"} if scores else {
        "count": 6, "ability": ABILITY}
    tasks: dict[str, Any] = {"count": 10} if scores else {"count": 10, "prior": PRIOR}
    return parse_scenario({
        "scenario": {"name": "contract"}, "tasks": tasks, "workers": workers,
        "budget": {"edges": 40},
        "arms": [{"name": "a", "policy": "uniform", "inference": {"method": method}}],
    }, "contract.toml", allow_imports=True)


def _resolved(method: str) -> dict[str, Any]:
    """The scenario-dependent settings of ``method`` as the scenario above resolves them."""
    params = _class(method).Options.model_fields
    out: dict[str, Any] = {k: ABILITY[key] for k, key in ability_settings(method).items()}
    if "class_prior" in params:
        out["class_prior"] = np.asarray(PRIOR)
    return out


def _labels(scores: bool) -> LabelSet:
    """Six workers on twelve binary tasks, mostly right, two of them often wrong."""
    rng = np.random.default_rng(7)
    tasks = np.repeat(np.arange(12), 4)
    workers = np.concatenate([rng.choice(6, size=4, replace=False) for _ in range(12)])
    truth = np.arange(12) % 2
    wrong = rng.random(tasks.size) < np.where(workers < 2, 0.45, 0.1)
    data = LabelSet.from_arrays(tasks, workers, np.where(wrong, 1 - truth[tasks], truth[tasks]),
                                n_classes=2)
    if scores:
        data = replace(data, scores=np.clip(truth[tasks] * 0.6 + 0.2 + rng.normal(
            0.0, 0.05, tasks.size), 0.0, 1.0))
    return data


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("method", [*METHODS, PLUGIN])
def test_a_scenario_arm_at_its_defaults_is_the_class_at_its_defaults(method: str) -> None:
    scenario = _scenario(method)
    built = estimator_factory(scenario.crowd, scenario.arms[0].inference)()
    python = _class(method)().set_params(**_resolved(method))
    assert type(built) is _class(method)
    mine, theirs = built.get_params(), python.get_params()
    assert mine.keys() == theirs.keys()
    differ = {k: (mine[k], theirs[k]) for k in mine if not _same(mine[k], theirs[k])}
    assert not differ, f"{method}: scenario vs Python defaults differ: {differ}"
    data = _labels(_class(method).output == "scores")
    for est in (built, python):
        if "random_state" in mine:
            est.set_params(random_state=0)
        est.fit(data)
    if _class(method).output == "scores":
        np.testing.assert_array_equal(built.means_, python.means_)
    else:
        np.testing.assert_array_equal(built.proba_, python.proba_)
        np.testing.assert_array_equal(built.labels_, python.labels_)


@pytest.mark.parametrize("method", [*METHODS, PLUGIN])
def test_the_constructor_is_the_options_model(method: str) -> None:
    """No class declares its parameters a second time: no ``__init__`` below the base, the
    signature (what ``help`` and IDEs show) is the model's fields with their defaults, and a
    value out of the model's range is refused when built."""
    cls = _class(method)
    assert not [c.__name__ for c in cls.__mro__ if c is not Estimator
                and issubclass(c, Estimator) and "__init__" in vars(c)]
    fields = cls.Options.model_fields
    signature = inspect.signature(cls).parameters
    assert list(signature) == list(fields)
    assert {k: p.default for k, p in signature.items()} == {
        k: f.default for k, f in fields.items()}
    assert cls().get_params(deep=False).keys() == fields.keys()
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_parameter'"):
        cls(no_such_parameter=1)


def test_the_drift_the_issue_names_is_gone() -> None:
    """KOS's rounds, GLAD's start and MACE's mode are the same word and value in Python and
    in a scenario."""
    assert METHODS["kos"]().max_iter == 100
    assert METHODS["mace"](mode="em").mode == "em"
    with pytest.raises(ValueError, match="MACE: mode: input should be 'vb' or 'em'"):
        METHODS["mace"](mode="gibbs")
    with pytest.raises(ValueError, match="KOS: max_iter: input should be greater than or "
                                         "equal to 1, got 0"):
        METHODS["kos"](max_iter=0)


def test_the_registry_finds_every_method_class_of_the_package() -> None:
    """The registry skips modules whose source names no method (so that every command does
    not import calibrate's fits); every class naming a method, in any module, is found."""
    named = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        named |= {obj for obj in vars(module).values() if isinstance(obj, type)
                  and issubclass(obj, Estimator) and obj.__dict__.get("method")}
    assert named == set(METHODS.values())
    assert list(METHODS) == sorted(METHODS, key=lambda n: (METHODS[n].output != "classes", n))
