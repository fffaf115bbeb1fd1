"""A run folder holds one study (issue #13 items 16, 17, 20, 19): another study is refused,
the same one resumes, the folder is locked while a run writes, damaged checkpoints are named and
redone, unfinished sweep points are named, extreme options are refused or capped, and a missing
Dask is refused before anything is created."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.record import files
from marketsim.record.curves import CurveRow
from marketsim.record.units import UnitResult
from marketsim.scenario.parser import load_scenario
from marketsim.study.checkpoints import DURABLE_UNIT_SECONDS, load_units, save_unit
from marketsim.study.lock import folder_lock
from marketsim.study.resources import (
    GIB,
    MAX_FIT_JOBS,
    capped_jobs,
    default_jobs,
    estimate_run_memory,
    fit_jobs,
)

TINY = """
[scenario]
name = "tiny"
seed = 5
replicates = 2

[tasks]
count = 30

[workers]
count = {workers}

[budget]
edges = 120
batch = 30

[output]
graph = false

[[arms]]
name = "uniform"
policy = "uniform"

[[arms]]
name = "entropy"
policy = "entropy-greedy"
{extra}
"""


def tiny(tmp_path: Path, name: str = "tiny.toml", workers: int = 5, extra: str = "") -> Path:
    path = tmp_path / name
    path.write_text(TINY.format(workers=workers, extra=extra))
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(scenario, run folder) of one finished tiny study; tests copy the folder."""
    base = tmp_path_factory.mktemp("finished")
    scenario = tiny(base)
    assert main(["run", str(scenario), "--out", str(base / "run"), "--quiet", "--no-figures"]) == 0
    return scenario, base / "run"


def copy_run(finished: tuple[Path, Path], tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished[1], out)
    return out


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("marketsim: error")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- item 16: one study per folder -----------------------------------------------------------
@pytest.mark.parametrize(("change", "needle"), [
    (["--seed", "6"], "seed 5 there, 6 here"),
    (["--replicates", "3"], "replicates 2 there, 3 here"),
    ("name", "scenario name 'tiny' there, 'other' here"),
    ("workers", "workers.count 5 there, 7 here"),
])
def test_another_study_into_the_folder_is_refused(finished, tmp_path: Path, capsys,
                                                  change, needle: str) -> None:
    out = copy_run(finished, tmp_path)
    before = (out / "curves.csv").read_bytes()
    scenario, extra = finished[0], []
    if change == "name":
        scenario = tmp_path / "other.toml"
        scenario.write_text(finished[0].read_text().replace('"tiny"', '"other"'))
    elif change == "workers":
        scenario = tiny(tmp_path, "seven.toml", workers=7)
    else:
        extra = change
    assert main(["run", str(scenario), "--out", str(out), "--quiet", *extra]) == 2
    line = error_line(capsys)
    assert f"{out} holds another study ({needle})" in line and "--resume" in line
    assert (out / "curves.csv").read_bytes() == before


def test_same_study_again_and_resume_continue_the_folder(finished, tmp_path: Path) -> None:
    out = copy_run(finished, tmp_path)
    before = (out / "curves.csv").read_bytes()
    (out / "units" / "r000001_a001.json").unlink()
    (out / "curves.csv").unlink()
    # the same scenario from another file with other comments is the same study
    again = tmp_path / "again.toml"
    again.write_text("# a comment\n" + finished[0].read_text())
    assert main(["run", str(again), "--out", str(out), "--quiet", "--no-figures"]) == 0
    assert (out / "curves.csv").read_bytes() == before
    (out / "units" / "r000000_a000.json").unlink()
    assert main(["run", "--resume", str(out), "--quiet", "--no-figures"]) == 0
    assert (out / "curves.csv").read_bytes() == before


def test_resume_a_study_named_after_its_file(tmp_path: Path) -> None:
    """A scenario without [scenario] name is named after its file; resuming from the folder
    (whose copy is called scenario.toml) is still the same study."""
    scenario = tmp_path / "unnamed_study.toml"
    scenario.write_text(TINY.format(workers=5, extra="").replace('name = "tiny"\n', "", 1))
    out = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--no-figures"]) == 0
    before = (out / "curves.csv").read_bytes()
    (out / "units" / "r000001_a000.json").unlink()
    (out / "curves.csv").unlink()
    assert main(["run", "--resume", str(out), "--quiet", "--no-figures"]) == 0
    assert (out / "curves.csv").read_bytes() == before
    assert json.loads((out / "summary.json").read_text())["scenario"] == "unnamed_study"


def test_resume_refuses_an_edited_scenario_copy(finished, tmp_path: Path, capsys) -> None:
    out = copy_run(finished, tmp_path)
    (out / "units" / "r000001_a001.json").unlink()
    copy = out / "scenario.toml"
    copy.write_text(copy.read_text().replace("count = 5", "count = 6"))
    assert main(["run", "--resume", str(out), "--quiet"]) == 2
    line = error_line(capsys)
    assert line.startswith(f"marketsim: error: {copy}: edited since the run started")
    assert not (out / "units" / "r000001_a001.json").exists()


