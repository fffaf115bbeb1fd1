"""Assignment policies: which task an arriving worker gets."""

from marketsim.policies.base import AssignmentPolicy, MarketInfo, MarketState
from marketsim.policies.registry import POLICIES, make_policy

__all__ = ["POLICIES", "AssignmentPolicy", "MarketInfo", "MarketState", "make_policy"]
