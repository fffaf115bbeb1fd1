"""A lesson sheet points the student at what the run's report really shows (issue #38, point
4): lesson 4's sheet called the paired comparisons' last column "the end of the money", while
at a 15 % good-worker share one blocking replicate runs out of workers before the money and the
last column is a label count short of it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from marketsim.cli import main
from marketsim.report.glossary import unlink_terms
from marketsim.scenario.toml_out import dumps

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "scenarios" / "teaching" / "04_gold_and_blocking.toml"
SHEET = ROOT / "docs" / "lessons" / "04_gold_and_blocking.md"


def section(report: str, title: str) -> str:
    return report.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_lesson_4_sheet_says_where_the_money_ends(tmp_path: Path) -> None:
    doc = tomllib.loads(LESSON.read_text(encoding="utf-8"))
    share = doc.pop("sweep")["workers"]["spammer_hammer"]["hammer_fraction"][0]  # point p000
    doc["workers"]["spammer_hammer"]["hammer_fraction"] = share
    (tmp_path / "p000.toml").write_text(dumps(doc), encoding="utf-8")
    assert main(["run", str(tmp_path / "p000.toml"), "--out", str(tmp_path / "run"),
                 "--jobs", "1", "--quiet", "--no-figures"]) == 0
    report = unlink_terms((tmp_path / "run" / "report.md").read_text(encoding="utf-8"))
    paired = section(report, "Paired comparisons against *pay everyone*")
    head = next(ln for ln in paired.splitlines() if ln.startswith("| arm \\ labels spent"))
    last = [int(c.replace(",", "")) for c in re.findall(r"\| ([\d,]+) ", head + " ")][-1]
    money = doc["budget"]["money"]  # a label costs 1: the money ends at this many labels
    stops = section(report, "Runs that ended under budget")
    assert last < money and "ran out of workers" in stops  # the case the sheet must allow for
    sheet = " ".join(SHEET.read_text(encoding="utf-8").split())
    assert "the last column is the end of the money" not in sheet
    look = sheet.split("## Look at", 1)[1].split("## Check", 1)[0]
    for quoted in re.findall(r'"([^"]+)"', look):  # every name the sheet quotes is in the run
        assert " ".join(quoted.split()) in " ".join(report.split()), quoted
