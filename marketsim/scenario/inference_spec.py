"""An arm's inference service, ``[arms.inference]``: :class:`InferenceSpec`, the method and its
settings, and how ``to_dict`` records it (the run's identity).

A method's settings are its estimator class's parameters (the ``Options`` model the class
declares, :mod:`marketsim.aggregation.options`), turned into a scenario table by
:func:`settings_model`, the one place where a scenario's defaults differ from Python's:

- ``random_state`` and any parameter declared ``setting=False`` are not settings (the market
  seeds every refresh itself);
- a parameter declared ``scenario_unset`` is unset (``None``) by default: the estimator's own
  default (``init``, ``spectral_rule``) or, for the one-coin MAP methods' ``alpha``, ``beta``
  and ``low``, the scenario's ability distribution ``[workers.ability]``;
- ``class_prior`` is ``"true"`` by default, the scenario's prior (known to the requester, as
  in Maginnis & Gupta 2015), or ``"estimate"`` (``None``: re-estimated by EM), or K
  probabilities;
- a method whose ``fit`` takes a warm start (``init_proba``) has the service setting
  ``warm_start``, which the market's inference service reads itself.

:func:`marketsim.scenario.inference_options.estimator_kwargs` turns the settings into the
estimator's keyword arguments by these rules.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    create_model,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from marketsim.aggregation.estimator import Estimator
from marketsim.aggregation.options import PYTHON_ONLY, SCENARIO_UNSET
from marketsim.aggregation.registry import METHODS, known_method
from marketsim.options import F, Options
from marketsim.scenario.validation import suggest
from marketsim.tables import KeyProblem, Table, tagged_union

#: Settings the market's inference service reads itself (not estimator arguments).
SERVICE_SETTINGS = ("warm_start",)
#: The scenario key an unset ability-prior setting reads (``workers.ability.alpha``...).
ABILITY_KEY = "workers.ability."


def takes(estimator: Any, name: str) -> bool:
    """Whether ``estimator.fit`` (an estimator or its class) has the parameter ``name`` (named,
    not swallowed by ``**kwargs``): ``features`` (task features), ``known`` (gold questions),
    ``init_proba`` (a warm start)."""
    cls: Any = estimator if isinstance(estimator, type) else type(estimator)
    params = inspect.signature(cls.fit).parameters
    return name in params and params[name].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    )


def _extra(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _setting(info: FieldInfo) -> tuple[Any, Any]:
    """A parameter's ``(annotation, field)`` in a scenario (the module docstring's rules)."""
    unset = _extra(info).get(SCENARIO_UNSET)
    annotation: Any = info.annotation
    if unset is None:  # a default of None has no TOML form: the docs say "unset"
        field = F(info.default, info.description or "",
                  shown="unset" if info.default is None else None)
    else:
        annotation = annotation | None
        field = F(None, info.description or "", shown=unset or json.dumps(info.default))
    field.metadata.extend(info.metadata)  # the range (ge, le...), on the value when given
    return annotation, field


def settings_model(method: str) -> type[Options]:
    """The model of the settings ``method`` (a built-in method, or an imported plug-in's
    import path) takes in a scenario, built from its class's parameters (the module
    docstring's rules)."""
    return _settings_of(_method_class(method))


def _method_class(method: str) -> type[Estimator]:
    """The class of a built-in method or of an imported plug-in (a KeyError otherwise)."""
    cls = known_method(method)
    if cls is None:
        raise KeyError(method)
    return cls


#: The settings model of each method class, built once.
_MODELS: dict[type[Estimator], type[Options]] = {}


def _settings_of(cls: type[Estimator]) -> type[Options]:
    """:func:`settings_model` of the method class ``cls`` (built once per class)."""
    if cls not in _MODELS:
        _MODELS[cls] = _build_settings(cls)
    return _MODELS[cls]


def _build_settings(cls: type[Estimator]) -> type[Options]:
    """The scenario table of ``cls``'s parameters, by the module docstring's rules; named
    ``<Class>Settings`` in this module, where pickle finds it (:func:`__getattr__`)."""
    method = cls.method
    fields: dict[str, Any] = {}
    for name, info in cls.Options.model_fields.items():
        if name == "random_state" or _extra(info).get(PYTHON_ONLY):
            continue
        if name == "class_prior":
            fields[name] = (Literal["true", "estimate"] | list[float], F(
                "true", "the scenario's prior (known to the requester, as in Maginnis & Gupta "
                "2015), re-estimated by EM, or K probabilities"))
        else:
            fields[name] = _setting(info)
    if takes(cls, "init_proba"):
        fields["warm_start"] = (bool, F(False, "start each refresh from the previous "
                                        "posterior"))
    model: type[Options] = create_model(
        f"{cls.__name__}Settings", __base__=Options, __module__=__name__, **fields)
    model.__doc__ = f"Settings of `{method}` in a scenario."
    return model


