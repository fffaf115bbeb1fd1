"""The package version, at the bottom of the house so any layer may read it."""

__version__ = "0.1.0"
