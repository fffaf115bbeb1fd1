"""marketsim: a discrete-event simulator of a crowdsourcing marketplace.

It models workers with hidden abilities, a requester that spends a labelling budget through
pluggable assignment policies, and an inference service that aggregates labels with EM-style
estimators (one-coin EM with priors, Dawid-Skene, spectral-initialised Opt-D&S, and baselines).
"""

from marketsim._version import __version__

__all__ = ["__version__"]
