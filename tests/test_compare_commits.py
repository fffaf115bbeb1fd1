"""benchmarks/compare_commits.py's curves check: a newer commit may add curves.csv columns,
but the columns the old commit writes must match for the runs to count as the same."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compare_commits.py"
spec = importlib.util.spec_from_file_location("compare_commits", SCRIPT)
assert spec is not None and spec.loader is not None
compare_commits = importlib.util.module_from_spec(spec)
sys.modules["compare_commits"] = compare_commits  # its dataclasses look their module up
spec.loader.exec_module(compare_commits)

OLD = "arm,edges,error_rate\nuniform,10,0.5\nuniform,20,0.25\n"


def test_added_columns_do_not_count_as_a_change() -> None:
    new = "arm,edges,money,error_rate\nuniform,10,10.0,0.5\nuniform,20,20.0,0.25\n"
    assert compare_commits.same_curves({OLD}, {new})


def test_a_changed_value_in_a_shared_column_is_a_change() -> None:
    new = "arm,edges,money,error_rate\nuniform,10,10.0,0.5\nuniform,20,20.0,0.2\n"
    assert not compare_commits.same_curves({OLD}, {new})


def test_runs_that_differ_within_one_commit_are_a_change() -> None:
    other = OLD.replace("0.25", "0.3")
    assert not compare_commits.same_curves({OLD, other}, {OLD})
    assert compare_commits.same_curves({OLD}, {OLD})
