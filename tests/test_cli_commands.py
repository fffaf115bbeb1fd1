"""validate and list through the real entry point (subprocess): success and failure paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def marketsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "marketsim", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_validate_prints_resolved_defaults() -> None:
    result = marketsim("validate", "scenarios/30_workers.toml", "--json")
    assert result.returncode == 0, result.stderr
    resolved = json.loads(result.stdout)
    assert resolved["workers"]["ability"]["alpha"] == 6.0
    assert resolved["budget"]["edges"] == 30000
    assert resolved["workers"]["service_mean"] == 0.0  # a default, not in the file


def test_validate_rejects_bad_file_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[tasks]\ncount = 10\n[workers]\ncount = -3\n[budget]\nedges = 20\n'
                   '[[arms]]\nname = "u"\npolicy = "uniform"\n')
    result = marketsim("validate", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"marketsim: error: {bad}: workers.count must be >= 1, got -3"
    ]


def test_list_names_policies_methods_models_and_datasets() -> None:
    result = marketsim("list")
    assert result.returncode == 0, result.stderr
    for name in ("random-forest", "knowledge-gradient", "opt-ds", "one-coin-shifted-beta",
                 "confusion", "rte", "gaussian-scores", "uncertainty", "gaussian-em"):
        assert name in result.stdout


def test_unknown_subcommand_is_exit_2() -> None:
    result = marketsim("frobnicate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_a_subcommand_imports_only_its_own_module() -> None:
    """``infer`` starts without the simulator (SimPy, networkx, the scenario schema): its
    start-up is half of the full parser's."""
    code = ("import sys; from marketsim.cli import build_parser; "
            "build_parser('infer').parse_args(['infer', 'x.csv']); "
            "print(sorted(m for m in ('simpy', 'networkx', 'marketsim.market', "
            "'marketsim.scenario.schema') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_version_is_printed_without_building_the_parser() -> None:
    out = subprocess.run([sys.executable, "-m", "marketsim", "--version"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.startswith("marketsim ")
    code = ("import sys; from marketsim.cli import main; main(['--version']); "
            "print('marketsim.cli.run' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.splitlines()[-1] == "False"
