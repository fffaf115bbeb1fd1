"""The teaching pack (``scenarios/teaching/``, ``docs/teaching.md``, the exercise sheets in
``docs/lessons/`` and their answer keys in ``docs/lessons/answers/``): every lesson validates,
has a predict-then-run sheet and an answer key, one runs as a smoke test, and the figures the
keys quote are those of a fresh run."""

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
SHEETS = ROOT / "docs" / "lessons"
KEYS = SHEETS / "answers"
IDS = [p.stem for p in LESSONS]


def command(path: Path) -> str:
    return f"python -m marketsim run scenarios/teaching/{path.name} --jobs 2"


def test_there_are_six_lessons_each_with_a_sheet_and_a_key_in_the_index() -> None:
    assert [p.name[:2] for p in LESSONS] == ["01", "02", "03", "04", "05", "06"]
    index = DOC.read_text(encoding="utf-8")
    for path in LESSONS:
        assert (SHEETS / f"{path.stem}.md").is_file() and (KEYS / f"{path.stem}.md").is_file()
        assert f"lessons/{path.stem}.md" in index and f"lessons/answers/{path.stem}.md" in index
    assert sorted(p.stem for p in SHEETS.glob("*.md")) == IDS
    assert sorted(p.stem for p in KEYS.glob("*.md")) == IDS


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_sheet_asks_for_predictions_before_the_run(path: Path) -> None:
    """A sheet's sections in order: Predict (numbered questions), Run (the command the timing
    budget is measured with), Look at, Check your predictions; it gives no quoted figures
    (those are in the key)."""
    sheet = (SHEETS / f"{path.stem}.md").read_text(encoding="utf-8")
    heads = re.findall(r"^## (.+)$", sheet, flags=re.M)
    assert heads == ["Predict (before you run anything)", "Run", "Look at",
                     "Check your predictions"], heads
    predict = sheet.split("## Predict", 1)[1].split("## Run", 1)[0]
    assert re.search(r"^1\. ", predict, flags=re.M) and re.search(r"^2\. ", predict, flags=re.M)
    run = sheet.split("## Run", 1)[1].split("## Look at", 1)[0]
    assert command(path) in run
    assert "```text" not in sheet
    assert f"answers/{path.stem}.md" in sheet


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_lesson_validates(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_lesson_2_runs_with_two_replicates(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", str(LESSONS[1]), "--replicates", "2", "--out", str(out),
                 "--quiet", "--no-figures"]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Paired comparisons against *shifted-Beta prior*" in report
    assert "| no prior |" in report


def quoted(path: Path) -> list[tuple[str, list[str]]]:
    """The ```text blocks of a lesson's answer key: (file of the run folder named on the
    block's first line, the lines quoted from it)."""
    key = (KEYS / f"{path.stem}.md").read_text(encoding="utf-8")
    assert command(path) in key, f"{path.name}: the key names the run it quotes"
    blocks = re.findall(r"```text\n(.*?)```", key, flags=re.S)
    out = []
    for block in blocks:
        first, *lines = block.strip("\n").splitlines()
        assert first.endswith(".md:") or first.endswith(".csv:"), \
            f"{path.name}: a quote starts with its file name"
        out.append((first[:-1], [ln for ln in lines if ln.strip()]))
    assert out, f"{path.name}: the key quotes no figures"
    return out


@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_lesson_keys_quote_their_run_files(path: Path) -> None:
    for name, lines in quoted(path):
        assert name.endswith((".md", ".csv")) and lines


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=IDS)
def test_quoted_figures_match_a_fresh_run(path: Path, tmp_path: Path,
                                          request: pytest.FixtureRequest) -> None:
    """Runs the lesson at its documented replicates (a few seconds each, more on a shared
    machine): only with ``-m slow``."""
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("runs a whole lesson: pass -m slow")
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "marketsim", "run", str(path), "--jobs", "2",
                           "--out", str(out), "--quiet"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr
    for name, lines in quoted(path):
        fresh = (out / name).read_text(encoding="utf-8").splitlines()
        for line in lines:
            assert line in fresh, f"{path.name}: {name} no longer says: {line}"
