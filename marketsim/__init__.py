"""marketsim: a discrete-event simulator of a crowdsourcing marketplace.

It models workers with hidden abilities, a requester that spends a labelling budget through
pluggable assignment policies, and an inference service that aggregates labels with EM-style
estimators (one-coin EM with priors, Dawid-Skene, spectral-initialised Opt-D&S, and baselines).

The Python API (``docs/api.md``): :func:`load_scenario`, :func:`scenario_from_dict`,
:func:`run` and its :class:`StudyResult`, :func:`compare` and :func:`sweep`.

The API is loaded on first use (PEP 562): ``python -m marketsim`` imports this package before
the command line runs, and the command line must import the scientific stack itself, inside
its Ctrl-C guard, to keep its promises (exit 130, never a traceback, when interrupted while
starting) and a quick ``--help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from marketsim._version import __version__

if TYPE_CHECKING:  # pragma: no cover - for type checkers and editors only
    from marketsim.api import StudyResult, compare, load_scenario, run, scenario_from_dict, sweep
    from marketsim.scenario.specs import Scenario

__all__ = ["Scenario", "StudyResult", "__version__", "compare", "load_scenario", "run",
           "scenario_from_dict", "sweep"]


def __getattr__(name: str) -> Any:
    """The public API names, imported on first access."""
    if name == "Scenario":
        from marketsim.scenario.specs import Scenario

        return Scenario
    if name in ("StudyResult", "compare", "load_scenario", "run", "scenario_from_dict", "sweep"):
        from marketsim import api

        return getattr(api, name)
    raise AttributeError(f"module 'marketsim' has no attribute {name!r}")
