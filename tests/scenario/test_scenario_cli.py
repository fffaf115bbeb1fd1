"""``validate``: short summary, ``--toml`` round trip, every sweep point checked; ``run``
refuses bad options and bad sweep points before creating its run folder."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.scenario.parser import load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
SIMULATED = [p for p in sorted((ROOT / "scenarios").rglob("*.toml"))
             if "replay" not in tomllib.loads(p.read_text())]
SMALL = """
[tasks]
count = 20
[workers]
count = 5
[budget]
edges = 40
batch = 10
[[arms]]
name = "rf"
policy = {{ name = "{policy}", {option} }}
"""


def one_error_line(capsys: pytest.CaptureFixture[str], code: int) -> str:
    out, err = capsys.readouterr()
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    return lines[0]


def test_validate_prints_a_short_summary(capsys) -> None:
    assert main(["validate", str(ROOT / "scenarios/30_workers.toml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 10
    assert lines[1].startswith("name: 30 workers   seed: 2015   replicates: 5")
    assert sum(line.startswith("arm ") for line in lines) == 5


@pytest.mark.parametrize("path", SIMULATED, ids=lambda p: p.name)
def test_validate_toml_round_trips(path: Path, capsys) -> None:
    assert main(["validate", str(path), "--toml"]) == 0
    text = capsys.readouterr().out
    again = parse_scenario(tomllib.loads(text), str(path))
    original = load_scenario(path)
    assert again == original

    def params(sc):  # to_dict() also carries the raw document, which differs by design
        return {k: v for k, v in sc.to_dict().items() if k != "raw"}

    assert params(again) == params(original)


def test_run_with_a_misspelt_policy_option_creates_nothing(tmp_path: Path, capsys) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL.format(policy="random-forest", option="n_tree = 3"))
    out = tmp_path / "out"
    line = one_error_line(capsys, main(["run", str(scenario), "--out", str(out), "--quiet"]))
    assert "arms[0].policy.n_tree is not an option of 'random-forest'" in line
    assert "did you mean n_trees?" in line
    assert not out.exists()


def test_run_import_path_without_allow_imports_creates_nothing(tmp_path: Path,
                                                              capsys) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL.format(policy="marketsim.policies.simple:UniformPolicy",
                                     option="x = 1"))
    assert main(["validate", str(scenario)]) == 0  # validate checks the shape only
    capsys.readouterr()
    out = tmp_path / "out"
    line = one_error_line(capsys, main(["run", str(scenario), "--out", str(out)]))
    assert "pass --allow-imports" in line and not out.exists()
    line = one_error_line(capsys, main(["run", str(scenario), "--out", str(out),
                                        "--allow-imports"]))
    assert "arms[0].policy.x is not an option" in line and not out.exists()


def test_every_sweep_point_is_validated(tmp_path: Path, capsys) -> None:
    text = (ROOT / "scenarios/sweep_workers.toml").read_text().replace("edges = 9000",
                                                                       "edges = 12000")
    scenario = tmp_path / "sweep.toml"
    scenario.write_text(text)
    line = one_error_line(capsys, main(["validate", str(scenario)]))
    assert "sweep point workers.count=10, workers.ability.alpha=2: budget.edges must be <=" \
        in line
    out = tmp_path / "out"
    one_error_line(capsys, main(["run", str(scenario), "--out", str(out)]))
    assert not out.exists()
