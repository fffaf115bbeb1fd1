"""Who gave each label: a human worker or a model (a machine annotator), and the confidence
a model stated with its answer.

A :class:`~marketsim.data.labels.LabelSet` carries them as ``sources`` (one name per worker:
:data:`HUMAN` or the model's name; one model may hold several worker indices, e.g. one per
prompt) and ``confidence`` (one float per label in [0, 1], NaN where a label has none). A
headed CSV file gives them in a source column and a confidence column
(:mod:`~marketsim.data.csv_labels`); machine annotators in a market hand their labels over in
the same two fields.
"""

from __future__ import annotations

import numpy as np

from marketsim.errors import InputError

#: The source of a human worker's labels; any other name is a model's.
HUMAN = "human"
#: Header names of a labels file's source column (``--columns source=NAME`` maps another).
SOURCE_ALIASES = ("source", "annotator_type", "annotator_kind", "source_kind")
#: Header names of a labels file's confidence column.
CONFIDENCE_ALIASES = ("confidence",)


def machine_columns(
    confidence: np.ndarray | None, sources: tuple[str, ...] | None, n_labels: int,
    n_workers: int,
) -> tuple[np.ndarray | None, tuple[str, ...] | None]:
    """``confidence`` as float64 (one value per label, in [0, 1] or NaN) and ``sources`` as a
    tuple of strings (one per worker); ValueError otherwise (a loader checks its file first
    and names the line)."""
    if confidence is not None:
        confidence = np.asarray(confidence, dtype=np.float64)
        if confidence.shape != (n_labels,):
            raise ValueError(f"confidence must have one value per label ({n_labels}), got "
                             f"shape {confidence.shape}")
        with np.errstate(invalid="ignore"):
            if np.any((confidence < 0) | (confidence > 1)):
                raise ValueError("confidence must be in [0, 1] (NaN: none)")
    if sources is not None:
        sources = tuple(str(s) for s in sources)
        if len(sources) != n_workers:
            raise ValueError(f"sources must name one source per worker ({n_workers}), got "
                             f"{len(sources)}")
    return confidence, sources


def source_name(value: str) -> str:
    """A source cell as stored: ``human`` in any case is :data:`HUMAN`; a model's name as
    written (surrounding spaces dropped)."""
    name = value.strip()
    return HUMAN if name.lower() == HUMAN else name


def worker_sources(
    workers: np.ndarray, worker_ids: np.ndarray, cells: list[str], lines: np.ndarray,
    source: str, column: str, line: str = "line",
) -> tuple[str, ...]:
    """Each worker's source from the source column's ``cells`` (one per label, ``workers`` its
    worker codes, ``lines`` its file lines).

    InputError (naming the file, line and column) when a cell is empty, when one worker's rows
    name two sources, or when a model's name is also the id of a human worker (the file would
    say both that a model and a person gave that worker's labels). ``line`` is what ``lines``
    count (a record's or a DataFrame's ``row``)."""
    names = [source_name(c) for c in cells]
    distinct = {n: k for k, n in enumerate(dict.fromkeys(names))}
    if "" in distinct:
        at = names.index("")
        raise InputError(f"column {column!r}: empty cell; name the source ({HUMAN!r} or a model's "
                         "name)", source=source, where=str(int(lines[at])))
    codes = np.fromiter(map(distinct.__getitem__, names), np.int64, len(names))
    n_workers = len(worker_ids)
    first = np.full(n_workers, -1, dtype=np.int64)
    order = np.arange(codes.size)[::-1]
    first[workers[order]] = order  # the first row of each worker (the last write wins)
    own = np.full(n_workers, -1, dtype=np.int64)
    seen = first >= 0
    own[seen] = codes[first[seen]]
    clash = np.flatnonzero(codes != own[workers])
    by_code = list(distinct)
    if clash.size:
        at = int(clash[0])
        worker = str(worker_ids[workers[at]])
        raise InputError(
            f"column {column!r}: worker {worker!r} is {by_code[codes[at]]!r} here but "
            f"{by_code[own[workers[at]]]!r} at {line} {int(lines[first[workers[at]]])}: one "
            "worker has one source", source=source, where=str(int(lines[at])))
    sources = tuple(by_code[c] if c >= 0 else HUMAN for c in own.tolist())
    models = np.array([n for n in by_code if n != HUMAN], dtype=object)
    ids = worker_ids.astype(str).astype(object)
    human_ids = ids[np.asarray(sources, dtype=object) == HUMAN]
    clashing = models[np.isin(models, human_ids)]
    if clashing.size:
        model = str(clashing[0])
        at = int(np.flatnonzero(codes == distinct[model])[0])
        human_at = int(lines[first[int(np.flatnonzero(ids == model)[0])]])
        raise InputError(
            f"column {column!r}: model {model!r} is also a human worker's id ({line} "
            f"{human_at}): a model's name and a person's id must differ", source=source,
            where=str(int(lines[at])))
    return sources

