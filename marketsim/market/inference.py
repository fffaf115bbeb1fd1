"""The market's inference service: an arm's inference settings turned into an estimator
factory, and the refit of a fresh estimator on the labels so far (:class:`Refit`: with the
task features when its fit takes them, the gold answers when they enter inference, warm-started
from the last posterior when asked, convergence warnings counted)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from marketsim.aggregation.base import BaseAggregator
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.spectral import SpectralFallbackWarning
from marketsim.market.gold import GoldQuestions
from marketsim.scenario.inference_options import estimator_kwargs
from marketsim.scenario.inference_spec import InferenceSpec, takes
from marketsim.workers.base import Crowd

__all__ = ["Refit", "estimator_factory", "fit_counted", "takes"]


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


class Refit:
    """A fresh estimator from ``make_estimator`` fitted on a market's labels, as its inference
    service fits at every refresh: seeded from ``rng`` when it draws, given the task
    ``features`` when its fit takes them and the ``gold`` answers when they enter inference
    (``gold.in_inference``, an estimator whose fit takes ``known``: the results keep the real
    tasks only), started from the last posterior with ``warm_start``; the convergence warnings
    and spectral fallbacks it raised are counted (:func:`fit_counted`)."""

    def __init__(self, make_estimator: Callable[[], BaseAggregator], rng: np.random.Generator,
                 *, n_tasks: int, n_classes: int, features: np.ndarray | None = None,
                 gold: GoldQuestions | None = None, warm_start: bool = False) -> None:
        self.make_estimator, self.rng, self.warm_start = make_estimator, rng, warm_start
        self.n_tasks, self.n_classes = n_tasks, n_classes
        self.kwargs: dict[str, Any] = {}
        if features is not None and takes(make_estimator(), "features"):
            self.kwargs["features"] = features
        self.gold = gold if gold is not None and gold.spec.in_inference and takes(
            make_estimator(), "known") else None
        #: Refits that did not converge, and whose spectral initialiser fell back to majority
        #: vote (Opt-D&S on sparse early graphs: expected in a market, so counted).
        self.not_converged = 0
        self.init_fallbacks = 0

    def __call__(self, labels: Any, init: np.ndarray | None) -> BaseAggregator:
        """The estimator fitted on ``labels``, from posterior ``init`` when warm-started."""
        est = self.make_estimator()
        if hasattr(est, "random_state"):
            est.set_params(random_state=self.rng)
        kwargs = dict(self.kwargs)
        if self.gold is not None and self.gold.n_answered:
            labels, kwargs["known"] = self.gold.with_tasks(labels)
            if init is not None:  # gold rows start at their known class
                gold_classes = kwargs["known"][self.n_tasks:]
                init = np.vstack([init, np.eye(self.n_classes)[gold_classes]])
        if self.warm_start and init is not None and hasattr(est, "max_iter"):
            kwargs["init_proba"] = init
        not_converged, fallbacks = fit_counted(lambda: est.fit(labels, **kwargs))
        self.not_converged += not_converged
        self.init_fallbacks += fallbacks
        if "known" in kwargs:  # results are the real tasks only
            est.proba_, est.labels_ = est.proba_[:self.n_tasks], est.labels_[:self.n_tasks]
        return est
