"""``--no-figures`` (``run`` and ``report``): the same results and report without the PNG/SVG
figures, whose drawing is most of a small run's time; no link in the folder points nowhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import marketsim
from marketsim.cli import main
from tests.report.conftest import PRICED, PRICED_SWEEP, dangling_links, figures


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The scenario (money and time beside labels: three figures) run with and without figures."""
    base = tmp_path_factory.mktemp("no_figures")
    (base / "s.toml").write_text(PRICED)
    for name, extra in (("drawn", []), ("bare", ["--no-figures"])):
        assert main(["run", str(base / "s.toml"), "--out", str(base / name), "--quiet",
                     "--jobs", "1", *extra]) == 0
    return base / "drawn", base / "bare"


def test_run_without_figures_has_the_same_results_and_no_dangling_link(
        both: tuple[Path, Path]) -> None:
    drawn, bare = both
    assert len(figures(drawn)) == 6  # against labels, money and simulated time; PNG and SVG
    assert figures(bare) == []
    assert (bare / "curves.csv").read_bytes() == (drawn / "curves.csv").read_bytes()
    report = (bare / "report.md").read_text()
    assert "![" not in report and "No figure drawn (`--no-figures`)" in report
    assert f"python -m marketsim report {bare}" in report  # how to draw them later
    assert dangling_links(bare / "report.md") == []
    assert dangling_links(drawn / "report.md") == []
    # the text around the figures is the same: the checkpoints, the claims
    for heading in ("## Error at budget checkpoints", "## Arms"):
        assert heading in report
        section = report.split(heading)[1].split("\n## ")[0]
        assert section in (drawn / "report.md").read_text()


def test_report_draws_the_figures_later_and_no_figures_removes_them(
        both: tuple[Path, Path], tmp_path: Path) -> None:
    _, bare = both
    folder = tmp_path / "run"
    shutil.copytree(bare, folder)
    assert main(["report", str(folder), "--quiet"]) == 0
    assert len(figures(folder)) == 6 and dangling_links(folder / "report.md") == []
    assert main(["report", str(folder), "--quiet", "--no-figures"]) == 0
    assert figures(folder) == []  # an earlier render's figures may show other curves
    assert dangling_links(folder / "report.md") == []


def test_slides_and_no_figures_together_are_refused(
        both: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(both[1]), "--slides", "--no-figures"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--slides" in err and "--no-figures" in err


def test_sweep_without_figures_writes_none_for_the_sweep_or_its_points(
        tmp_path: Path, priced_sweep: Path) -> None:
    (tmp_path / "s.toml").write_text(PRICED_SWEEP)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"), "--quiet",
                 "--jobs", "1", "--no-figures"]) == 0
    assert figures(tmp_path / "run") == []
    for markdown in [tmp_path / "run" / "sweep.md",
                     *(tmp_path / "run" / "points").glob("p*/report.md")]:
        assert dangling_links(markdown) == [], markdown
    assert len(list((tmp_path / "run" / "points").glob("p*/report.md"))) == 2
    # the same results as the sweep drawn with its figures
    assert (tmp_path / "run" / "sweep.csv").read_bytes() == \
        (priced_sweep / "sweep.csv").read_bytes()
    assert (priced_sweep / "labels_needed_vs_sweep.png").stat().st_size > 1000
    assert len(figures(priced_sweep / "points" / "p000")) == 6


def test_the_api_run_without_figures_writes_the_same_folder_but_the_figures(
        both: tuple[Path, Path], tmp_path: Path) -> None:
    drawn, _ = both
    scenario = marketsim.load_scenario(drawn / "scenario.toml")
    marketsim.run(scenario, out=tmp_path / "run", progress=False, figures=False)
    assert figures(tmp_path / "run") == []
    assert (tmp_path / "run" / "curves.csv").read_bytes() == (drawn / "curves.csv").read_bytes()
    assert dangling_links(tmp_path / "run" / "report.md") == []
