"""Building the documentation site for the tests: what the ``docs`` extra must have installed,
and the build as the README's command runs it (``-W``: a warning fails the build)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: What the ``docs`` extra installs, by import name.
SITE_PACKAGES = ("sphinx", "pydata_sphinx_theme", "myst_parser", "myst_nb", "numpydoc")


def sphinx_or_skip() -> None:
    """Skip (with the reason) when the docs extra is not installed; fail instead on CI, whose
    slow step installs it."""
    missing = [name for name in SITE_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        reason = (f"building the site needs {', '.join(missing)} "
                  '(pip install -e ".[docs]")')
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set: .ci/run installs the docs extra)")
        pytest.skip(reason)


def build_site(out: Path) -> Path:
    """Build the site from ``docs/`` into ``out`` with every warning an error; return the
    folder of its HTML pages."""
    sphinx_or_skip()
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / ".doctrees"), str(DOCS), str(out / "html")],
        capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-5000:]
    assert "WARNING" not in done.stderr and "ERROR" not in done.stderr, done.stderr[-5000:]
    return out / "html"
