"""A run folder holds everything to resume and report it from any working directory (issue #13
item 5), the checkout's parent folder is not mistaken for the package (item 6), and report.md's
re-run line works for import-path policies (item 8)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.data.datasets import DATA_ENV
from tests.conftest import shared_data

ROOT = Path(__file__).resolve().parents[2]

REPLAY = """
[scenario]
name = "replay small"
seed = 3
replicates = 2

[replay]
dataset = "rte"
data_dir = "{data_dir}"

[budget]
edges = 1000
batch = 100

[output]
graph = false

[[arms]]
name = "uniform"
policy = "uniform"
inference = {{ method = "ds", class_prior = "estimate" }}
"""


@pytest.fixture
def rte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the RTE files (so a test may move or change them), with ``MARKETSIM_DATA``
    unset: it beats a scenario file's own ``replay.data_dir`` (marketsim.data.datasets), and
    these tests follow the file's folder and ``--data-dir``."""
    src = shared_data() / "zhang2014"
    if not (src / "rte_crowd.txt").is_file():
        pytest.skip(f"reference data not found in {src}")
    monkeypatch.delenv(DATA_ENV, raising=False)
    dest = tmp_path / "data"
    dest.mkdir()
    for name in ("rte_crowd.txt", "rte_truth.txt"):
        shutil.copy(src / name, dest / name)
    return dest


def test_replay_resumes_and_reports_from_another_folder_and_cwd(
    rte: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    (tmp_path / "scen").mkdir()
    scenario = tmp_path / "scen" / "replay.toml"
    scenario.write_text(REPLAY.format(data_dir="../data"))  # relative to the scenario file
    monkeypatch.chdir(tmp_path / "scen")
    assert main(["run", "replay.toml", "--out", "../run", "--quiet", "--no-figures"]) == 0
    run = tmp_path / "run"
    before = (run / "curves.csv").read_bytes()
    meta = json.loads((run / "run.json").read_text())
    assert [Path(f["path"]).name for f in meta["data_files"]] == ["rte_crowd.txt",
                                                                   "rte_truth.txt"]
    assert meta["document"]["replay"]["data_dir"] == str(rte)
    # a killed run: one unit and the final files missing; the folder moves, cwd elsewhere
    (run / "units" / "r000001_a000.json").unlink()
    (run / "curves.csv").unlink()
    moved = tmp_path / "elsewhere" / "moved-run"
    moved.parent.mkdir()
    shutil.move(run, moved)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["report", "moved-run", "--quiet", "--no-figures"]) == 0
    assert main(["run", "--resume", "moved-run", "--quiet", "--no-figures"]) == 0
    assert (moved / "curves.csv").read_bytes() == before
    assert main(["report", str(moved), "--quiet", "--no-figures"]) == 0
    assert f"--data-dir {rte}" in (moved / "report.md").read_text()
    # the data moves too: --data-dir says where; changed data is refused, naming the file
    (moved / "units" / "r000000_a000.json").unlink()
    shutil.move(rte, tmp_path / "data2")
    assert main(["run", "--resume", "moved-run", "--quiet", "--no-figures", "--data-dir",
                 str(tmp_path / "data2")]) == 0
    assert (moved / "curves.csv").read_bytes() == before
    (moved / "units" / "r000000_a000.json").unlink()
    truth = tmp_path / "data2" / "rte_truth.txt"
    truth.write_text(truth.read_text() + "\n")
    capsys.readouterr()
    assert main(["run", "--resume", "moved-run", "--quiet", "--no-figures", "--data-dir",
                 str(tmp_path / "data2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"marketsim: error: {truth}: changed since the run started")
    assert len(err.splitlines()) == 1


def test_run_data_dir_replaces_the_scenario_data_dir(rte: Path, tmp_path: Path, capsys) -> None:
    scenario = tmp_path / "replay.toml"
    scenario.write_text(REPLAY.format(data_dir="no/such/folder").replace("replicates = 2",
                                                                         "replicates = 1"))
    assert main(["run", str(scenario), "--out", str(tmp_path / "a"), "--quiet"]) == 2
    assert "no/such/folder" in capsys.readouterr().err
    assert main(["run", str(scenario), "--out", str(tmp_path / "b"), "--quiet", "--no-figures",
                 "--data-dir", str(rte)]) == 0


def test_data_dir_needs_a_dataset_replay(tmp_path: Path, capsys) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('[tasks]\ncount = 10\n[workers]\ncount = 3\n[budget]\nedges = 20\n'
                        '[[arms]]\nname = "u"\npolicy = "uniform"\n')
    assert main(["run", str(scenario), "--data-dir", str(tmp_path), "--quiet", "--no-figures",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--data-dir only applies to a replay of a reference data set" in err
    assert len(err.splitlines()) == 1


def test_python_m_marketsim_beside_the_checkout_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "marketsim").symlink_to(ROOT, target_is_directory=True)  # like a clone
    result = subprocess.run([sys.executable, "-m", "marketsim", "list"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": ""})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"marketsim: error: {tmp_path / 'marketsim'} is the marketsim checkout, not the "
        f"package: run from inside it (cd {tmp_path / 'marketsim'}) or install it "
        f"(pip install -e {tmp_path / 'marketsim'})"
    ]


def test_rerun_line_adds_allow_imports_for_import_path_policies(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('[tasks]\ncount = 20\n[workers]\ncount = 3\n[budget]\nedges = 40\n'
                        '[output]\ngraph = false\n[[arms]]\nname = "u"\npolicy = "uniform"\n')
    out = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--no-figures"]) == 0
    plain = (out / "report.md").read_text()
    assert "--replicates 1`" in plain and "--allow-imports" not in plain
    meta = json.loads((out / "run.json").read_text())
    meta["resolved_scenario"]["arms"][0]["policy"] = "my_policies:Greedy"
    (out / "run.json").write_text(json.dumps(meta))
    assert main(["report", str(out), "--quiet", "--no-figures"]) == 0
    text = (out / "report.md").read_text()
    assert ("`python -m marketsim run scenario.toml --seed 0 --replicates 1 --allow-imports`"
            " (the plug-in modules must be importable: on `PYTHONPATH`)") in text
