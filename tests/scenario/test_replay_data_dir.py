"""Where a replay scenario's reference data come from: ``--data-dir`` (``run`` and
``validate``), then ``$MARKETSIM_DATA``, then the scenario file's own ``replay.data_dir``
(``marketsim/data/datasets.py``); the shipped replay scenario pins no folder."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.scenario.run_migration import read_run
from marketsim.scenario.run_record import recorded_scenario

ROOT = Path(__file__).resolve().parents[2]


def fake_rte(folder: Path, tasks: int, workers: int = 3) -> Path:
    """A small RTE-shaped data set of ``tasks`` tasks, each answered by ``workers`` workers."""
    folder.mkdir(parents=True)
    crowd = [f"{t}\t{w}\t{1 + (t + w) % 2}" for t in range(1, tasks + 1)
             for w in range(1, workers + 1)]
    (folder / "rte_crowd.txt").write_text("\n".join(crowd) + "\n", encoding="utf-8")
    truth = [f"{t}\t{1 + t % 2}" for t in range(1, tasks + 1)]
    (folder / "rte_truth.txt").write_text("\n".join(truth) + "\n", encoding="utf-8")
    return folder


Command = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def marketsim(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Command:
    """``marketsim ARGS`` run by :func:`marketsim.cli.main` in this process, from the folder
    ``cwd`` with ``$MARKETSIM_DATA`` set to ``data_env`` (unset for None): exit code and
    output as a finished process's."""
    def command(*args: str, cwd: Path, data_env: Path | None) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        if data_env is None:
            monkeypatch.delenv("MARKETSIM_DATA", raising=False)
        else:
            monkeypatch.setenv("MARKETSIM_DATA", str(data_env))
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["marketsim", *args], code, out, err)

    return command


def tasks_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return next(line for line in result.stdout.splitlines() if line.startswith("tasks:"))


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    """Three data folders told apart by their task counts, and a scenario pinning the third."""
    out = {"given": fake_rte(tmp_path / "given", 10), "env": fake_rte(tmp_path / "env", 12),
           "file": fake_rte(tmp_path / "file", 14)}
    out["scenario"] = tmp_path / "replay.toml"
    out["scenario"].write_text(
        '[scenario]\nname = "tiny replay"\n[replay]\ndataset = "rte"\ndata_dir = "file"\n'
        '[budget]\nedges = 30\nbatch = 10\n[[arms]]\nname = "u"\npolicy = "uniform"\n',
        encoding="utf-8")
    return out


def test_validate_takes_data_dir_over_env_over_the_files_folder(
        folders: dict[str, Path], tmp_path: Path, marketsim: Command) -> None:
    sc = str(folders["scenario"])
    assert tasks_line(marketsim("validate", sc, cwd=tmp_path, data_env=None)).startswith(
        "tasks: 14 ")
    assert tasks_line(marketsim("validate", sc, cwd=tmp_path, data_env=folders["env"])
                      ).startswith("tasks: 12 ")
    assert tasks_line(marketsim("validate", sc, "--data-dir", str(folders["given"]),
                                cwd=tmp_path, data_env=folders["env"])).startswith("tasks: 10 ")
    plain = marketsim("validate", str(ROOT / "scenarios" / "30_workers.toml"), "--data-dir",
                      str(tmp_path), cwd=tmp_path, data_env=None)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert len(plain.stderr.strip().splitlines()) == 1
    assert "--data-dir only applies to a replay" in plain.stderr


def test_run_records_the_folder_it_used(folders: dict[str, Path], tmp_path: Path,
                                        marketsim: Command) -> None:
    """``run`` follows the same order, and run.json's document names the folder used."""
    for data_env, given, used in ((folders["env"], None, "env"),
                                  (folders["env"], folders["given"], "given")):
        out = tmp_path / f"run-{used}"
        args = ["run", str(folders["scenario"]), "--out", str(out), "--quiet", "--no-figures"]
        done = marketsim(*args, *(["--data-dir", str(given)] if given else []), cwd=tmp_path,
                         data_env=data_env)
        assert done.returncode == 0, done.stderr
        meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
        assert meta["document"]["replay"]["data_dir"] == str(folders[used])
        recorded = recorded_scenario(read_run(out / "run.json"))
        assert recorded.tasks.count == {"env": 12, "given": 10}[used]


def test_shipped_replay_scenario_reads_marketsim_data(tmp_path: Path,
                                                      marketsim: Command) -> None:
    """scenarios/replay_rte.toml pins no folder: $MARKETSIM_DATA decides (8,100 labels here,
    enough for its 8,000-label budget)."""
    data = fake_rte(tmp_path / "mine", 810, workers=10)
    line = tasks_line(marketsim("validate", str(ROOT / "scenarios" / "replay_rte.toml"),
                                cwd=tmp_path, data_env=data))
    assert line.startswith("tasks: 810 "), line
