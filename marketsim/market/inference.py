"""Turn an arm's inference settings into an estimator factory for the market's service, and
fit estimators the way the market's inference service does."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.spectral import SpectralFallbackWarning
from marketsim.scenario.inference_options import estimator_kwargs
from marketsim.scenario.inference_spec import InferenceSpec, takes
from marketsim.workers.base import Crowd

__all__ = ["estimator_factory", "fit_counted", "takes"]


def estimator_factory(crowd: Crowd, spec: InferenceSpec) -> Callable[[], BaseAggregator]:
    """A zero-argument callable building a fresh estimator configured as ``spec`` says.

    The keyword arguments are :func:`~marketsim.scenario.inference_options.estimator_kwargs`'s,
    the ones the parser checked: every setting the method takes, none dropped (prior
    parameters default to the crowd's ability distribution, ``class_prior = "true"`` is its
    tasks' class prior). An estimator
    object given in Python (``spec.estimator``) is used as it is: every call returns a fresh
    deep copy of this unit's own copy of it, unfitted.
    """
    if spec.estimator is not None:
        template = copy.deepcopy(spec.estimator)

        def copy_of_object() -> BaseAggregator:
            return copy.deepcopy(template)

        return copy_of_object
    cls = spec.entry
    assert cls is not None  # resolved once, when the scenario was parsed
    # built (and its parameters validated) once; every refresh fits a shallow copy, unfitted
    template = cls(**estimator_kwargs(spec, crowd.tasks.prior, crowd.workers.ability))

    def build() -> BaseAggregator:
        return copy.copy(template)

    return build


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
