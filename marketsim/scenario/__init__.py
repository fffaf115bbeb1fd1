"""Scenarios: the frozen specs of a study, the TOML parser that validates them, sweeps, replay."""
