"""Machine annotators (issue #41): classifiers and language models a requester asks beside the
human crowd, one class per kind (:mod:`~marketsim.machines.base`, discovered by
:mod:`~marketsim.machines.registry`; the first kind, :mod:`~marketsim.machines.classifier`),
and a replicate's machines drawn together, their shared latent errors and the humans'
task difficulty they follow (:mod:`~marketsim.machines.panel`). The market's call service
(:mod:`marketsim.market.machine_calls`) charges, delays and rate-limits their calls."""
