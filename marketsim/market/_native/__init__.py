"""The market's compiled code: ``hand_out``, the block engine's hand-out loop (C).

Its own package, importing nothing, so that loading the extension pulls in no other module of
``marketsim.market``.
"""
