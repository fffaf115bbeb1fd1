"""Run outputs: atomic file writes, curves, summaries."""