def ability_settings(method: str) -> dict[str, str]:
    """The settings of ``method`` whose unset value is the scenario's ``[workers.ability]``
    value, each with that table's key (``alpha``, ``beta``, ``low``)."""
    return {name: str(unset).removeprefix(ABILITY_KEY)
            for name, info in _method_class(method).Options.model_fields.items()
            if str(unset := _extra(info).get(SCENARIO_UNSET, "")).startswith(ABILITY_KEY)}


def unknown_setting(method: str, name: str) -> str:
    """Why ``name`` is not a setting of ``method``, after its key: which method takes it, or
    the method's settings with a did-you-mean."""
    taken = tuple(settings_model(method).model_fields)
    takers = [m for m in METHODS if name in settings_model(m).model_fields]
    if _method_class(method).output == "scores" and any(METHODS[m].output == "classes"
                                                   for m in takers):
        return f"does not apply to {method!r} (a continuous-score method)"
    if len(takers) == 1:
        return f"applies only to method {takers[0]!r}, not {method!r}"
    return (f"is not an option of method {method!r} (its options: "
            f"{', '.join(taken) or 'none'}){suggest(name, taken)}")


class InferenceSpec(Table):
    """``[arms.inference]``: a method name, or this table whose other keys are the method's
    settings (checked against the method's settings model: see the tables below and
    `python -m marketsim list --method NAME`)

    Once the scenario is resolved, ``options`` is the method's settings, an instance of
    :func:`settings_model` (its ``model_fields_set`` are the settings the scenario gave).
    ``class_prior`` is ``"true"``
    (the scenario's prior, known to the requester as in Maginnis & Gupta 2015),
    ``"estimate"`` (re-estimated by EM) or explicit probabilities. Prior parameters ``alpha``,
    ``beta``, ``low`` default to the scenario's ability distribution. Dumping the spec writes
    the method with every setting it runs with.
    """

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, allow_inf_nan=False,
                              defer_build=True)

    method: str = F(None, "a class method for class markets (`mv`, `one-coin`, "
                    "`one-coin-beta`, `one-coin-shifted-beta`, `one-coin-spectral`, `ds`, "
                    "`opt-ds`, `ds-features`, `kos`, ...), a score method for "
                    "`gaussian-scores` (`gaussian-em`, `gaussian-hard-em`), or a "
                    "`package.module:Class` import path of a "
                    "`marketsim.aggregation.base.BaseAggregator` (or `ScoreAggregator`) "
                    "subclass (runs only with `--allow-imports`)",
                    shown='"one-coin-shifted-beta" ("gaussian-em")')
    #: The method's class, resolved with the scenario (unpickled before the settings below,
    #: so a worker process imports a plug-in's module before it needs its settings model).
    _entry: type[Estimator] | None = PrivateAttr(default=None)
    _options: Options | None = PrivateAttr(default=None)
    #: An estimator object given in Python (``marketsim.scenario_from_dict``): the market
    #: fits fresh copies of it instead of a registry method (``method`` is then its class name).
    _estimator: Any = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        """A method's unknown setting, named as such (which method takes it, or the method's
        settings with a did-you-mean) rather than as an unknown key."""
        if cls.model_config.get("extra") != "forbid" or not isinstance(data, Mapping):
            return data
        method = data.get("method")
        for key in map(str, data):
            if key != "method" and key not in cls.model_fields:
                raise KeyProblem(key, unknown_setting(str(method), key))
        return data

    def model_post_init(self, context: Any, /) -> None:
        """A method's variant holds its settings as the method's settings model too."""
        if type(self) is not InferenceSpec and self.method in METHODS:
            self._options = settings_model(self.method).model_validate(self.settings)

    @property
    def settings(self) -> dict[str, Any]:
        """The settings the table gives (``method`` aside), as written or, in a method's
        variant, as validated."""
        given = {k: getattr(self, k) for k in self.model_fields_set if k != "method"}
        return {**given, **(self.model_extra or {})}

    @classmethod
    def resolved(cls, method: str, options: Options | None = None,
                 estimator: Any = None, entry: type[Estimator] | None = None) -> InferenceSpec:
        """The spec of ``method`` (its class ``entry``, if resolved) run with ``options``
        (``None``: its defaults), or of an estimator object."""
        spec = cls(method=method)
        spec._options = options
        spec._estimator = estimator
        spec._entry = entry
        return spec

    @property
    def options(self) -> Options:
        """The method's settings (its defaults if none were given)."""
        if self._options is not None:
            return self._options
        if self.entry is None:
            return Options()
        return _settings_of(self.entry)()

    @property
    def entry(self) -> type[Estimator] | None:
        """The class of ``method``, a built-in one or an import path's (``None`` for an
        estimator object's class name, or a plug-in not imported); the market builds
        estimators from it (``market.inference.estimator_factory``)."""
        return self._entry or known_method(self.method)

    @property
    def estimator(self) -> Any:
        """The estimator object given in Python, or ``None``."""
        return self._estimator

    @property
    def warm_starts(self) -> bool:
        """Whether each refresh's EM starts from the previous posterior, the setting
        ``warm_start`` (a method without the setting never does)."""
        return bool(getattr(self.options, "warm_start", False))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InferenceSpec):
            return NotImplemented
        return (self.method, self.options) == (other.method, other.options)

    __hash__ = None

    @model_serializer(mode="plain")
    def _table(self) -> dict[str, Any]:
        """The table as a scenario file writes it: the method and the settings it runs with."""
        values = self.options.model_dump()
        return {"method": self.method, **{k: v for k, v in values.items() if v is not None}}


