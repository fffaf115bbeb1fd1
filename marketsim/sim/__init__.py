"""The marketplace simulation: scenarios, the SimPy market, the recorder and the study runner."""
