"""Every ```python block of the documentation runs (issue #42, "checked like code"): a page's
blocks in order, in one fresh interpreter (a later block uses what an earlier one defined, as a
reader does), from a folder that has the project's ``scenarios/``, so nothing is written into
the source tree."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
#: Blocks that read files only a user has, by (page, block number): why each cannot run here.
NEEDS_USER_FILES = {
    ("explanation/infer/examples.md", 0):
        "a sketch of the loaders on the user's labels.csv, truth.csv, scores.csv",
}
#: Runs each block of the JSON list on stdin in one namespace, naming the failing block.
RUNNER = """
import json, sys, traceback
namespace = {"__name__": "__main__"}
for number, code in json.load(sys.stdin):
    try:
        exec(compile(code, f"<block {number}>", "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        sys.exit(f"block {number} failed")
"""


def blocks(page: Path) -> list[tuple[int, str]]:
    """(number, code) of each ```python block of ``page`` that can run here."""
    name = page.relative_to(DOCS).as_posix()
    return [(number, code) for number, code in enumerate(BLOCK.findall(
        page.read_text(encoding="utf-8"))) if (name, number) not in NEEDS_USER_FILES]


PAGES = [page for page in sorted(DOCS.rglob("*.md"))
         if "_build" not in page.parts and blocks(page)]


def test_the_docs_have_python_blocks_and_every_exception_is_one_of_them() -> None:
    assert len(PAGES) >= 4
    for name, number in NEEDS_USER_FILES:
        assert len(BLOCK.findall((DOCS / name).read_text(encoding="utf-8"))) > number


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_python_blocks_of_the_page_run(page: Path, tmp_path: Path) -> None:
    pytest.importorskip("pandas")  # the API's DataFrames (the test extra)
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(blocks(page)),
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-4000:]
