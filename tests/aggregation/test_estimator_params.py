"""The estimator convention without scikit-learn's base class: parameters, clone, repr, and a
command start-up that does not import scikit-learn (1.5 s)."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
from sklearn.base import clone

from marketsim.aggregation import METHODS, BaseAggregator, DawidSkene, make_estimator


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_round_trips_its_parameters_and_clones(name: str) -> None:
    est = make_estimator(name)
    params = est.get_params()
    copy = clone(est)
    assert type(copy) is type(est) and copy.get_params().keys() == params.keys()
    assert type(est)(**est.get_params(deep=False)).get_params().keys() == params.keys()


def test_set_params_changes_and_names_the_valid_ones() -> None:
    est = DawidSkene()
    assert est.set_params(max_iter=7, init="spectral") is est
    assert est.get_params()["max_iter"] == 7
    assert repr(est) == "DawidSkene(init='spectral', max_iter=7)"
    with pytest.raises(ValueError, match="invalid parameter 'iters' for DawidSkene; valid"):
        est.set_params(iters=3)


def test_a_command_starts_without_scikit_learn() -> None:
    """Parsing a scenario and reporting need no scikit-learn; only a random-forest fit does."""
    code = ("import sys, marketsim.cli.run, marketsim.scenario.parser, marketsim.report.render;"
            "print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


class _Yours(BaseAggregator):
    """An estimator written outside marketsim the scikit-learn way: its own ``__init__``."""

    def __init__(self, *, weight: float = 2.0, random_state: object = None) -> None:
        self.weight = weight
        self.random_state = random_state


def test_an_estimator_with_its_own_init_keeps_its_parameters() -> None:
    """A run's identity fingerprints an estimator object by ``get_params``: a plug-in class
    without an ``Options`` model is read from its ``__init__``, as before."""
    yours = _Yours(weight=3.0)
    assert yours.get_params() == {"weight": 3.0, "random_state": None}
    assert repr(yours) == "_Yours(weight=3.0)"
    assert list(inspect.signature(_Yours).parameters) == ["weight", "random_state"]
    assert clone(yours).set_params(weight=4.0).get_params()["weight"] == 4.0
