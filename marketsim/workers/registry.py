"""Every worker model by its ``workers.model`` name, discovered: each module of
:mod:`marketsim.workers`, in sorted order, contributes the :class:`~marketsim.workers.base.
WorkerModel` subclasses it declares with a ``name``. Adding a worker model is adding its
module (and its test); the scenario's ``[workers]`` union, validation, the JSON Schema, the
docs, ``marketsim list`` and ``report.md`` read it from here."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from marketsim.workers.base import WorkerModel


def _declared(module_name: str) -> list[type[WorkerModel]]:
    """The worker models ``module_name`` declares (not those it imports)."""
    module = importlib.import_module(module_name)
    return [obj for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, WorkerModel)
            and obj.__module__ == module_name and "name" in vars(obj)]


_PACKAGE = Path(__file__).parent
#: Every worker model by its ``workers.model`` name (modules in sorted order).
WORKER_MODELS: dict[str, type[WorkerModel]] = {
    cls.name: cls
    for info in sorted(pkgutil.iter_modules([str(_PACKAGE)]), key=lambda i: i.name)
    if info.name != "registry"
    for cls in _declared(f"marketsim.workers.{info.name}")
}
_defaults = [name for name, cls in WORKER_MODELS.items() if cls.default]
if len(_defaults) != 1:
    raise RuntimeError(f"exactly one worker model must declare default = True, got {_defaults}")
#: The model of a ``[workers]`` table without ``model`` (and of a replayed crowd's records).
DEFAULT_MODEL: str = _defaults[0]


def worker_model(name: object) -> type[WorkerModel]:
    """The model called ``name`` (the default model when ``name`` is none or unknown: replay
    markets and files written before the key existed)."""
    return WORKER_MODELS.get(str(name), WORKER_MODELS[DEFAULT_MODEL])
