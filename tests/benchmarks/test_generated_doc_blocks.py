"""The benchmarks that write a table into the documentation (``--write``, ``--doc``) point at
the page that holds their markers: once each, in order, on a page of the site. After a page
is split (issue #42) a stale path would fail only when an hour-long benchmark ends."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def script(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` as a module (as its own tests load it)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["twin_design_curve", "twin_replay", "crowdkit_table"])
def test_the_generators_page_holds_its_markers_once_in_order(name: str) -> None:
    module = script(name)
    doc = module.DOC
    assert doc.is_relative_to(ROOT / "docs") and doc.suffix == ".md", doc
    text = doc.read_text(encoding="utf-8")
    assert text.count(module.BEGIN) == 1 and text.count(module.END) == 1, doc
    assert text.index(module.BEGIN) < text.index(module.END), doc
