"""An estimator's hyperparameters, declared once: the :class:`Params` model every estimator
class carries as its class attribute ``Options``, and the parameters EM methods share.

Each field of an estimator's ``Options`` is one constructor parameter, with its type,
default, range and one-line description (:func:`param`). The constructor, ``get_params``,
``set_params``, ``inspect.signature(cls)`` and ``help()`` read it
(:class:`marketsim.aggregation.estimator.Estimator`), and so does a scenario: an inference
method's settings (the keys of an arm's ``inference`` table besides ``method``) are its
class's parameters, turned into a scenario table by
:func:`marketsim.scenario.inference_options.settings_model`. A field says how a scenario
treats it, once, where it is declared:

- ``setting=False``: not a scenario setting (``random_state``, which the market seeds; a
  parameter whose name a scenario gives another meaning);
- ``scenario_unset=...``: in a scenario the setting is unset (``None``) by default, meaning
  the estimator's own default (``""``: ``init``, ``spectral_rule``) or a scenario key
  (``"workers.ability.alpha"``: the ability prior of the one-coin MAP methods).

``class_prior`` is the scenario's ``"true"`` prior by default, for every method that has one
(also :mod:`marketsim.scenario.inference_options`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: The JSON Schema extension marking a parameter that is no scenario setting.
PYTHON_ONLY = "x-python-only"
#: The JSON Schema extension marking a parameter that a scenario leaves unset by default;
#: its value is the scenario key an unset value reads ("" : the estimator's own default).
SCENARIO_UNSET = "x-scenario-unset"
#: The starts an EM method can take (``init``).
INIT_METHODS = ("majority", "random", "spectral")


class Params(BaseModel):
    """The estimator takes no parameters.

    Lax types (a numpy integer is a count; ``1`` is a float), no unknown keys, no NaN or
    infinity, immutable: the estimator copies the values onto itself."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, defer_build=True)


def param(default: Any, description: str, *, setting: bool = True,
          scenario_unset: str | None = None, **kw: Any) -> Any:
    """An estimator parameter: its default, one-line description and range (``ge``, ``le``…);
    ``setting`` and ``scenario_unset`` say how a scenario treats it (module docstring)."""
    extra: dict[str, Any] = {}
    if not setting:
        extra[PYTHON_ONLY] = True
    if scenario_unset is not None:
        extra[SCENARIO_UNSET] = scenario_unset
    return Field(default, description=description, json_schema_extra=extra or None, **kw)


def random_state_param(default: Any = None) -> Any:
    """``random_state``: None, an int or a numpy Generator; never a scenario setting (the
    market seeds every refresh from its own stream)."""
    return param(default, "seed or numpy Generator of the estimator's random draws",
                 setting=False)


def init_param(default: str) -> Any:
    """The ``init`` parameter, ``default`` being the method's own start (a scenario leaves it
    unset: that start)."""
    return param(default, "EM start: majority vote, Maginnis & Gupta's uniformly random start, "
                 "or spectral", scenario_unset="")


class EMOptions(Params):
    """Parameters of an EM method (:class:`marketsim.aggregation.base.EMAggregator`)."""

    init: Literal["majority", "random"] = init_param("majority")
    max_iter: int = param(100, "EM iterations at most", ge=1, le=100_000)
    tol: float = param(1e-7, "stop when the objective changes by less than tol per label; 0 "
                       "runs max_iter iterations (stopping early only at an exact fixed point)",
                       ge=0)
    class_prior: Any = param(None, "the fixed class prior (K probabilities) or None, "
                             "re-estimated by EM; a scenario's default is its own prior")
    random_state: Any = random_state_param()


class SpectralInitOptions(EMOptions):
    """Parameters of an EM method that may start from a spectral estimate."""

    init: Literal["majority", "random", "spectral"] = init_param(  # type: ignore[assignment]
        "majority")
