"""Type stub of the C extension ``tree_builder.c``: scikit-learn's entropy trees, grown faster."""

from typing import Any

def grow(
    rows: Any,
    y: Any,
    n_classes: int,
    max_depth: int,
    max_features: int,
    rand_state: int,
    left_child: Any,
    right_child: Any,
    feature: Any,
    threshold: Any,
    impurity: Any,
    n_node_samples: Any,
    weighted_n_node_samples: Any,
    missing_go_to_left: Any,
    value: Any,
    /,
) -> tuple[int, int]:
    """Grow the tree of ``rows`` (float32, C order, finite) and ``y`` (uint8 class codes)
    into the node arrays; return (node count, depth reached)."""

def splitter_state(seed: int, /) -> int:
    """``numpy.random.RandomState(seed).randint(0, 2**31 - 1)`` for ``0 <= seed < 2**32``."""