def test_resume_uses_the_recorded_scenario_when_the_copy_is_gone(finished, tmp_path) -> None:
    out = copy_run(finished, tmp_path)
    before = (out / "curves.csv").read_bytes()
    (out / "units" / "r000001_a000.json").unlink()
    (out / "scenario.toml").unlink()
    assert main(["run", "--resume", str(out), "--quiet", "--no-figures"]) == 0
    assert (out / "curves.csv").read_bytes() == before


def test_run_json_records_the_study(finished) -> None:
    meta = json.loads((finished[1] / "run.json").read_text())
    assert len(meta["fingerprint"]) == 64
    assert meta["data_files"] == []
    assert meta["document"]["scenario"]["name"] == "tiny"
    assert len(meta["scenario_sha256"]) == 64
    assert (meta["seed"], meta["replicates"]) == (5, 2)


def test_folder_in_use_is_refused_at_once(tmp_path: Path, capsys) -> None:
    scenario, out = tiny(tmp_path), tmp_path / "run"
    with folder_lock(out):  # another open file description: flock conflicts as for a process
        assert main(["run", str(scenario), "--out", str(out), "--quiet"]) == 2
    line = error_line(capsys)
    assert line == f"marketsim: error: {out} is in use by another run (pid {os.getpid()})"
    assert not (out / "run.json").exists()


