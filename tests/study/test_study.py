"""Studies end to end through the real entry point: parallel determinism, resume after SIGKILL,
Ctrl-C keeps finished units, Dask execution matches local execution."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.record.units import canonical_rows
from marketsim.scenario.parser import load_scenario
from marketsim.study import backends
from marketsim.study.resources import available_cpus, default_jobs
from marketsim.study.runner import costly_first, run_study, units_of
from tests.conftest import SMALL_SCENARIO

ROOT = Path(__file__).resolve().parents[2]


def marketsim(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "marketsim", *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )


def slow_scenario(tmp_path: Path, replicates: int = 6) -> Path:
    """A scenario whose units take a noticeable moment, so a run can be stopped half-way."""
    text = SMALL_SCENARIO.format(service=1.0)
    text = text.replace("count = 120", "count = 800").replace("edges = 600", "edges = 4000")
    text = text.replace("replicates = 2", f"replicates = {replicates}")
    path = tmp_path / "slow.toml"
    path.write_text(text)
    return path


def test_worker_processes_give_the_curves_of_this_process(
        small_scenario_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Units simulated in joblib worker processes give the rows this process gives (the small
    study is made to look costly enough for workers to start)."""
    scenario = load_scenario(small_scenario_path)
    serial = run_study(scenario, jobs=1)
    monkeypatch.setattr(backends, "worth_processes", lambda *_: True)
    pids: list[int] = []
    parallel = run_study(scenario, jobs=2, on_refresh=lambda *_: pids.append(os.getpid()))
    assert not pids  # no unit ran here: live callbacks only reach units run in this process
    assert canonical_rows(parallel) == canonical_rows(serial)
    assert len(canonical_rows(serial)) > 10


