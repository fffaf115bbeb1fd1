"""The estimator convention every aggregator follows: parameters are the keyword arguments of
``__init__``, stored under their own names, read with ``get_params`` and changed with
``set_params`` — scikit-learn's convention (so ``sklearn.base.clone`` works on them), without
importing scikit-learn, which costs every command 1.5 s of start-up.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import numpy as np


class ConvergenceWarning(UserWarning):
    """An iterative estimator stopped at ``max_iter`` before its tolerance was met."""


if TYPE_CHECKING:
    # Fitted attributes (``proba_``, ``means_``, ...) differ per estimator and are set by
    # ``fit``; the type checker sees them as it saw them on scikit-learn's (untyped) base.
    _Dynamic = Any
else:
    _Dynamic = object


class Estimator(_Dynamic):
    """Base class: ``get_params``/``set_params`` from the ``__init__`` signature, and a repr
    that shows the parameters that differ from their defaults."""

    @classmethod
    def _param_defaults(cls) -> dict[str, Any]:
        """The keyword parameters of ``__init__`` and their defaults (read once per class:
        the market sets ``random_state`` at every refresh)."""
        return _init_defaults(cls)

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
        """Change parameters (``name__key`` for a nested estimator's); return ``self``."""
        valid = self._param_defaults()
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters: {', '.join(sorted(valid))}")
            if sub:
                getattr(self, name).set_params(**{sub: value})
            else:
                setattr(self, name, value)
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


_DEFAULTS: dict[type, dict[str, Any]] = {}


def _init_defaults(cls: type) -> dict[str, Any]:
    """``cls.__init__``'s keyword parameters and their defaults, read once per class."""
    if cls not in _DEFAULTS:
        signature = inspect.signature(cls.__init__)  # type: ignore[misc]
        _DEFAULTS[cls] = {name: p.default for name, p in signature.parameters.items()
                          if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return _DEFAULTS[cls]
