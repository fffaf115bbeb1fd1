"""Wall time of each teaching lesson (``scenarios/teaching/``), run exactly as
``docs/teaching.md`` tells students to run it:

    python benchmarks/bench_teaching.py              # every lesson, --jobs 2
    python benchmarks/bench_teaching.py --only 03    # lessons whose file name contains "03"

Each lesson runs as ``python -m marketsim run LESSON --jobs 2`` in a fresh process (imports,
simulation, reports and plots included) into a temporary folder. It prints the wall time, the
CPU time of the run's whole process tree (user + system, worker processes included: this
process is their subreaper, so a worker that outlives the run is still counted), and the load
average before the run: on a shared machine the wall time grows with the load, the CPU time
much less. The first row is the floor: the same command on a tiny one-replicate scenario
(imports, report and plots), the part of a lesson's time that is not its simulation. The
budget is 10 s of wall time a lesson on 2 cores; the CPU targets are 6 s a lesson and 2.5 s
for the floor.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "scenarios" / "teaching").glob("*.toml"))
BUDGET_SECONDS = 10.0
#: prctl(PR_SET_CHILD_SUBREAPER): orphaned grandchildren (joblib's worker processes) are
#: re-parented to this process, so their CPU time is counted when they are reaped.
PR_SET_CHILD_SUBREAPER = 36
#: The floor's scenario: the least a run does (two arms, as every lesson has).
FLOOR = """
[scenario]
name = "floor"
[tasks]
count = 10
[workers]
count = 3
[budget]
edges = 20
batch = 10
[[arms]]
name = "uniform"
policy = "uniform"
[[arms]]
name = "entropy-greedy"
policy = "entropy-greedy"
"""


def run_lesson(path: Path, jobs: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child processes) of one lesson's run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "marketsim", "run", str(path), "--jobs", str(jobs),
             "--out", str(Path(tmp) / "run"), "--quiet"],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{path.name}: exit {proc.returncode}: {proc.stderr.strip()}")
    reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def become_subreaper() -> None:
    """Adopt the run's orphaned descendants (Linux; elsewhere they are not counted)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def reap_orphans() -> None:
    """Wait for every adopted descendant, so its CPU time enters RUSAGE_CHILDREN."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def main() -> int:
    """Run the lessons one after the other and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="run lessons whose file name contains this")
    ap.add_argument("--jobs", type=int, default=2, help="--jobs of each run (default 2)")
    args = ap.parse_args()
    become_subreaper()
    lessons = [p for p in LESSONS if args.only in p.name]
    if not lessons:
        raise SystemExit(f"no lesson matches {args.only!r}")
    print(f"{'lesson':<34} {'wall s':>7} {'CPU s':>7} {'load':>5}  within {BUDGET_SECONDS:g} s")
    with tempfile.TemporaryDirectory() as tmp:
        floor = Path(tmp) / "floor.toml"
        floor.write_text(FLOOR, encoding="utf-8")
        load = os.getloadavg()[0]
        wall, cpu = run_lesson(floor, args.jobs)
        print(f"{'(floor: tiny scenario)':<34} {wall:7.1f} {cpu:7.1f} {load:5.1f}", flush=True)
    over = 0
    for path in lessons:
        load = os.getloadavg()[0]
        wall, cpu = run_lesson(path, args.jobs)
        over += wall > BUDGET_SECONDS
        print(f"{path.name:<34} {wall:7.1f} {cpu:7.1f} {load:5.1f}  "
              f"{'yes' if wall <= BUDGET_SECONDS else 'NO'}", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
