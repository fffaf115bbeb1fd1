"""The estimator convention every aggregator follows: its parameters are declared once, as the
class's ``Options`` model (:class:`marketsim.aggregation.options.Params`); the constructor
takes them as keyword arguments, validated by that model, and stores them under their own
names; ``get_params``/``set_params`` read and change them (validated again) — scikit-learn's
convention (so ``sklearn.base.clone`` works on them), without importing scikit-learn, which
costs every command 1.5 s of start-up. ``inspect.signature(cls)`` and ``help(cls)`` show the
model's parameters and defaults.

A class that is an inference method also states its facts here, as class variables the
registry (:mod:`marketsim.aggregation.registry`), scenario validation and the reports read:
``method`` (the name a scenario and ``marketsim infer`` use), ``description`` (one line),
``output`` (``"classes"`` or ``"scores"``) and ``BINARY_ONLY``; and its words,
:meth:`Estimator.describe`.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import ValidationError

from marketsim.aggregation.options import SCENARIO_UNSET, Params
from marketsim.options import option_problem


class ConvergenceWarning(UserWarning):
    """An iterative estimator stopped at ``max_iter`` before its tolerance was met."""


if TYPE_CHECKING:
    # Fitted attributes (``proba_``, ``means_``, ...) differ per estimator and are set by
    # ``fit``; the type checker sees them as it saw them on scikit-learn's (untyped) base.
    _Dynamic = Any
else:
    _Dynamic = object

#: How :meth:`Estimator.describe` words an EM start.
_STARTS = {"majority": "majority vote", "random": "a random start",
           "spectral": "a spectral estimate"}
#: Settings :meth:`Estimator.describe` words itself; every other one is ``name = value``.
_WORDED = ("class_prior", "init", "warm_start", "spectral_rule", "alpha", "beta", "low")


class Estimator(_Dynamic):
    """Base class: parameters from the class's ``Options`` model, ``get_params`` and
    ``set_params``, a repr showing the parameters that differ from their defaults, and the
    method's facts and words."""

    #: The parameters, declared once (a subclass sets its own; the default takes none).
    Options: ClassVar[type[Params]] = Params
    #: The inference method this class is (a scenario's ``inference.method``, ``infer
    #: --method``); ``None``: a base class or a helper, not in the registry.
    method: ClassVar[str | None] = None
    #: One line on the method, as ``marketsim list`` and report.md print it.
    description: ClassVar[str] = ""
    #: What the method estimates: classes (``proba_``, ``labels_``) or scores (``means_``).
    output: ClassVar[Literal["classes", "scores"]] = "classes"
    #: The method refuses more than two classes.
    BINARY_ONLY: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._own_init():  # its parameters are its __init__'s: inspect reads that
            cls.__signature__ = None
            return
        cls.__signature__ = inspect.Signature([
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info.default)
            for name, info in cls.Options.model_fields.items()])

    @classmethod
    def _own_init(cls) -> bool:
        """A subclass written outside marketsim the scikit-learn way: its ``__init__`` stores
        its keyword arguments, it declares no ``Options``."""
        return cls.__init__ is not Estimator.__init__ and not cls.Options.model_fields

    @classmethod
    def _param_defaults(cls) -> dict[str, Any]:
        """The parameters and their defaults: the ``Options`` model's fields, or the keyword
        parameters of a subclass's own ``__init__`` (read once per class)."""
        if cls not in _DEFAULTS:
            if cls._own_init():
                signature = inspect.signature(cls.__init__)
                _DEFAULTS[cls] = {
                    name: p.default for name, p in signature.parameters.items()
                    if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
            else:
                _DEFAULTS[cls] = {k: f.default for k, f in cls.Options.model_fields.items()}
        return _DEFAULTS[cls]

    def __init__(self, **params: Any) -> None:
        unknown = [name for name in params if name not in self.Options.model_fields]
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument "
                            f"{unknown[0]!r}; its parameters: "
                            f"{', '.join(self.Options.model_fields) or 'none'}")
        self._store_params(params)

    def _store_params(self, params: Mapping[str, Any]) -> None:
        """Validate ``params`` (a ValueError naming the parameter otherwise) and keep them."""
        try:
            checked = self.Options.model_validate(params)
        except ValidationError as exc:
            raise ValueError(f"{type(self).__name__}: "
                             f"{option_problem(exc, self.Options)}") from None
        for name in self.Options.model_fields:
            setattr(self, name, getattr(checked, name))

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The estimator's parameters (with ``deep``, nested estimators' as ``name__key``)."""
        params: dict[str, Any] = {}
        for name in self._param_defaults():
            value = getattr(self, name)
            params[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{k}", v) for k, v in value.get_params().items())
        return params

    def set_params(self, **params: Any) -> Estimator:
        """Change parameters (``name__key`` for a nested estimator's), validated as the
        constructor validates them; return ``self``."""
        valid = self._param_defaults()
        own: dict[str, Any] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters: {', '.join(sorted(valid))}")
            if sub:
                getattr(self, name).set_params(**{sub: value})
            else:
                own[name] = value
        fields = self.Options.model_fields
        if self._own_init() or all(fields[name].annotation is Any for name in own):
            for name, value in own.items():  # nothing to check (the market's random_state)
                setattr(self, name, value)
        elif own:
            self._store_params({**self.get_params(deep=False), **own})
        return self

    def __repr__(self) -> str:
        changed = []
        for name, default in self._param_defaults().items():
            value = getattr(self, name, default)
            same = value is default or (
                not isinstance(value, np.ndarray) and not isinstance(default, np.ndarray)
                and type(value) is type(default) and value == default)
            if not same:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

    @classmethod
    def describe(cls, settings: Mapping[str, Any] | None = None, *,
                 inherited: Collection[str] = ()) -> str:
        """The method in words: its description, then (given ``settings``, the values it runs
        with) those settings, as report.md's "Inference methods" section prints them;
        ``inherited``: the ability-prior settings whose value is the scenario's
        ``[workers.ability]`` rather than the arm's. No final full stop: the caller ends the
        sentence."""
        text = cls.description
        if not settings:
            return text
        parts = []
        if "class_prior" in settings:
            cp = settings["class_prior"]
            parts.append({"true": "the class prior is the scenario's, known to the requester",
                          "estimate": "the class prior is re-estimated by EM"}.get(
                              str(cp), f"the class prior is fixed at {cp}"))
        init = settings.get("init")
        if init:
            parts.append("EM starts from " + _STARTS.get(str(init), str(init)))
        prior = [k for k in ("alpha", "beta", "low") if k in settings and cls._ability_prior(k)]
        if prior:
            own = [k for k in prior if k not in inherited]
            shown = ", ".join(f"{k} = {settings[k]:g}" for k in prior)
            parts.append(f"the ability prior has {shown} (" + (
                f"{', '.join(own)} set by the arm, the rest " if own else "") +
                "the scenario's `[workers.ability]`)")
        if settings.get("warm_start"):
            parts.append("each refresh starts from the previous estimate (warm start)")
        if settings.get("spectral_rule") == "authors":
            parts.append("the spectral start is the authors' released code's "
                         "(numbering-dependent)")
        rest = [f"`{k} = {v!r}`" for k, v in settings.items()
                if k not in _WORDED or k in ("alpha", "beta", "low") and k not in prior]
        if rest:
            parts.append(", ".join(rest))
        return f"{text}. Settings: " + "; ".join(parts)

    @classmethod
    def _ability_prior(cls, name: str) -> bool:
        """Parameter ``name`` is a parameter of the workers' ability prior (a scenario leaves
        it to ``[workers.ability]``), not some other ``alpha`` (a plug-in's smoothing)."""
        field = cls.Options.model_fields.get(name)
        extra = field.json_schema_extra if field is not None else None
        return isinstance(extra, dict) and str(extra.get(SCENARIO_UNSET, "")).startswith(
            "workers.ability.")


#: Each class's parameters and defaults, read once (the market sets ``random_state`` at every
#: refresh).
_DEFAULTS: dict[type, dict[str, Any]] = {}
