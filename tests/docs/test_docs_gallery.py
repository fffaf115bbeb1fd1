"""The site's gallery (issue #42 point 3): every figure ``docs/gallery/make_gallery.py`` makes is
committed and shown on the page the script names, beside the command that made it and the
shipped scenario it ran; every image and file a gallery page shows exists; the script really
makes its cheapest figure from the shipped file (slow), and the built site shows every figure
(slow, on the session's one build)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.docs.test_docs_site import _parse

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "gallery"
#: The targets of a page's ```{image} and ```{literalinclude} directives.
INCLUDED = re.compile(r"^```\{(image|literalinclude)\}\s+(\S+)", re.MULTILINE)


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_gallery", GALLERY / "make_gallery.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_gallery"] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


GALLERY_SCRIPT = _script()
PAGES = sorted(path for path in GALLERY.glob("*.md") if path.name != "index.md")


def _included(page: Path) -> list[tuple[str, Path]]:
    """(directive, resolved path) of each image and literalinclude of ``page``."""
    return [(kind, (page.parent / target).resolve())
            for kind, target in INCLUDED.findall(page.read_text(encoding="utf-8"))]


def test_committed_images_are_exactly_the_scripts_figures() -> None:
    made = GALLERY_SCRIPT.images()
    assert len(made) == len(set(made)) >= 4
    assert sorted(made) == sorted(p.name for p in (GALLERY / "images").iterdir())


@pytest.mark.parametrize("study", GALLERY_SCRIPT.STUDIES, ids=lambda s: s.name)
def test_each_study_page_shows_its_figures_command_and_shipped_scenario(study: Any) -> None:
    page = GALLERY / f"{study.page}.md"
    included = _included(page)
    for _, image in study.figures:
        assert ("image", GALLERY / "images" / image) in included, image
    scenario = ROOT / study.scenario
    assert scenario.is_file() and ("literalinclude", scenario) in included
    # the command the page shows is the one the script runs, replicate count included
    shown = " ".join(study.command("OUT")[:-1])
    assert shown + " " in page.read_text(encoding="utf-8")


def test_every_gallery_page_is_in_its_index_and_everything_it_shows_exists() -> None:
    index = (GALLERY / "index.md").read_text(encoding="utf-8")
    toctree = index[index.index("```{toctree}"):].split("```")[1].split()
    assert sorted(toctree[-len(PAGES):]) == sorted(p.stem for p in PAGES)
    for page in PAGES:
        included = _included(page)
        assert any(kind == "image" for kind, _ in included), page.name
        assert any(kind == "literalinclude" for kind, _ in included), page.name
        for _, path in included:
            assert path.is_file(), f"{page.name}: {path}"
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "gallery/index" in home


@pytest.mark.slow
def test_script_makes_the_cheapest_figure_from_the_shipped_scenario(tmp_path: Path) -> None:
    """The sweep's figure (about 40 s of CPU): written where asked, a PNG, from a run of the
    shipped file itself (its run folder's recorded hash is the file's)."""
    study = next(s for s in GALLERY_SCRIPT.STUDIES if s.name == "sweep")
    done = subprocess.run(
        [sys.executable, str(GALLERY / "make_gallery.py"), "--only", "sweep",
         "--out", str(tmp_path / "images"), "--runs", str(tmp_path / "runs")],
        capture_output=True, text=True, cwd=tmp_path, check=False, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    written = [tmp_path / "images" / image for _, image in study.figures]
    assert done.stdout.split() == [str(path) for path in written]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    run = json.loads((tmp_path / "runs" / "sweep" / "run.json").read_text(encoding="utf-8"))
    shipped = (ROOT / study.scenario).read_bytes()
    assert run["scenario_sha256"] == hashlib.sha256(shipped).hexdigest()
    assert run["replicates"] == study.replicates


@pytest.mark.slow
def test_built_site_shows_every_gallery_figure_and_links_the_gallery(site: Path) -> None:
    home = _parse(site / "index.html")
    assert "gallery/index.html" in home.links
    index = _parse(site / "gallery" / "index.html")
    for page in PAGES:
        assert f"{page.stem}.html" in index.links
        html = _parse(site / "gallery" / f"{page.stem}.html")
        shown = [link for link in html.links if link.startswith("../_images/")]
        images = [path for kind, path in _included(page) if kind == "image"]
        assert len(shown) == len(images), page.name
        for link in shown:
            assert (site / "gallery" / link).is_file()
    for study in GALLERY_SCRIPT.STUDIES:
        text = " ".join(_parse(site / "gallery" / f"{study.page}.html").text)
        assert "[[arms]]" in text  # the scenario's source, included at build time