def _method_variant(cls: type[Estimator]) -> type[InferenceSpec]:
    """``[arms.inference]`` of method ``cls``: its name and its settings (their types,
    defaults and ranges, :func:`settings_model`), no other key."""
    method = cls.method
    settings = _settings_of(cls).model_fields
    clash = [k for k in settings if hasattr(InferenceSpec, k)]
    if clash:
        raise RuntimeError(f"method {method!r}: setting {clash[0]!r} is a name the inference "
                           "table's spec reads; rename the parameter")
    namespace = {
        "__module__": __name__, "__qualname__": f"{cls.__name__}Inference",
        "__doc__": f"``[arms.inference]`` with ``method = \"{method}\"``.",
        "__annotations__": {"method": Literal[method],
                            **{k: info.annotation for k, info in settings.items()}},
        "method": Field(..., description=f"`{method}`"),
        **{k: copy.copy(info) for k, info in settings.items()},
        "model_config": ConfigDict(strict=True, extra="forbid", frozen=True,
                                   allow_inf_nan=False)}
    metaclass: Any = type(InferenceSpec)  # pydantic's: the class statement's, made by hand
    variant: type[InferenceSpec] = metaclass(f"{cls.__name__}Inference", (InferenceSpec,),
                                             namespace)
    return variant


#: Each method's ``[arms.inference]`` variant, by method name.
METHOD_VARIANTS: dict[str, type[InferenceSpec]] = {
    name: _method_variant(cls) for name, cls in METHODS.items()}
# each variant is a name of this module, where pickle finds it
globals().update({v.__name__: v for v in METHOD_VARIANTS.values()})


if TYPE_CHECKING:
    Inferences = InferenceSpec
else:
    #: ``[arms.inference]``: a union over the methods' variants and the generic
    #: :class:`InferenceSpec`, discriminated by ``method`` (no method: the market's default,
    #: whose settings are checked once the worker model is known; an import path's settings,
    #: once its class is imported; an unknown one, refused then with the market's methods).
    Inferences = tagged_union(METHOD_VARIANTS, InferenceSpec, "method")


def __getattr__(name: str) -> type[Options]:
    """A method's settings model by its name (``DawidSkeneSettings``), built on demand: how
    pickle finds the generated models in another process (a worker unpickling a scenario)."""
    # the latest model built first: a plug-in imported again (a test) has two of that name
    for cls in (*METHODS.values(), *reversed(_MODELS), *_estimator_classes(Estimator)):
        if f"{cls.__name__}Settings" == name and cls.method:
            return _settings_of(cls)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _estimator_classes(base: type[Estimator]) -> list[type[Estimator]]:
    """Every imported subclass of ``base``, plug-ins included (a worker process unpickling a
    plug-in method's settings has imported its class, but not yet built their model)."""
    return [c for sub in base.__subclasses__() for c in (sub, *_estimator_classes(sub))]


def known_settings() -> tuple[str, ...]:
    """Every setting some method known to this process takes: the built-in ones', and those of
    the plug-ins imported so far (a sweep may name any of them)."""
    classes = (*METHODS.values(), *(c for c in _MODELS if c not in METHODS.values()))
    return tuple(dict.fromkeys(k for c in classes for k in _settings_of(c).model_fields))
