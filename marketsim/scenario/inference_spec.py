"""An arm's inference service, ``[arms.inference]``: :class:`InferenceSpec`, the method and its
settings (an instance of the method's ``Options`` model)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, PrivateAttr, model_serializer

from marketsim.aggregation.registry import METHODS, MethodSpec
from marketsim.options import F, Options
from marketsim.scenario.table import Table


class InferenceSpec(Table):
    """``[arms.inference]``: a method name, or this table whose other keys are the method's
    settings (checked against the method's settings model: see the tables below and
    `python -m marketsim list --method NAME`)

    Once the scenario is resolved, ``options`` is the method's settings, an instance of its
    registry entry's ``Options`` model (:mod:`marketsim.aggregation.registry`; its
    ``model_fields_set`` are the settings the scenario gave). ``class_prior`` is ``"true"``
    (the scenario's prior, known to the requester as in Maginnis & Gupta 2015),
    ``"estimate"`` (re-estimated by EM) or explicit probabilities. Prior parameters ``alpha``,
    ``beta``, ``low`` default to the scenario's ability distribution. Dumping the spec writes
    the method with every setting it runs with.
    """

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, allow_inf_nan=False)

    method: str = F(None, "a class method for class markets (`mv`, `one-coin`, "
                    "`one-coin-beta`, `one-coin-shifted-beta`, `one-coin-spectral`, `ds`, "
                    "`opt-ds`, `ds-features`, `kos`, ...), a score method for "
                    "`gaussian-scores` (`gaussian-em`, `gaussian-hard-em`)",
                    shown='"one-coin-shifted-beta" ("gaussian-em")')
    _options: Options | None = PrivateAttr(default=None)
    #: An estimator object given in Python (``marketsim.scenario_from_dict``): the market
    #: fits fresh copies of it instead of a registry method (``method`` is then its class name).
    _estimator: Any = PrivateAttr(default=None)

    @classmethod
    def resolved(cls, method: str, options: Options | None = None,
                 estimator: Any = None) -> InferenceSpec:
        """The spec of ``method`` run with ``options`` (``None``: its defaults), or of an
        estimator object."""
        spec = cls(method=method)
        spec._options = options
        spec._estimator = estimator
        return spec

    @property
    def options(self) -> Options:
        """The method's settings (its defaults if none were given)."""
        if self._options is not None:
            return self._options
        entry = self.entry
        return entry.options() if entry is not None else Options()

    @property
    def entry(self) -> MethodSpec | None:
        """The registry entry of ``method`` (``None`` for an estimator object's class name);
        the market builds estimators from it (``market.inference.estimator_factory``)."""
        return METHODS.get(self.method)

    @property
    def estimator(self) -> Any:
        """The estimator object given in Python, or ``None``."""
        return self._estimator

    @property
    def warm_start(self) -> bool:
        """Whether each refresh's EM starts from the previous posterior (a method without the
        setting never does)."""
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
