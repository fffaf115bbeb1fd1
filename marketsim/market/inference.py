"""Turn an arm's inference settings into an estimator factory for the market's service, and
fit estimators the way the market's inference service does."""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Callable

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.spectral import SpectralFallbackWarning
from marketsim.scenario.specs import InferenceSpec, Scenario


def estimator_factory(scenario: Scenario, spec: InferenceSpec) -> Callable[[], BaseAggregator]:
    """A zero-argument callable building a fresh estimator configured as ``spec`` says.

    Settings the estimator does not have (e.g. ``max_iter`` for majority vote) are skipped;
    prior parameters default to the scenario's ability distribution, and
    ``class_prior = "true"`` gives the estimator the scenario's class prior. An estimator
    object given in Python (``spec.estimator``) is used as it is: every call returns a fresh
    deep copy of this unit's own copy of it, unfitted.
    """
    if spec.estimator is not None:
        template = copy.deepcopy(spec.estimator)

        def copy_of_object() -> BaseAggregator:
            return copy.deepcopy(template)

        return copy_of_object
    ability = scenario.workers.ability
    wanted: dict[str, object] = {
        "max_iter": spec.max_iter,
        "tol": spec.tol,
        "alpha": ability.alpha if spec.alpha is None else spec.alpha,
        "beta": ability.beta if spec.beta is None else spec.beta,
        "low": ability.low if spec.low is None else spec.low,
    }
    if spec.init is not None:
        wanted["init"] = spec.init
    if spec.class_prior == "true":
        wanted["class_prior"] = np.asarray(scenario.tasks.prior)
    elif spec.class_prior == "estimate":
        wanted["class_prior"] = None
    else:
        wanted["class_prior"] = np.asarray(spec.class_prior)
    assert spec.entry is not None  # resolved once, when the scenario was parsed
    factory = spec.entry.factory
    accepted = set(factory().get_params())
    params = {k: v for k, v in wanted.items() if k in accepted}

    def build() -> BaseAggregator:
        return factory(**params)

    return build


def takes(estimator: BaseAggregator, name: str) -> bool:
    """Whether ``estimator.fit`` has the parameter ``name`` (named, not swallowed by
    ``**kwargs``): ``features`` (task features), ``known`` (gold questions)."""
    params = inspect.signature(type(estimator).fit).parameters
    return name in params and params[name].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    )


def fit_counted(fit: Callable[[], object]) -> tuple[int, int]:
    """Run ``fit`` (one refit of the market's estimator); return how many convergence
    warnings and spectral-initialiser fallbacks it raised. Other warnings are passed on.

    A market refits every batch, from a sparse graph at first: non-convergence and the
    spectral initialiser's fallback to majority vote are expected, so counted, not shouted;
    the error curve is the market's verdict, so the (costly) identifiability diagnostic is not
    even computed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        warnings.simplefilter("always", SpectralFallbackWarning)
        with identifiability_checks(False):
            fit()
    counted = (ConvergenceWarning, SpectralFallbackWarning)
    for w in caught:
        if not issubclass(w.category, counted):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return (sum(issubclass(w.category, ConvergenceWarning) for w in caught),
            sum(issubclass(w.category, SpectralFallbackWarning) for w in caught))
