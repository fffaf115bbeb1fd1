"""The settings EM methods share, declared once: the base of each method's ``Options`` model.

An inference method's settings (the keys of an arm's ``inference`` table besides ``method``)
are a :class:`marketsim.options.Options` model, named by the method's registry entry
(:mod:`marketsim.aggregation.registry`) and declared next to the estimator class, in its
module. The EM methods (one-coin, Dawid-Skene and its variants) take the five settings of
:class:`EMOptions`; a method adds its own (``alpha``, ``beta``, ``low``, ``spectral_rule``) in
a subclass. Scenario validation, the settings tables of ``docs/scenarios.md``, the JSON
Schema and ``marketsim list --method`` read these models; the scenario turns their values
into the estimator's keyword arguments (``marketsim.scenario.inference_options``).
"""

from __future__ import annotations

from typing import Any, Literal

from marketsim.options import F, Options

#: The starts an EM method can take (``init``).
INIT_METHODS = ("majority", "random", "spectral")


def init_field(shown: str) -> Any:
    """The ``init`` setting, ``shown`` being the method's own start (the default)."""
    return F(None, "EM start: majority vote, Maginnis & Gupta's uniformly random start, or "
             "spectral", shown=shown)


class EMOptions(Options):
    """Settings of an EM method."""

    init: Literal[INIT_METHODS] | None = init_field(  # type: ignore[valid-type]
        '"majority"')
    max_iter: int = F(100, "EM iterations at most", ge=1, le=100_000)
    tol: float = F(1e-7, "stop when the objective changes by less than tol per label; 0 runs "
                   "max_iter iterations (stopping early only at an exact fixed point)", ge=0)
    class_prior: Literal["true", "estimate"] | list[float] = F(
        "true", "the scenario's prior (known to the requester, as in Maginnis & Gupta 2015), "
        "re-estimated by EM, or K probabilities")
    warm_start: bool = F(False, "start each refresh's EM from the previous posterior")


class SpectralStartOptions(EMOptions):
    """Settings of an EM method that starts from a spectral estimate."""

    init: Literal[INIT_METHODS] | None = init_field(  # type: ignore[valid-type]
        '"spectral"')
