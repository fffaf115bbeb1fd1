"""Load labels (and truth) in either format: detection by extension and dispatch.

Every loader returns ``(labels, truth)`` where ``truth`` is ``None`` or an int array over the
label set's tasks holding the class index, or -1 where the truth is unknown
(:func:`load_labels_timed` also each label's time). Bad files raise
:class:`~marketsim.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import os
from pathlib import Path

from marketsim.data.assembly import DropNote, Truth
from marketsim.data.columns import ColumnMap
from marketsim.data.csv_labels import load_csv, load_csv_timed
from marketsim.data.labels import LabelSet
from marketsim.data.timestamps import Timestamps
from marketsim.data.zhang import load_zhang
from marketsim.errors import InputError

#: Supported file formats, for ``--format``.
FORMATS = ("zhang", "csv")


def detect_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, else ``csv`` for ``.csv`` and ``.tsv`` files
    (the delimiter is detected from the header line), else ``zhang``."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
        return fmt
    return "csv" if Path(path).suffix.lower() in (".csv", ".tsv") else "zhang"


def load_labels(
    labels_path: str | os.PathLike[str],
    truth_path: str | os.PathLike[str] | None = None,
    fmt: str | None = None,
    *,
    delimiter: str | None = None,
    columns: ColumnMap | None = None,
    duplicates: str = "error",
    on_drop: DropNote | None = None,
) -> tuple[LabelSet, Truth]:
    """Load labels (and truth) in ``fmt``, auto-detected from the labels file's extension.

    ``delimiter`` and ``columns`` (see :func:`~marketsim.data.csv_labels.load_csv`) apply to
    CSV files only; ``duplicates`` (``error``, ``first``, ``last``) and ``on_drop`` to both
    formats: what to do with a (task, worker) pair answered more than once."""
    kind = detect_format(labels_path, fmt)
    if kind == "csv":
        return load_csv(labels_path, truth_path, delimiter=delimiter, columns=columns,
                        duplicates=duplicates, on_drop=on_drop)
    if delimiter is not None or columns:
        raise InputError("--delimiter and --columns apply to CSV files only (zhang files are "
                         "whitespace-separated task worker label)", source=str(labels_path))
    return load_zhang(labels_path, truth_path, duplicates=duplicates, on_drop=on_drop)


def load_labels_timed(
    labels_path: str | os.PathLike[str],
    truth_path: str | os.PathLike[str] | None = None,
    fmt: str | None = None,
    *,
    delimiter: str | None = None,
    columns: ColumnMap | None = None,
    duplicates: str = "error",
    on_drop: DropNote | None = None,
) -> tuple[LabelSet, Truth, Timestamps | None]:
    """:func:`load_labels` and each label's time from a CSV file's time column (``None``
    without one; zhang files have no times), the rows ``duplicates`` drops dropped from both."""
    if detect_format(labels_path, fmt) == "csv":
        return load_csv_timed(labels_path, truth_path, delimiter=delimiter, columns=columns,
                              duplicates=duplicates, on_drop=on_drop)
    data, truth = load_labels(labels_path, truth_path, fmt, delimiter=delimiter, columns=columns,
                              duplicates=duplicates, on_drop=on_drop)
    return data, truth, None
