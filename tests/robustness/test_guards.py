"""Resource guard and safe plugins, through the real entry point ``marketsim.cli.main``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.scenario.parser import load_scenario
from marketsim.study.resources import GIB, check_memory, estimate_run_memory

SCENARIO = """
[scenario]
name = "guard"
[tasks]
count = {tasks}
[workers]
count = {workers}
[budget]
edges = {edges}
[output]
graph = {graph}
[[arms]]
name = "a"
policy = "{policy}"
"""


def write(tmp_path: Path, *, tasks: int = 50, workers: int = 5, edges: int = 100,
          graph: str = "true", policy: str = "uniform") -> Path:
    path = tmp_path / "guard.toml"
    path.write_text(SCENARIO.format(tasks=tasks, workers=workers, edges=edges, graph=graph,
                                    policy=policy))
    return path


def test_estimate_grows_with_size_graph_and_jobs(tmp_path: Path) -> None:
    small = [load_scenario(write(tmp_path, tasks=1000, edges=5000)).outline]
    big = [load_scenario(write(tmp_path, tasks=1000, edges=500_000, workers=1000)).outline]
    no_graph = [load_scenario(write(tmp_path, tasks=1000, edges=500_000, workers=1000,
                                    graph="false")).outline]
    assert estimate_run_memory(small) < estimate_run_memory(big)
    # the graph costs about 500 bytes per label
    assert 400 * 500_000 < estimate_run_memory(big) - estimate_run_memory(no_graph) < 700 * 500_000
    # one replicate x one arm: a single unit, so extra jobs do not multiply it
    assert estimate_run_memory(big, jobs=4) == estimate_run_memory(big, jobs=1)


def test_check_memory_refuses_with_numbers(tmp_path: Path) -> None:
    scenario = [load_scenario(write(tmp_path)).outline]
    need = check_memory(scenario, 1, available=10 * GIB)
    with pytest.raises(InputError,
                       match=r"needs about 0\.2 GiB, this machine has 0\.1 GiB available; reduce"):
        check_memory(scenario, 1, available=need // 2)


def test_run_too_big_is_refused_before_starting(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, tasks=50_000_000, workers=10_000_000, edges=9_000_000_000)
    out = tmp_path / "run"
    code = main(["run", str(path), "--out", str(out), "--quiet", "--no-figures"])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"marketsim: error: {path}: scenario needs about ")
    assert "GiB available; reduce" in lines[0] and "output.graph = false" in lines[0]
    assert not out.exists()  # refused before the run folder was made


# --- safe plugins ------------------------------------------------------------------------------
PLUGIN = """
from pathlib import Path
Path({marker!r}).write_text("imported")

from marketsim.policies.base import Policy as Base

class Policy(Base):
    name = "evil"
    def bind(self, info): pass
    def rank(self, state, rng): return []
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A module that leaves a marker file when imported, importable from sys.path."""
    marker = tmp_path / "IMPORTED"
    pkg = tmp_path / "plugins"
    pkg.mkdir()
    name = "marketsim_evil_plugin_test"
    (pkg / f"{name}.py").write_text(PLUGIN.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name, marker


@pytest.mark.parametrize("command", ["run", "implicit-run"])
def test_import_path_policy_needs_allow_imports(plugin, tmp_path: Path, capsys,
                                                command: str) -> None:
    name, marker = plugin
    path = write(tmp_path, policy=f"{name}:Policy")
    argv = [str(path)] if command == "implicit-run" else ["run", str(path)]
    code = main([*argv, "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert "--allow-imports" in err and str(path) in err
    assert not marker.exists(), "the plugin module was imported"
    assert name not in sys.modules
    assert not (tmp_path / "run").exists()


def test_validate_does_not_import_plugins(plugin, tmp_path: Path, capsys) -> None:
    name, marker = plugin
    path = write(tmp_path, policy=f"{name}:Policy")
    assert main(["validate", str(path), "--json"]) == 0
    assert not marker.exists() and name not in sys.modules
    # with --allow-imports it is imported, on purpose
    assert main(["validate", str(path), "--json", "--allow-imports"]) == 0
    assert marker.exists()
