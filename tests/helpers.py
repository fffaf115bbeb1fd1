"""Helpers several test modules share: a binomial tolerance for simulated frequencies, the
edit a hostile-key test makes to a scenario table, a JSON Schema validator checked once,
the example counts of the property tests (a few by default, all of them with ``-m slow``),
``validate`` run in this process and a benchmark script loaded as a module."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import numpy as np
import pytest

from marketsim.cli import main


def within(observed: np.ndarray, expected: np.ndarray, n: np.ndarray, z: float = 4.5) -> None:
    """Each observed share lies within ``z`` binomial standard errors of its expectation."""
    se = np.sqrt(np.maximum(expected * (1 - expected), 1e-4) / np.maximum(n, 1))
    assert np.all(np.abs(observed - expected) <= z * se + 1e-9), (observed, expected)


def edit_table(table: dict[str, Any], change: dict[str, Any]) -> None:
    """Apply ``change`` to a scenario table in place: a ``None`` value removes the key."""
    for key, value in change.items():
        if value is None:
            table.pop(key)
        else:
            table[key] = value


_VALIDATORS: dict[str, Any] = {}


def schema_validator(schema: dict[str, Any]) -> Any:
    """A validator of ``schema``, itself checked against its metaschema once per test process.

    ``jsonschema.validate(instance, schema)`` checks the schema again at every call: seconds
    for the scenario schema (100 kB), most of what the tests that validate many files cost.
    ``.validate(instance)`` raises the same ``jsonschema.ValidationError``."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[key] = cls(schema)
    return _VALIDATORS[key]


def example_counts(default: int, full: int) -> list[Any]:
    """``pytest.mark.parametrize`` values for a property test's example count: ``default``
    in the default loop, ``full`` marked slow (CI's second step runs it)."""
    return [pytest.param(default, id=f"{default}-examples"),
            pytest.param(full, id=f"{full}-examples", marks=pytest.mark.slow)]


def validate_in_process(path: Path, capsys: pytest.CaptureFixture[str]
                        ) -> subprocess.CompletedProcess[str]:
    """``marketsim validate PATH`` by :func:`marketsim.cli.main` in this process (the function
    the entry point calls): its exit code and output as a finished process's."""
    capsys.readouterr()
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["marketsim", "validate", str(path)], code, out, err)


def benchmark_script(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` as the module ``NAME`` (registered in ``sys.modules``, where its
    dataclasses look their module up; loaded once)."""
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
