"""The package stays lint-clean (ruff, docstring rules included) and type-clean (mypy), as
configured in pyproject.toml. The README's test command checks ruff (a second); mypy from a
fresh clone has no cache and takes about 35 CPU seconds, a tenth of the default loop, so it
runs in the slow step, which CI runs too (``.ci/run``); ``python -m mypy`` checks it at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)


def test_ruff_is_clean() -> None:
    pytest.importorskip("ruff", reason="ruff not installed (pip install -e '.[test]')")
    proc = _run("ruff", "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    pytest.importorskip("mypy", reason="mypy not installed (pip install -e '.[test]')")
    proc = _run("mypy")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