def unit_pid(rep: int, arm: int) -> tuple[int, int, int]:
    """A study unit that says which process ran it."""
    return rep, arm, os.getpid()


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_worker_processes_end_with_the_study(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: joblib kept the study's workers idle for five minutes, and a process that exits
    without the interpreter's clean-up (os._exit, as pytest-xdist's do) left them running."""
    monkeypatch.setattr(backends, "worth_processes", lambda *_: True)
    units = list(backends.local_units(unit_pid, [(r, 0) for r in range(4)], jobs=2))
    workers = {pid for _, _, pid in units} - {os.getpid()}
    assert sorted(u[:2] for u in units) == [(r, 0) for r in range(4)] and workers
    assert not [pid for pid in workers if running(pid)]


def test_a_small_study_does_not_start_worker_processes(small_scenario_path: Path) -> None:
    """Starting a worker costs about a CPU second (imports): a study whose units take a small
    fraction of that runs every unit in this process even with ``jobs=2``."""
    scenario = load_scenario(small_scenario_path)
    seen: set[tuple[int, int]] = set()
    results = run_study(scenario, jobs=2, on_refresh=lambda rep, arm, _p: seen.add((rep, arm)))
    assert seen == set(units_of(scenario)) == {(u.replicate, u.arm) for u in results}


def test_worker_processes_start_when_they_save_more_than_they_cost() -> None:
    start = backends.PROCESS_START_SECONDS
    assert not backends.worth_processes({}, 10, 2)  # nothing measured yet: run one here
    assert not backends.worth_processes({0: [0.05, 0.04]}, 10, 2)  # 0.45 s of work left
    # the costliest arm counts: 5 s left
    assert backends.worth_processes({0: [0.05], 1: [0.5]}, 10, 2)
    assert not backends.worth_processes({0: [10.0]}, 1, 2)  # one unit left: nothing to share
    assert not backends.worth_processes({0: [10.0]}, 10, 1)
    # two jobs halve the serial time: they pay once half of it exceeds their start
    assert not backends.worth_processes({0: [start]}, 2, 2)
    assert backends.worth_processes({0: [start]}, 3, 2)


def test_one_slow_unit_of_an_arm_does_not_start_worker_processes() -> None:
    """Lesson 6's units take 0.01 to 0.03 CPU s, one of them 0.1 on a loaded machine (a full
    collection of the cycle collector landed in it): the 21 units left take about 0.8 s, not
    2.1 (the costliest unit projected on each), so starting workers would not pay."""
    measured = {0: [0.02, 0.03, 0.02], 1: [0.01, 0.1, 0.01], 2: [0.03, 0.02, 0.03]}
    assert not backends.worth_processes(measured, 21, 2)


@pytest.fixture(scope="module")
def jobs_1_curves(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """``curves.csv`` of the small scenario run by the command (``main``, in this process: the
    entry point's own tests are below) with ``--jobs 1``: made once for the tests that compare
    other ways of running it with it."""
    folder = tmp_path_factory.mktemp("jobs_1")
    path = folder / "small.toml"
    path.write_text(SMALL_SCENARIO.format(service=2.0))
    assert main(["run", str(path), "--out", str(folder / "a"), "--quiet", "--no-figures",
                 "--jobs", "1"]) == 0
    curves = (folder / "a" / "curves.csv").read_bytes()
    assert len(curves.splitlines()) > 10
    return curves


def test_jobs_1_and_2_give_identical_curves(small_scenario_path: Path, tmp_path: Path,
                                            jobs_1_curves: bytes) -> None:
    b = tmp_path / "b"
    assert main(["run", str(small_scenario_path), "--out", str(b), "--quiet", "--no-figures",
                 "--jobs", "2"]) == 0
    assert (b / "curves.csv").read_bytes() == jobs_1_curves


@pytest.mark.skipif(available_cpus() < 2, reason="one CPU: the default is --jobs 1 itself")
def test_default_jobs_gives_the_curves_of_jobs_1(small_scenario_path: Path, tmp_path: Path,
                                                 jobs_1_curves: bytes) -> None:
    """Without --jobs a run uses every CPU (2 units at once or more here) and writes the same
    bytes as ``--jobs 1``."""
    assert default_jobs([load_scenario(small_scenario_path).outline]) >= 2
    b = tmp_path / "b"
    assert main(["run", str(small_scenario_path), "--out", str(b), "--quiet",
                 "--no-figures"]) == 0
    assert (b / "curves.csv").read_bytes() == jobs_1_curves


def test_parallel_runs_start_the_costly_units_first(tmp_path: Path) -> None:
    """Random-forest units (``unit_cost`` 12) are handed out before the uniform ones, so the
    last unit to start is a short one; among equals the order stays replicate-major, and no
    unit is lost or repeated."""
    path = tmp_path / "mixed.toml"
    path.write_text(SMALL_SCENARIO.format(service=0.0).replace(
        'policy = "entropy-greedy"', 'policy = "random-forest"'))
    scenario = load_scenario(path)
    keys = units_of(scenario)
    order = costly_first(scenario, keys)
    assert sorted(order) == sorted(keys)
    assert order == [(0, 1), (1, 1), (0, 0), (1, 0)]


def _wait_for_units(run_dir: Path, n: int, proc: subprocess.Popen, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if len(list((run_dir / "units").glob("*.json"))) >= n:
            return
        if proc.poll() is not None:
            pytest.fail("run ended before it could be interrupted")
        time.sleep(0.05)
    pytest.fail("no unit finished in time")


#: ``python -c`` for a run that signals itself (``sys.argv[1]``) as it is about to checkpoint
#: the unit after the first ``sys.argv[2]`` (``sys.argv[3]`` "workers": the units run in worker
#: processes however small), then the command's arguments. The signal is a real one to a
#: process of its own, at the same point of the study however loaded the machine: a test that
#: polled the folder and signalled from outside needed units long enough to be caught half-way
#: (20 CPU s for the SIGKILL test); the kills at random moments are
#: tests/robustness/test_nothing_lost.py's (slow step).
STOPPED_RUN = """
import os, sys
from marketsim.cli import main
from marketsim.study import backends, session
sig, after = int(sys.argv[1]), int(sys.argv[2])
save, saved = session.save_unit, []
def signal_before_saving(*args):
    if len(saved) == after:
        os.kill(os.getpid(), sig)
    save(*args)
    saved.append(args)
session.save_unit = signal_before_saving
if sys.argv[3] == "workers":
    backends.worth_processes = lambda *_: True
sys.exit(main(sys.argv[4:]))
"""


def stopped_run(sig: signal.Signals, after: int, args: list[str], *, workers: bool = False,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m marketsim ARGS`` in a process of its own that receives ``sig`` with
    ``after`` units checkpointed and the next one finished but not yet saved (SIGINT with its
    default meaning, as a terminal delivers it, even when the suite was started in the
    background)."""
    return subprocess.run(
        [sys.executable, "-c", STOPPED_RUN, str(int(sig)), str(after),
         "workers" if workers else "here", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_sigkill_then_resume_equals_uninterrupted_run(small_scenario_path: Path, tmp_path: Path,
                                                      jobs_1_curves: bytes) -> None:
    """Killed with 2 of its 4 units saved (and a third lost), the run resumed (``main``, in
    this process) writes the bytes of the uninterrupted ``--jobs 1`` run."""
    killed = tmp_path / "killed"
    proc = stopped_run(signal.SIGKILL, 2, ["run", str(small_scenario_path), "--out", str(killed),
                                           "--quiet", "--jobs", "1"])
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(list((killed / "units").glob("*.json"))) == 2
    assert not (killed / "curves.csv").exists()
    assert main(["run", "--resume", str(killed), "--quiet", "--no-figures", "--jobs", "1"]) == 0
    assert (killed / "curves.csv").read_bytes() == jobs_1_curves
    assert json.loads((killed / "summary.json").read_text())["complete"] is True


def test_sigint_keeps_finished_units_and_exits_130(small_scenario_path: Path,
                                                   tmp_path: Path) -> None:
    out = tmp_path / "interrupted"
    # --jobs 1: units run in this process (the worker-process path has its own test below).
    # No figures: drawing them is the finished run's code, and 2 of the test's 5 CPU seconds.
    proc = stopped_run(signal.SIGINT, 2, ["run", str(small_scenario_path), "--out", str(out),
                                          "--jobs", "1", "--no-figures"],
                       env={**os.environ, "COLUMNS": "100"})
    err = proc.stderr
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "--resume" in err and str(out) in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False
    assert summary["units_finished"] == 2
    lines = (out / "curves.csv").read_text().splitlines()
    assert lines[0].startswith("arm,replicate,edges,error_rate,ability_error,sim_time")
    assert len(lines) > 1


def test_sigint_with_worker_processes_exits_130(small_scenario_path: Path,
                                                tmp_path: Path) -> None:
    """The default on several CPUs: Ctrl-C stops a run whose units run in worker processes."""
    out = tmp_path / "interrupted"
    proc = stopped_run(signal.SIGINT, 2, ["run", str(small_scenario_path), "--out", str(out),
                                          "--jobs", "2", "--quiet", "--no-figures"],
                       workers=True)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    # joblib's own complaint about the units it cancelled is not the user's business: the
    # run's message says what was kept and how to resume
    assert "Warning" not in proc.stderr and "cancelled" not in proc.stderr, proc.stderr
    assert json.loads((out / "summary.json").read_text())["complete"] is False


def test_dask_backend_matches_serial_run_in_process(small_scenario_path: Path) -> None:
    """The Dask path (every unit submitted to a scheduler, results collected as they complete)
    on an in-process cluster: the default loop's cheap twin of the LocalCluster test below."""
    distributed = pytest.importorskip("distributed",
                                      reason="the 'cluster' extra (distributed) is not installed")
    scenario = load_scenario(small_scenario_path)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        via_dask = run_study(scenario, backend="dask", scheduler=cluster.scheduler_address)
    assert canonical_rows(via_dask) == canonical_rows(run_study(scenario, jobs=1))


@pytest.mark.slow  # worker processes start for seconds; the in-process twin above is quick
def test_dask_local_cluster_matches_local_run(small_scenario_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the 'cluster' extra (distributed) is not installed")
    local, dask = tmp_path / "local", tmp_path / "dask"
    r1 = marketsim("run", str(small_scenario_path), "--out", str(local), "--quiet", "--no-figures")
    r2 = marketsim(
        "run", str(small_scenario_path), "--out", str(dask), "--quiet",
        "--backend", "dask", "--jobs", "2",
    )
    assert r1.returncode == 0, r1.stderr
    assert r2.returncode == 0, r2.stderr
    assert (local / "curves.csv").read_bytes() == (dask / "curves.csv").read_bytes()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "missing.toml"], "missing.toml: file not found"),
        (["run", "--resume", "no/such/dir"], "run folder not found"),
        (["run", "scenarios/30_workers.toml", "--jobs", "0"], "--jobs must be >= 1"),
        (["run", "scenarios/30_workers.toml", "--scheduler", "tcp://x:1"], "--backend dask"),
        (["run"], "give a scenario file"),
    ],
)
def test_run_bad_input_is_one_line_exit_2(args: list[str], needle: str,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """In this process (test_bad_sweep_point_names_point_and_key goes through the entry
    point): the exit code and the one line are main()'s."""
    monkeypatch.chdir(ROOT)
    assert main(args) == 2
    stderr = capsys.readouterr().err
    assert needle in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert "Traceback" not in stderr


def test_sweep_expands_grid_and_reports_labels_needed(tmp_path: Path) -> None:
    text = SMALL_SCENARIO.format(service=0.0) + (
        "\n[sweep]\nworkers.count = [6, 10]\nworkers.ability.alpha = [3, 9]\n"
    )
    scenario = tmp_path / "sweep.toml"
    scenario.write_text(text)
    out = tmp_path / "sweep"
    # No figures: drawing the 4 points' and the sweep's was 9 of the test's 10 CPU seconds; a
    # sweep run with its figures is tests/report/conftest.py's priced_sweep (its sweep figure:
    # test_no_figures.py, test_sweep_results.py).
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--replicates", "1",
                 "--no-figures"]) == 0
    rows = (out / "sweep.csv").read_text().splitlines()
    assert rows[0].startswith("point,workers.count,workers.ability.alpha,arm,metric,final_error")
    assert len(rows) == 1 + 4 * 2  # 4 grid points x 2 arms
    assert len(list((out / "points").glob("p*/curves.csv"))) == 4
    # Better workers (alpha 9) must not need more labels to do well: the final error is lower.
    import csv

    recs = list(csv.DictReader((out / "sweep.csv").read_text().splitlines()))
    def final(alpha: str) -> float:
        rows = [r for r in recs if r["workers.ability.alpha"] == alpha]
        return sum(float(r["final_error"]) for r in rows)
    assert final("9") < final("3")


def test_bad_sweep_point_names_point_and_key(tmp_path: Path) -> None:
    scenario = tmp_path / "bad_sweep.toml"
    scenario.write_text(SMALL_SCENARIO.format(service=0.0) + "\n[sweep]\nworkers.count = [6, -1]\n")
    result = marketsim("run", str(scenario), "--out", str(tmp_path / "o"), "--quiet",
                       "--no-figures")
    assert result.returncode == 2
    assert "sweep point workers.count=-1: workers.count must be >= 1" in result.stderr
