"""The benchmarks that write a table into the documentation (``--write``, ``--doc``) point at
the page that holds their markers: once each, in order, on a page of the site. After a page
is split (issue #42) a stale path would fail only when an hour-long benchmark ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import benchmark_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["twin_design_curve", "twin_replay", "crowdkit_table"])
def test_the_generators_page_holds_its_markers_once_in_order(name: str) -> None:
    module = benchmark_script(name)
    doc = module.DOC
    assert doc.is_relative_to(ROOT / "docs") and doc.suffix == ".md", doc
    text = doc.read_text(encoding="utf-8")
    assert text.count(module.BEGIN) == 1 and text.count(module.END) == 1, doc
    assert text.index(module.BEGIN) < text.index(module.END), doc
