"""Load labels (and truth) in either format: detection by extension and dispatch.

Every loader returns ``(labels, truth)`` where ``truth`` is ``None`` or an int array over the
label set's tasks holding the class index, or -1 where the truth is unknown. Bad files raise
:class:`~marketsim.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import os
from pathlib import Path

from marketsim.data.assembly import Truth
from marketsim.data.csv_labels import load_csv
from marketsim.data.labels import LabelSet
from marketsim.data.zhang import load_zhang
from marketsim.errors import InputError

#: Supported file formats, for ``--format``.
FORMATS = ("zhang", "csv")


def detect_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, else ``csv`` for ``.csv`` files, else ``zhang``."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
        return fmt
    return "csv" if Path(path).suffix.lower() == ".csv" else "zhang"


def load_labels(
    labels_path: str | os.PathLike[str],
    truth_path: str | os.PathLike[str] | None = None,
    fmt: str | None = None,
) -> tuple[LabelSet, Truth]:
    """Load labels (and truth) in ``fmt``, auto-detected from the labels file's extension."""
    kind = detect_format(labels_path, fmt)
    loader = load_csv if kind == "csv" else load_zhang
    return loader(labels_path, truth_path)
