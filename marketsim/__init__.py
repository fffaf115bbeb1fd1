"""marketsim: a discrete-event simulator of a crowdsourcing marketplace.

It models workers with hidden abilities, a requester that spends a labelling budget through
pluggable assignment policies, and an inference service that aggregates labels with EM-style
estimators (one-coin EM with priors, Dawid-Skene, spectral-initialised Opt-D&S, and baselines).

The Python API (``docs/api.md``): :func:`load_scenario`, :func:`scenario_from_dict`,
:func:`run` and its :class:`StudyResult`.
"""

from marketsim._version import __version__
from marketsim.api import StudyResult, load_scenario, run, scenario_from_dict
from marketsim.scenario.build import Scenario

__all__ = ["Scenario", "StudyResult", "__version__", "load_scenario", "run",
           "scenario_from_dict"]
