"""The keyword arguments an arm's estimator is built with, and the parse-time check that
refuses every setting its method does not take.

A method's settings are its class's parameters, as a scenario table
(:func:`marketsim.scenario.inference_spec.settings_model`, where the rules that differ from
Python's defaults are declared). :func:`estimator_kwargs` is the one place the
scenario-dependent ones are resolved: an unset ability-prior setting (``alpha``, ``beta``,
``low`` of the one-coin MAP methods) is the scenario's ``[workers.ability]`` value,
``class_prior = "true"`` the scenario's prior and ``"estimate"`` None, and any other unset
setting (``init``, ``spectral_rule``) the estimator's own default; ``warm_start`` is the
service's own and not passed on.

:func:`read_settings` checks an arm's table against the model (an unknown setting is a
one-line error with a did-you-mean, a bad value names the key and what is allowed), and the
values are then checked by building the arm's estimator and fitting it once on a handful of
labels, so a value the estimator refuses (``mmsr`` on three classes) is a one-line error
before any run folder exists, not a traceback at run time. The market builds its estimators
with :func:`estimator_kwargs`, the same function, so what was checked is what runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import ValidationError

from marketsim.aggregation.identifiability import identifiability_checks
from marketsim.aggregation.registry import known_method
from marketsim.data.labels import LabelSet
from marketsim.errors import InputError
from marketsim.options import Options, option_problem
from marketsim.scenario.crowd_specs import AbilitySpec
from marketsim.scenario.inference_spec import (
    SERVICE_SETTINGS,
    InferenceSpec,
    ability_settings,
    settings_model,
    unknown_setting,
)
from marketsim.scenario.validation import printable, short, validate
from marketsim.workers.base import AbilityView

#: Iterations of the parse-time check fit (enough to run every step; ``tol = 0`` with a large
#: ``max_iter`` would otherwise make validation slow).
_CHECK_ITER = 3


def method_settings(method: str) -> tuple[str, ...]:
    """The inference settings ``method`` takes, in the order its model declares them."""
    return tuple(settings_model(method).model_fields)


def read_settings(method: str, given: Mapping[str, Any], key: str, source: str) -> Options:
    """``given`` (an arm's inference table without ``method``) as ``method``'s settings, or a
    one-line error naming ``key.<setting>``: a setting the method does not take (which methods
    take it, or a did-you-mean), a value of the wrong type or out of range."""
    model = settings_model(method)
    for name in given:
        if name not in model.model_fields:
            raise InputError(f"{printable(key)}.{printable(str(name))} "
                             f"{unknown_setting(method, str(name))}", source=source)
    options: Options = validate(model, given, source, (key,))
    return options


def estimator_kwargs(spec: InferenceSpec, prior: tuple[float, ...],
                     ability: AbilityView) -> dict[str, Any]:
    """The keyword arguments the arm's estimator is built with: every setting its method
    takes except the service's own (``warm_start``), none dropped. An unset ability-prior
    setting is the scenario's ability distribution's, ``class_prior = "true"`` is the
    scenario's ``prior`` and ``"estimate"`` None; any other setting left unset (``None``:
    ``init``, ``spectral_rule``) leaves the estimator's own default."""
    options = spec.options
    assert options is not None
    model = settings_model(spec.method)
    if type(options) is not model:
        try:  # settings built in Python: checked here, as the parser checks a file's
            options = model.model_validate(options.model_dump(exclude_unset=True))
        except ValidationError as exc:
            raise RuntimeError(f"internal error: inference settings reached the market that "
                               f"method {spec.method!r} does not take: "
                               f"{option_problem(exc, model)}") from None
    from_ability = ability_settings(spec.method)
    out: dict[str, Any] = {}
    for name, value in options.model_dump().items():
        if name in SERVICE_SETTINGS:
            continue
        if name in from_ability and value is None:
            value = getattr(ability, from_ability[name])
        elif name == "class_prior":
            value = {"true": np.asarray(prior), "estimate": None}.get(value, value) \
                if isinstance(value, str) else np.asarray(value)
        elif value is None:
            continue
        out[name] = value
    return out


def check_inference(spec: InferenceSpec, key: str, source: str, *,
                    prior: tuple[float, ...], ability: AbilitySpec, classes: int) -> None:
    """Refuse, in one line naming ``key.<setting>``, a value the method's estimator refuses
    (found by fitting it once on a handful of labels; each given setting is tried alone to
    name the one at fault)."""
    method, options = spec.method, spec.options
    assert options is not None
    problem = _problem(spec, prior, ability, classes)
    if problem is None:
        return
    model = type(options)
    bare = _problem(InferenceSpec.resolved(method, model()), prior, ability, classes)
    if bare is not None:  # the method itself refuses this market (a binary-only method, K > 2)
        raise InputError(f"{printable(key)} does not work with method {method!r}: {bare}",
                         source=source)
    for name in model.model_fields:
        if name not in options.model_fields_set:
            continue
        alone = _problem(InferenceSpec.resolved(method, model.model_validate(
            {name: getattr(options, name)})), prior, ability, classes)
        if alone is not None:
            raise InputError(f"{printable(key)}.{name} = {short(getattr(options, name))} does "
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
    entry = known_method(method)
    assert entry is not None  # resolved with the scenario
    try:
        estimator = entry(**params)
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
