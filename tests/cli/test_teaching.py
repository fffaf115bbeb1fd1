"""The teaching pack (``scenarios/teaching/``, ``docs/teaching.md``): every lesson validates,
one runs as a smoke test, and the figures the lesson notes quote are those of a fresh run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from marketsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "scenarios" / "teaching").glob("*.toml"))
DOC = ROOT / "docs" / "teaching.md"


def test_there_are_three_lessons_each_in_the_notes() -> None:
    assert [p.name[:2] for p in LESSONS] == ["01", "02", "03"]
    text = DOC.read_text(encoding="utf-8")
    for path in LESSONS:
        assert f"python -m marketsim run scenarios/teaching/{path.name} --jobs 2" in text


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_validates(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_lesson_2_runs_with_two_replicates(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", str(LESSONS[1]), "--replicates", "2", "--out", str(out),
                 "--quiet"]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Paired comparisons against *shifted-Beta prior*" in report
    assert "| no prior |" in report


def quoted(lesson: str) -> list[tuple[str, list[str]]]:
    """The ```text blocks of a lesson's section in docs/teaching.md: (file of the run folder
    named on the block's first line, the lines quoted from it)."""
    text = DOC.read_text(encoding="utf-8")
    section = re.split(r"^## ", text, flags=re.M)
    body = next(s for s in section if s.startswith(f"Lesson {int(lesson)}"))
    blocks = re.findall(r"```text\n(.*?)```", body, flags=re.S)
    out = []
    for block in blocks:
        first, *lines = block.strip("\n").splitlines()
        assert first.endswith(".md:"), f"lesson {lesson}: a quote starts with its file name"
        out.append((first[:-1], [ln for ln in lines if ln.strip()]))
    assert out, f"lesson {lesson} quotes no figures"
    return out


@pytest.mark.parametrize("lesson", ["01", "02", "03"])
def test_lesson_notes_quote_their_report_files(lesson: str) -> None:
    for name, lines in quoted(lesson):
        assert name.endswith(".md") and lines


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_quoted_figures_match_a_fresh_run(path: Path, tmp_path: Path,
                                          request: pytest.FixtureRequest) -> None:
    """Runs the lesson at its documented replicates (30-60 s on a shared machine): only with
    ``-m slow``."""
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("runs a whole lesson: pass -m slow")
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "marketsim", "run", str(path), "--jobs", "2",
                           "--out", str(out), "--quiet"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr
    for name, lines in quoted(path.name[:2]):
        fresh = (out / name).read_text(encoding="utf-8").splitlines()
        for line in lines:
            assert line in fresh, f"{path.name}: {name} no longer says: {line}"
