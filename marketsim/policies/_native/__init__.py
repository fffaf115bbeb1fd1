"""The policies' compiled code: ``tree_builder``, the random-forest policy's tree builder (C).

Its own package, importing nothing, so that loading the extension pulls in no other module of
``marketsim.policies`` (a compiled module has no Python source for import tools to read).
"""
