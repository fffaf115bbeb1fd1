"""Where the reference data sets live: the one place that knows.

The reference data (Zhang et al.'s ``zhang2014/NAME_crowd.txt``/``NAME_truth.txt``, the
published curves in ``maginnis_gupta2015/``) are not part of the project; they sit in a folder
found in this order:

1. the folder given on the command line (``--data-dir DIR`` of ``infer``, ``run`` and
   ``validate``; ``data_dir=`` of ``marketsim.load_scenario``);
2. the ``MARKETSIM_DATA`` environment variable: it describes this machine, so it also beats
3. a replay scenario file's own ``replay.data_dir`` (relative to the file), which names where
   the data were on the machine the file was written on;
4. ``../shared/data`` beside the project (relative to the folder holding the ``marketsim``
   package), then ``../shared/data`` relative to the current folder.

A folder given by 1, 2 or 3 must exist (no silent fall-back to 4). The scenario parser applies
1 and 2 over 3 when it reads a replay file (:func:`replay_data_dir`), so a run folder records
the folder actually used. The data sets' files may be in
the folder itself or in its ``zhang2014/`` subfolder, so ``MARKETSIM_DATA`` may name either
``shared/data`` or ``shared/data/zhang2014``.
"""

from __future__ import annotations

import os
from pathlib import Path

from marketsim.errors import InputError

#: Reference data sets of Zhang et al. (2014), read as ``NAME_crowd.txt`` / ``NAME_truth.txt``.
DATASETS = ("bluebird", "rte", "dog", "web")

#: Environment variable naming the folder of the reference data.
DATA_ENV = "MARKETSIM_DATA"

#: The project's folder (the one holding the ``marketsim`` package).
PROJECT_ROOT = Path(__file__).resolve().parents[2]

#: Default location of the reference data, relative to the project (and to the current folder).
SHARED_DATA = Path("..") / "shared" / "data"


def default_data_dirs() -> list[Path]:
    """The fall-back folders (step 3), in search order, without repeats."""
    out: list[Path] = []
    for base in (PROJECT_ROOT, Path.cwd()):
        folder = Path(os.path.normpath(base / SHARED_DATA))
        if folder not in out:
            out.append(folder)
    return out


def data_root(data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The reference data folder by the search order, or None where none is found.

    For tests and benchmarks that skip when the data are absent; commands use
    :func:`find_data_dir`, which says why nothing was found.
    """
    try:
        return find_data_dir(data_dir)
    except InputError:
        return None


def replay_data_dir(given: str | os.PathLike[str] | None) -> str | None:
    """The folder that overrides a replay scenario file's own ``replay.data_dir``: ``given``
    (``--data-dir``), else ``$MARKETSIM_DATA``, else None (the file's folder, or the
    defaults, apply)."""
    if given is not None:
        return str(given)
    return os.environ.get(DATA_ENV) or None


def find_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The reference data folder by the search order (module docstring); InputError if none."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_ENV) or None
    if data_dir is not None:
        base = Path(data_dir)
        if not base.is_dir():
            raise InputError(
                f"data folder {str(base)!r} does not exist: pass --data-dir DIR or set {DATA_ENV}"
            )
        return base
    candidates = default_data_dirs()
    for folder in candidates:
        if folder.is_dir():
            return folder
    raise InputError(
        f"no data folder: pass --data-dir DIR or set {DATA_ENV} to the folder holding "
        f"NAME_crowd.txt and NAME_truth.txt (not found: {', '.join(map(str, candidates))})"
    )


def dataset_paths(
    name: str, data_dir: str | os.PathLike[str] | None = None
) -> tuple[Path, Path]:
    """Crowd and truth files of the reference data set ``name`` (bluebird, rte, dog, web).

    The folder is found by :func:`find_data_dir`; it may hold the files directly or in a
    ``zhang2014/`` subfolder.
    """
    if name not in DATASETS:
        raise InputError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    base = find_data_dir(data_dir)
    for candidate in (base, base / "zhang2014"):
        crowd = candidate / f"{name}_crowd.txt"
        truth = candidate / f"{name}_truth.txt"
        if crowd.is_file():
            if not truth.is_file():
                raise InputError(f"{truth.name} not found beside {crowd}", source=str(candidate))
            return crowd, truth
    raise InputError(
        f"{name}_crowd.txt not found in {str(base)!r} (nor in its zhang2014/ subfolder): "
        f"pass --data-dir DIR or set {DATA_ENV}"
    )