def test_lock_is_released_when_its_holder_is_killed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code = ("import sys, time; from pathlib import Path; from marketsim.study.lock import "
            "folder_lock\nwith folder_lock(Path(sys.argv[1])):\n print('locked', flush=True)\n"
            " time.sleep(120)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(Exception, match=rf"in use by another run \(pid {holder.pid}\)"):
            with folder_lock(out):
                pass
        holder.kill()
        holder.wait(timeout=30)
        with folder_lock(out):  # SIGKILL released it
            assert (out / ".lock").read_text().strip() == str(os.getpid())
    finally:
        holder.kill()
        holder.wait(timeout=30)
        holder.stdout.close()


# --- item 17: damaged checkpoints, unfinished sweep points ----------------------------------
def _damage(path: Path, kind: str) -> None:
    data = json.loads(path.read_text())
    if kind == "truncated":
        path.write_text(path.read_text()[:40])
        return
    if kind == "empty":  # what a power cut may leave of a checkpoint not flushed to the disk
        path.write_text("")
        return
    if kind == "nan":
        data["rows"][1][1] = math.nan
    elif kind == "string":
        data["rows"][1][1] = "0.25"
    elif kind == "missing-row":
        del data["rows"][1]
    elif kind == "wrong-arm":
        data["arm_name"] = "entropy"
    elif kind == "short-row":
        data["rows"][2] = data["rows"][2][:2]
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("kind", ["truncated", "empty", "nan", "string", "missing-row",
                                  "wrong-arm", "short-row"])
def test_damaged_checkpoint_is_named_and_redone(finished, tmp_path: Path, capsys,
                                                kind: str) -> None:
    out = copy_run(finished, tmp_path)
    before = (out / "curves.csv").read_bytes()
    unit = out / "units" / "r000001_a000.json"
    _damage(unit, kind)
    assert main(["run", "--resume", str(out), "--quiet", "--no-figures"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "damaged checkpoint" in line]
    assert len(warnings) == 1 and "Traceback" not in err, err
    assert warnings[0].startswith(f"marketsim: warning: {unit}: damaged checkpoint (")
    assert warnings[0].endswith("the unit is simulated again")
    assert (out / "curves.csv").read_bytes() == before
    json.loads(unit.read_text())  # rewritten whole


def test_a_costly_units_checkpoint_is_flushed_to_the_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit of DURABLE_UNIT_SECONDS or more survives a power cut (fsync before the rename);
    a cheaper one is not worth the wait (a resume simulates it again if it is lost)."""
    scenario = load_scenario(tiny(tmp_path))
    flushed: list[int] = []
    real_fsync = files.os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: (flushed.append(fd), real_fsync(fd)))
    row = CurveRow(120, 0.1, 0.2, 3.0, arm="uniform", replicate=0)
    save_unit(tmp_path, scenario, UnitResult(0, 0, (row,), DURABLE_UNIT_SECONDS / 20))
    assert flushed == []
    save_unit(tmp_path, scenario, UnitResult(1, 0, (row,), DURABLE_UNIT_SECONDS))
    assert len(flushed) == 1
    assert [u.seconds for u in load_units(tmp_path, scenario)] == [DURABLE_UNIT_SECONDS / 20,
                                                                   DURABLE_UNIT_SECONDS]


def test_report_names_a_damaged_checkpoint(finished, tmp_path: Path, capsys) -> None:
    out = copy_run(finished, tmp_path)
    (out / "curves.csv").unlink()
    unit = out / "units" / "r000000_a001.json"
    _damage(unit, "nan")
    assert main(["report", str(out), "--json", "--no-figures"]) == 0
    captured = capsys.readouterr()
    assert f"marketsim: warning: {unit}: damaged checkpoint" in captured.err
    assert json.loads(captured.out)["rendered"][0]["complete"] is False


def test_report_on_unfinished_sweep_names_missing_points(tmp_path: Path, capsys) -> None:
    scenario = tiny(tmp_path, extra="[sweep]\nworkers.count = [4, 6, 8]")
    out = tmp_path / "sweep"
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--no-figures",
                 "--replicates", "1"]) == 0
    shutil.rmtree(out / "points" / "p001")
    capsys.readouterr()
    assert main(["report", str(out), "--json", "--no-figures"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["unfinished_points"] == ["p001"]
    assert ("sweep points not finished: p001 (workers.count=6); finish them with: "
            f"python -m marketsim run --resume {out}") in captured.err
    for p in ("p000", "p002"):
        shutil.rmtree(out / "points" / p)
    assert main(["report", str(out)]) == 2
    line = error_line(capsys)
    assert "no sweep point has finished yet (3 to run)" in line
    assert f"python -m marketsim run --resume {out}" in line


# --- item 20: extreme values ----------------------------------------------------------------
@pytest.mark.parametrize(("args", "needle"), [
    (["--replicates", "0"], "--replicates must be between 1 and 100000, got 0"),
    (["--replicates", "-4"], "--replicates must be between 1 and 100000, got -4"),
    (["--replicates", str(10**12)], f"--replicates must be between 1 and 100000, got {10**12}"),
    (["--seed", str(2**64)], "--seed must be between 0 and 2**63 - 1"),
    (["--jobs", "0"], "--jobs must be >= 1, got 0"),
    (["--jobs", "-2"], "--jobs must be >= 1, got -2"),
])
def test_extreme_values_are_refused_in_one_line(tmp_path: Path, capsys, args, needle) -> None:
    assert main(["run", str(tiny(tmp_path)), "--out", str(tmp_path / "o"), *args]) == 2
    assert needle in error_line(capsys)
    assert not (tmp_path / "o").exists()


def test_huge_jobs_is_capped_with_a_note(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    assert main(["run", str(tiny(tmp_path)), "--out", str(out), "--jobs", str(10**12),
                 "--replicates", "1", "--json", "--no-figures"]) == 0
    err = capsys.readouterr().err
    assert f"marketsim: note: --jobs {10**12} capped to " in err
    assert (out / "curves.csv").is_file()


def test_capped_jobs() -> None:
    assert capped_jobs(4, units=10, cpus=8) == (4, None)
    assert capped_jobs(64, units=3, cpus=8) == (3, "--jobs 64 capped to 3 (the 3 units to run)")
    assert capped_jobs(64, units=30, cpus=2) == (2, "--jobs 64 capped to 2 (the 2 CPUs available)")


def test_default_jobs_every_cpu_as_far_as_units_and_memory_go(tmp_path: Path) -> None:
    scenario = [load_scenario(tiny(tmp_path)).outline]  # 2 replicates x 2 arms = 4 units
    assert default_jobs(scenario, cpus=2, available=10 * GIB) == 2
    assert default_jobs(scenario, cpus=64, available=10 * GIB) == 4
    assert default_jobs(scenario, cpus=1, available=10 * GIB) == 1
    # memory for 3 processes but not 4: 3; for none at all: still 1 (check_memory refuses it)
    assert default_jobs(scenario, cpus=64, available=estimate_run_memory(scenario, 3)) == 3
    assert default_jobs(scenario, cpus=64, available=1) == 1


def test_a_calibration_uses_the_cpus_up_to_its_widest_step_unless_told() -> None:
    assert fit_jobs(None, cpus=2) == 2 and fit_jobs(None, cpus=1) == 1
    assert fit_jobs(None, cpus=64) == MAX_FIT_JOBS == 4  # four pairs of worlds side by side
    assert fit_jobs(3, cpus=64) == 3 and fit_jobs(1, cpus=64) == 1  # --jobs N as given


# --- item 19: Dask missing --------------------------------------------------------------------
def test_dask_without_distributed_is_refused_before_the_folder(tmp_path: Path, capsys,
                                                               monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    out = tmp_path / "o"
    assert main(["run", str(tiny(tmp_path)), "--out", str(out), "--backend", "dask"]) == 2
    assert 'pip install "marketsim[cluster]"' in error_line(capsys)
    assert not out.exists()
