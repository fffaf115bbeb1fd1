"""benchmarks/compare_commits.py's curves check: a newer commit may add curves.csv columns,
but the columns the old commit writes must match for the runs to count as the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import benchmark_script

compare_commits = benchmark_script("compare_commits")

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


def fake_checkout(tree: Path, source: str) -> Path:
    """A checkout whose setup.py declares one optional C extension, ``pkg._ext``."""
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "ext.c").write_text(source)
    (tree / "setup.py").write_text(
        "from setuptools import Extension, setup\n"
        "setup(name='pkg', packages=['pkg'], ext_modules=[Extension('pkg._ext', "
        "['pkg/ext.c'], optional=True)])\n")
    return tree


GOOD_C = """#include <Python.h>
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&mod); }
"""


def test_a_failed_optional_extension_build_is_not_reported_as_built(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``build_ext`` exits 0 when an optional extension fails to compile; the script must
    stop and say so, even with a compiled file of an earlier build lying there, and say
    "built" only when the file was written."""
    bad = fake_checkout(tmp_path / "bad", "this is not C;\n")
    (stale,) = compare_commits.extension_outputs(bad)
    stale.write_bytes(b"an earlier build")
    side = compare_commits.Side("new", "0" * 40, bad)
    with pytest.raises(SystemExit) as info:
        compare_commits.build_extensions(side)
    assert "do not build" in str(info.value) and "not written" in str(info.value)
    assert "built its C extensions" not in capsys.readouterr().out
    good = fake_checkout(tmp_path / "good", GOOD_C)
    compare_commits.build_extensions(compare_commits.Side("old", "0" * 40, good))
    assert "old: built its C extensions" in capsys.readouterr().out
    assert compare_commits.extension_outputs(good)[0].is_file()
