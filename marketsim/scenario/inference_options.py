"""The settings each inference method takes, the keyword arguments its estimator is built with,
and the parse-time check that refuses every other one.

An arm's ``inference`` table has one schema for every method (``init``, ``max_iter``,
``alpha``...), but a method takes only some of them: ``ds`` has no ability prior, majority vote
no iterations. A setting the method does not take is refused when the scenario is parsed (it
was once dropped silently by the market), and the values are checked by building the arm's
estimator and fitting it once on a handful of labels, so a value the estimator refuses
(``init = "spectral"`` for ``ds-features``) is a one-line error before any run folder exists,
not a traceback at run time. The market builds its estimators with :func:`estimator_kwargs`,
the same function, so what was checked is what runs.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterable
from dataclasses import fields, replace
from functools import cache, lru_cache
from typing import Any

import numpy as np

from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.registry import METHODS
from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.scenario.specs import AbilitySpec, InferenceSpec
from marketsim.scenario.validation import printable, short, suggest

#: Keys of an arm's inference table that configure the estimator (``method`` chooses it).
SETTINGS = ("init", "max_iter", "tol", "class_prior", "alpha", "beta", "low", "warm_start",
            "spectral_rule")
#: Iterations of the parse-time check fit (enough to run every step; ``tol = 0`` with a large
#: ``max_iter`` would otherwise make validation slow).
_CHECK_ITER = 3
_DEFAULTS = {f.name: f.default for f in fields(InferenceSpec)}


def takes(estimator: Any, name: str) -> bool:
    """Whether ``estimator.fit`` has the parameter ``name`` (named, not swallowed by
    ``**kwargs``): ``features`` (task features), ``known`` (gold questions), ``init_proba``
    (a warm start)."""
    params = inspect.signature(type(estimator).fit).parameters
    return name in params and params[name].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    )


@cache
def method_settings(method: str) -> tuple[str, ...]:
    """The inference settings ``method`` takes: its estimator's parameters among
    :data:`SETTINGS` that the method does not ignore, and ``warm_start`` when its ``fit``
    starts from a given posterior."""
    entry = METHODS[method]
    estimator = entry.factory()
    params = estimator.get_params()
    taken = {k for k in SETTINGS if k in params and k not in entry.unused}
    if takes(estimator, "init_proba"):
        taken.add("warm_start")
    return tuple(k for k in SETTINGS if k in taken)


def estimator_kwargs(spec: InferenceSpec, prior: tuple[float, ...],
                     ability: AbilitySpec) -> dict[str, Any]:
    """The keyword arguments the arm's estimator is built with: every setting its method
    takes (``alpha``, ``beta``, ``low`` default to the scenario's ability distribution,
    ``class_prior = "true"`` is the scenario's ``prior``; ``init`` and ``spectral_rule`` unset
    leave the method's own). A setting the method does not take must hold its default: the
    parser refuses it, so anything else is an internal error, never silently dropped."""
    taken = method_settings(spec.method)
    values: dict[str, Any] = {
        "init": spec.init, "max_iter": spec.max_iter, "tol": spec.tol,
        "alpha": ability.alpha if spec.alpha is None else spec.alpha,
        "beta": ability.beta if spec.beta is None else spec.beta,
        "low": ability.low if spec.low is None else spec.low,
        "spectral_rule": spec.spectral_rule,
    }
    if spec.class_prior == "true":
        values["class_prior"] = np.asarray(prior)
    elif spec.class_prior == "estimate":
        values["class_prior"] = None
    else:
        values["class_prior"] = np.asarray(spec.class_prior)
    for name in SETTINGS:
        if name not in taken and getattr(spec, name) != _DEFAULTS[name]:
            raise RuntimeError(f"internal error: inference setting {name} = "
                               f"{getattr(spec, name)!r} reached the market, but method "
                               f"{spec.method!r} does not take it")
    return {k: v for k, v in values.items()
            if k in taken and not (k in ("init", "spectral_rule") and v is None)}


def check_inference(spec: InferenceSpec, given: Iterable[str], key: str, source: str, *,
                    prior: tuple[float, ...], ability: AbilitySpec, classes: int) -> None:
    """Refuse, in one line naming ``key.<setting>``, a setting given for a method that does
    not take it, and a value the method's estimator refuses (found by fitting it once on a
    handful of labels; each given setting is tried alone to name the one at fault)."""
    method, taken = spec.method, method_settings(spec.method)
    given = [k for k in SETTINGS if k in set(given)]
    for name in given:
        if name not in taken:
            raise InputError(f"{printable(key)}.{name} is not an option of method {method!r} "
                             f"(its options: {', '.join(taken) or 'none'})"
                             f"{suggest(name, taken)}", source=source)
    problem = _problem(spec, prior, ability, classes)
    if problem is None:
        return
    for name in given:
        alone = _problem(replace(InferenceSpec(method), **{name: getattr(spec, name)}), prior,
                         ability, classes)
        if alone is not None:
            raise InputError(f"{printable(key)}.{name} = {short(getattr(spec, name))} does "
                             f"not work with method {method!r}: {alone}", source=source)
    raise InputError(f"{printable(key)} does not work with method {method!r}: {problem}",
                     source=source)


def _problem(spec: InferenceSpec, prior: tuple[float, ...], ability: AbilitySpec,
             classes: int) -> str | None:
    kwargs = estimator_kwargs(spec, prior, ability)
    if "max_iter" in kwargs:
        kwargs["max_iter"] = min(int(kwargs["max_iter"]), _CHECK_ITER)
    frozen = tuple((k, tuple(v.tolist()) if isinstance(v, np.ndarray) else v)
                   for k, v in sorted(kwargs.items()))
    return _fit_problem(spec.method, frozen, classes)


@lru_cache(maxsize=256)
def _fit_problem(method: str, kwargs: tuple[tuple[str, Any], ...], classes: int) -> str | None:
    """Why ``method`` built with ``kwargs`` cannot fit a few labels of ``classes`` classes
    (its ``ValueError``), or None. Cached: a sweep parses the same arm at every grid point."""
    params = {k: np.asarray(v) if k == "class_prior" and v is not None else v
              for k, v in kwargs}
    entry = METHODS[method]
    try:
        estimator = entry.factory(**params)
        if hasattr(estimator, "random_state"):
            estimator.set_params(random_state=0)
        with warnings.catch_warnings(), identifiability_checks(False):
            warnings.simplefilter("ignore")
            estimator.fit(_toy_labels(classes, entry.output == "scores"))
    except (ValueError, TypeError) as exc:
        return printable(str(exc))
    return None


def _toy_labels(classes: int, scores: bool) -> LabelSet:
    """Three workers labelling ``2 * classes`` tasks (all agreeing), or scoring them."""
    k = max(classes, 2)
    tasks = np.repeat(np.arange(2 * k), 3)
    workers = np.tile(np.arange(3), 2 * k)
    labels = tasks % k
    data = LabelSet.from_arrays(tasks, workers, labels, n_classes=k)
    if scores:
        data = replace(data, scores=(tasks % 5) / 5.0 + 0.1)
    return data
