"""Class labels of a text file as classes: which spellings are one class, in which order, and
how each class is written back.

Read exactly, never through a float: two labels that differ beyond float precision (above
2**53, or ``0.1`` and ``0.10000000000000001``) are two classes, and an integer of any size is a
class. When every label spells a number (``[+-]digits[.digits][e[+-]digits]``), spellings of the
same value are one class (``"10"`` and ``"10.0"``), classes are in numeric order, and each is
written as its first spelling in the files (labels file first, then truth); the class ids are
then integers (int64, or Python ints beyond int64) when every class is spelled as a plain
integer, else those spellings as text. Otherwise classes are the distinct texts, in
lexicographic order. So an output file writes each class exactly as the input spelled it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal

import numpy as np

_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_PLAIN_INT = re.compile(r"0|-?[1-9][0-9]*")
_INT64_MAX = 2**63 - 1


def class_table(spellings: Iterable[str]) -> tuple[dict[str, int], np.ndarray]:
    """Each distinct spelling's class index, and the class ids (see the module docstring).

    ``spellings`` are the label texts in file order (duplicates allowed; only the first
    occurrence of each matters)."""
    distinct = list(dict.fromkeys(spellings))
    if distinct and all(_NUMBER.fullmatch(s) for s in distinct):
        first: dict[Decimal, str] = {}
        for s in distinct:  # Decimal: exact, and "10" == "10.0" hash alike
            first.setdefault(Decimal(s), s)
        values = sorted(first)
        position = {v: i for i, v in enumerate(values)}
        index = {s: position[Decimal(s)] for s in distinct}
        names = [first[v] for v in values]
        return index, _integer_ids(names)
    ordered = sorted(distinct)
    return {s: i for i, s in enumerate(ordered)}, np.array(ordered, dtype=str)


def _integer_ids(names: list[str]) -> np.ndarray:
    """``names`` as integers when each is a plain integer (int64 when all fit, else Python
    ints, exact at any size), else as the texts."""
    if not all(_PLAIN_INT.fullmatch(s) for s in names):
        return np.array(names, dtype=str)
    try:
        ints = [int(s) for s in names]
    except ValueError:  # more digits than Python converts to int: keep the text
        return np.array(names, dtype=str)
    if all(-_INT64_MAX - 1 <= v <= _INT64_MAX for v in ints):
        return np.array(ints, dtype=np.int64)
    out = np.empty(len(ints), dtype=object)
    out[:] = ints
    return out
