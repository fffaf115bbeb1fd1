"""Scenario files (TOML read with ``tomllib``) and dicts of their layout, validated into the
one scenario model (:class:`~marketsim.scenario.specs.Scenario`), whose tables check their own
keys and whose validator checks what spans several (:mod:`marketsim.scenario.resolve`).

Any problem raises an :class:`~marketsim.errors.InputError` naming the file and the dotted key,
e.g. ``scenarios/x.toml: workers.ability.alpha must be > 0, got -1``. Method and policy names
are resolved then, once, into what will run (``InferenceSpec.entry``, ``PolicySpec.cls``).
See ``docs/explanation/scenarios/`` (every key: ``docs/reference/scenario-keys.md``, generated).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from marketsim.data.datasets import replay_data_dir
from marketsim.errors import InputError
from marketsim.scenario.specs import Scenario


def parse_scenario(data: Mapping[str, Any], source: str = "<scenario>", *,
                   allow_imports: bool = False) -> Scenario:
    """Validate a decoded TOML document into a :class:`Scenario`. With ``allow_imports``,
    import-path policies are imported now and their options checked against the class."""
    return Scenario.from_document(data, source, allow_imports=allow_imports)


def scenario_from_dict(data: Mapping[str, Any], source: str = "<python>", *,
                       allow_imports: bool = False) -> Scenario:
    """Validate a scenario given as a dict of the TOML layout (``marketsim.scenario_from_dict``);
    arms may hold a policy object (``policy``) and an estimator object (``inference``). An arm
    with a policy object and no ``name`` is named after the object's class."""
    return Scenario.from_document(data, source, allow_imports=allow_imports)


def load_scenario(path: str | Path, *, allow_imports: bool = False,
                  data_dir: str | Path | None = None) -> Scenario:
    """Read and validate the scenario file at ``path`` (``marketsim.load_scenario``, as
    ``marketsim run`` does); ``data_dir`` (``--data-dir``), else ``$MARKETSIM_DATA``, replaces
    a replay's ``replay.data_dir`` (``marketsim.data.datasets``)."""
    source = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError("file not found", source=source) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a .toml file", source=source) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", source=source) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", source=source) from None
    if isinstance(data.get("replay"), dict) and (data_dir is not None
                                                 or "dataset" in data["replay"]):
        data_dir = replay_data_dir(data_dir)  # --data-dir, else $MARKETSIM_DATA, beat the file
    if data_dir is not None and isinstance(data.get("replay"), dict):
        data["replay"]["data_dir"] = str(Path(data_dir).absolute())
    return parse_scenario(data, source, allow_imports=allow_imports)
