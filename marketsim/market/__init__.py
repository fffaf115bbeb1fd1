"""The SimPy market of one (replicate, arm) unit: the world draw, answer models, the requester,
the inference service and the recorder."""
