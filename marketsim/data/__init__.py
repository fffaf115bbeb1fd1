"""Label containers and file loaders."""

from marketsim.data.labels import LabelSet

__all__ = ["LabelSet"]
