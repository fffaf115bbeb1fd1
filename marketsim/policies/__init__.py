"""Assignment policies: which task an arriving worker gets. A policy is one class, a subclass
of :class:`Policy` in a module of this package (discovered by :mod:`.registry`)."""

from marketsim.policies.base import AssignmentPolicy, MarketInfo, MarketState, Policy
from marketsim.policies.registry import POLICIES, make_policy

__all__ = ["POLICIES", "AssignmentPolicy", "MarketInfo", "MarketState", "Policy", "make_policy"]
