"""An arm's inference service as the scenario resolved it: :class:`InferenceSpec`, the method
and its settings (an instance of the method's ``Options`` model), and how ``to_dict`` records
it (the run's identity)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from marketsim.aggregation.registry import METHODS, MethodSpec
from marketsim.options import Options

#: Field metadata of resolved objects: not parameters, so not in ``to_dict()``.
_RESOLVED = {"resolved": True}


@dataclass(frozen=True)
class InferenceSpec:
    """The arm's inference service: method name and its settings.

    ``options`` is the method's settings, an instance of its registry entry's ``Options``
    model (:mod:`marketsim.aggregation.registry`; its ``model_fields_set`` are the settings the
    scenario gave). ``class_prior`` is ``"true"`` (the scenario's prior, known to the requester
    as in Maginnis & Gupta 2015), ``"estimate"`` (re-estimated by EM) or explicit
    probabilities. Prior parameters ``alpha``, ``beta``, ``low`` default to the scenario's
    ability distribution. A setting reads as an attribute too (``spec.max_iter``); one the
    method does not take reads as its default.
    """

    method: str = "one-coin-shifted-beta"
    #: The method's settings (``None``: its defaults; an estimator object's arm: none).
    options: Options | None = None
    #: The registry entry of ``method``, looked up once here; the market builds estimators
    #: from it (``market.inference.estimator_factory``) without looking the name up again.
    entry: MethodSpec | None = field(default=None, compare=False, repr=False,
                                     metadata=_RESOLVED)
    #: An estimator object given in Python (``marketsim.scenario_from_dict``): the market
    #: fits fresh copies of it instead of a registry method (``method`` is then its class name).
    estimator: Any = field(default=None, compare=False, repr=False, metadata=_RESOLVED)

    def __post_init__(self) -> None:
        if self.entry is None and self.method in METHODS:
            object.__setattr__(self, "entry", METHODS[self.method])
        if self.options is None:
            model = self.entry.options if self.entry is not None else Options
            object.__setattr__(self, "options", model())

    def __getattr__(self, name: str) -> Any:
        # Only called when ``name`` is not a field: a setting of the method, or one every
        # arm records (``to_dict``) at its default.
        if name.startswith("__"):
            raise AttributeError(name)
        record = self.as_record()
        if name == "method" or name not in record:
            raise AttributeError(f"{type(self).__name__!r} has no setting {name!r}")
        return record[name]

    def as_record(self) -> dict[str, Any]:
        """The spec as ``to_dict`` writes it: the method, then every setting of
        :data:`RECORDED_SETTINGS` (the method's value, else the default the methods declare),
        then any other setting of the method that is not at its default: so adding a setting
        to a method leaves the fingerprints of runs that do not set it unchanged."""
        options = self.options if self.options is not None else Options()
        values = options.model_dump()
        out: dict[str, Any] = {"method": self.method}
        for name in RECORDED_SETTINGS:
            out[name] = values.pop(name) if name in values else _recorded_defaults()[name]
        fields_ = type(options).model_fields
        out.update({k: v for k, v in values.items() if v != fields_[k].default})
        return {k: tuple(v) if isinstance(v, list) else v for k, v in out.items()}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> InferenceSpec:
        """The spec ``as_record`` wrote (``validate --json``, ``run.json``) read back."""
        method = record["method"]
        model = METHODS[method].options if method in METHODS else Options
        return cls(method, model.model_validate(
            {k: v for k, v in record.items() if k in model.model_fields}))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Registry entries hold lambdas (not picklable): send the settings and resolve the
        # entry again on arrival in the worker process.
        return (InferenceSpec, (self.method, self.options, None, self.estimator))


#: The settings every arm's ``to_dict`` writes (what it wrote when ``InferenceSpec`` had one
#: field per setting), so run fingerprints did not change when methods got their own
#: ``Options`` models; a method that does not take one records the methods' default.
RECORDED_SETTINGS = ("init", "max_iter", "tol", "class_prior", "alpha", "beta", "low",
                     "warm_start", "spectral_rule")


@cache
def _recorded_defaults() -> dict[str, Any]:
    """Each recorded setting's default, as the methods declaring it declare it."""
    out: dict[str, Any] = {}
    for entry in METHODS.values():
        for name, info in entry.options.model_fields.items():
            out.setdefault(name, info.default)
    return {name: out[name] for name in RECORDED_SETTINGS}
