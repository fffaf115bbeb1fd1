"""What a run produces and how it is stored: curve points, unit results, summaries, atomic files.

The record layer sits below the scenario, the market and the study: it knows nothing of how
a curve was simulated, only its rows, so reports and the Python API can read any run folder.
"""
