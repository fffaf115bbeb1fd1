"""Who arrives when: a Poisson process of the pool's workers, each arrival a uniformly chosen
worker, or one chosen by ``[workers.arrivals] weights`` (who works a lot, as calibrated from a
label file), or, with ``order = "deck"``, the next card of a shuffled deck holding worker j
``weights[j]`` times (:class:`Deck`)."""

from __future__ import annotations

import numpy as np

from marketsim.scenario.crowd_specs import ArrivalsSpec
from marketsim.workers.draws import deck_cards, deck_counts


class Deck:
    """Arrivals as cards: worker j's card ``counts[j]`` times, shuffled by the arrivals stream,
    less the cards an initial graph took (:func:`~marketsim.workers.draws.initial_pairs` deals
    them off the top of a deck of its own); a fresh shuffle of the whole deck when it is used
    up. So at ``sum(counts)`` labels (initial graph included) each worker has arrived exactly
    ``counts[j]`` times, and at fewer a hypergeometric thinning of it.

    A card is spent even where its arrival is lost (a busy or blocked worker, one declined by
    the policy), so the counts are exact only where every arrival is served (a plain crowd
    whose answers come at once, as ``calibrate``'s twins).

    The cards are a buffer read from ``position``: a block of arrivals is dealt, and the cards
    it did not use are put back on top (:meth:`put_back`), so no card is lost to a block that
    stopped early."""

    def __init__(self, counts: np.ndarray, initial_workers: np.ndarray) -> None:
        self.counts = counts
        dealt = np.bincount(initial_workers, minlength=counts.size)[:counts.size]
        #: The first deck's cards (unshuffled until the first draw): what the initial graph left.
        self.cards = deck_cards(np.maximum(counts - dealt, 0))
        self.position = 0
        self.shuffled = False

    def deal(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """The next ``size`` cards (a fresh shuffle of the whole deck appended as often as the
        rest runs short)."""
        if not self.shuffled:
            self.cards, self.shuffled = rng.permutation(self.cards), True
        while self.cards.size - self.position < size:
            fresh = rng.permutation(deck_cards(self.counts))
            self.cards, self.position = np.concatenate([self.cards[self.position:], fresh]), 0
        out = self.cards[self.position:self.position + size]
        self.position += size
        return out

    def put_back(self, unused: int) -> None:
        """Return the last ``unused`` cards dealt to the top of the deck."""
        self.position -= unused


class Arrivals:
    """The next arrival: the time until it and the worker who arrives."""

    def __init__(self, spec: ArrivalsSpec, n_workers: int,
                 initial_workers: np.ndarray | None = None) -> None:
        self.mean_gap = 1.0 / spec.rate
        self.n_workers = n_workers
        weights = spec.weights
        #: Cumulative arrival shares (``None``: uniform); a weight-0 worker never arrives.
        self.cumulative = None if weights is None else np.cumsum(
            np.asarray(weights, dtype=np.float64) / sum(weights))
        #: The deck of ``order = "deck"`` (``None``: each arrival drawn afresh), less the
        #: initial graph's cards (``initial_workers``: the world's initial graph).
        self.deck = None if spec.order != "deck" or weights is None else Deck(
            deck_counts(weights), np.zeros(0, dtype=np.int64) if initial_workers is None
            else np.asarray(initial_workers, dtype=np.int64))

    def draw(self, rng: np.random.Generator) -> tuple[float, int]:
        """``(gap, worker)``, drawn in that order from ``rng`` (the uniform case draws exactly
        what it always drew, so its runs are unchanged)."""
        gap = rng.exponential(self.mean_gap)
        if self.deck is not None:
            return gap, int(self.deck.deal(rng, 1)[0])
        if self.cumulative is None:
            return gap, int(rng.integers(self.n_workers))
        pick = int(np.searchsorted(self.cumulative, rng.random(), side="right"))
        return gap, min(pick, self.n_workers - 1)

    def draw_block(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``size`` arrivals at once, ``(gaps, workers)`` as arrays: all the gaps, then all the
        workers (the block engine's layout of the stream, not :meth:`draw`'s). With a deck,
        the caller returns the arrivals it did not use (:meth:`unused`)."""
        gaps = rng.exponential(self.mean_gap, size)
        if self.deck is not None:
            return gaps, self.deck.deal(rng, size)
        if self.cumulative is None:
            return gaps, rng.integers(self.n_workers, size=size, dtype=np.int64)
        picks = np.searchsorted(self.cumulative, rng.random(size), side="right")
        return gaps, np.minimum(picks, self.n_workers - 1).astype(np.int64)

    def unused(self, count: int) -> None:
        """The last ``count`` arrivals of a block did not come (the block stopped early): a
        deck's cards go back on top; independent arrivals are simply dropped."""
        if self.deck is not None and count:
            self.deck.put_back(count)
