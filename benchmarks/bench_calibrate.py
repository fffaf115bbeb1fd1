"""Time ``marketsim calibrate`` on a reference data set or a synthetic label file, side by side
for several checkouts: wall time, CPU time (user + system of the command and its children) and
peak resident memory, one subprocess per run (issue #40: Web in at most 60 s, a 1,000,000-label
file in at most 10 minutes and 2 GiB).

    python benchmarks/bench_calibrate.py --dataset web --checkout /work/main --checkout .
    python benchmarks/bench_calibrate.py --synthetic 1000000 --checkout .   # 100,000 tasks x 10
    python benchmarks/bench_calibrate.py --synthetic 1000000 --classes 4    # multi-class
    python benchmarks/bench_calibrate.py --labels L.txt --truth T.txt --format zhang --jobs 2

Each checkout runs ``python -m marketsim calibrate`` from its own folder (its code first on
``PYTHONPATH``), in turn, ``--repeats`` times, interleaved (checkout 1, 2, 2, 1, ...) so a load
that drifts weighs on all alike; the synthetic file (with its truth) is written once by
``benchmarks/make_synthetic_labels.py`` (or ``--labels`` names a file already written, e.g.
by that script, so that several invocations time the same file). Each run's own progress
lines (one per calibrate step, with its time) are kept with ``--log DIR``. With one checkout
it can also be driven by ``benchmarks/compare_commits.py --bench cmd``::

    python benchmarks/compare_commits.py 97c6b87 HEAD --bench cmd --repeats 2 -- \
        $PWD/benchmarks/bench_calibrate.py --labels L.txt --truth T.txt --format zhang

Printed: one line per run and, per checkout, the median of each figure; ``--json`` prints
them as one JSON object instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # run from a checkout, uninstalled

from make_synthetic_labels import make_crowd  # noqa: E402


@dataclass(frozen=True)
class Timing:
    """One run of the command: wall and CPU seconds, peak resident MiB, exit code."""

    checkout: str
    wall: float
    cpu: float
    peak_mib: float
    code: int


def run_once(checkout: Path, args: list[str], out_dir: Path, log: Path | None = None
             ) -> Timing:
    """``python -m marketsim calibrate ARGS --out OUT`` from ``checkout``, measured by
    ``os.wait4`` (the child's own resource use: CPU of it and its reaped children, its peak
    resident set); its stderr (a line per step, with its time) into ``log`` if given."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = out_dir / f"twin_{abs(hash((str(checkout), time.perf_counter())))}.toml"
    started = time.perf_counter()
    with open(log or os.devnull, "w", encoding="utf-8") as err:
        proc = subprocess.Popen([sys.executable, "-m", "marketsim", "calibrate", *args,
                                 "--out", str(out)], cwd=checkout, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Timing(str(checkout), wall, usage.ru_utime + usage.ru_stime,
                  usage.ru_maxrss / 1024.0, proc.returncode)


def synthetic_files(n_labels: int, classes: int, folder: Path) -> list[str]:
    """The labels and truth of a seeded synthetic crowd of ``n_labels`` (10 a task, workers
    one per 50 tasks), in the zhang format; calibrate's arguments for them."""
    tasks = max(n_labels // 10, 1)
    crowd = make_crowd(n_tasks=tasks, per_task=10, n_workers=max(tasks // 50, 20),
                       n_classes=classes, seed=0)
    labels = crowd.write(folder / "labels.txt", fmt="zhang")
    truth = folder / "truth.txt"
    truth.write_text("".join(f"{i + 1} {c + 1}\n" for i, c in enumerate(crowd.truth.tolist())),
                     encoding="utf-8")
    return [str(labels), "--truth", str(truth), "--format", "zhang"]


def summary(timings: list[Timing]) -> dict[str, dict[str, float]]:
    """Per checkout, the median wall, CPU and peak memory of its runs."""
    out: dict[str, dict[str, float]] = {}
    for checkout in dict.fromkeys(t.checkout for t in timings):
        mine = [t for t in timings if t.checkout == checkout]
        out[checkout] = {"runs": len(mine),
                         "wall_s": statistics.median(t.wall for t in mine),
                         "cpu_s": statistics.median(t.cpu for t in mine),
                         "peak_mib": statistics.median(t.peak_mib for t in mine),
                         "failed": sum(t.code != 0 for t in mine)}
    return out


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run every checkout, print the timings."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--dataset", help="a reference data set (needs $MARKETSIM_DATA)")
    what.add_argument("--synthetic", type=int, metavar="LABELS",
                      help="a synthetic file of this many labels, 10 per task")
    what.add_argument("--labels", metavar="FILE", help="a label file already written")
    parser.add_argument("--truth", metavar="FILE", help="--labels' truth file")
    parser.add_argument("--format", help="--labels' format (zhang or csv)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="calibrate's --jobs, given to every checkout (97c6b87 and older do "
                        "not have the option; since session 32 calibrate's own default is the "
                        "CPUs available)")
    parser.add_argument("--log", type=Path, metavar="DIR",
                        help="keep each run's progress lines (stderr) in DIR")
    parser.add_argument("--classes", type=int, default=2, help="synthetic classes (default 2)")
    parser.add_argument("--checkout", action="append", type=Path,
                        help="a checkout to time (repeat for side by side; default: the "
                        "current folder)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    ns = parser.parse_args(argv)
    checkouts = [c.resolve() for c in (ns.checkout or [Path.cwd()])]  # compare_commits: each side's
    with tempfile.TemporaryDirectory(prefix="bench_calibrate_") as tmp:
        folder = Path(tmp)
        if ns.dataset is not None:
            args = ["--dataset", ns.dataset]
        elif ns.labels is not None:
            args = [str(Path(ns.labels).resolve())]
            args += ["--truth", str(Path(ns.truth).resolve())] if ns.truth else []
            args += ["--format", ns.format] if ns.format else []
        else:
            args = synthetic_files(ns.synthetic, ns.classes, folder)
        args += ["--jobs", str(ns.jobs)]
        if ns.log is not None:
            ns.log.mkdir(parents=True, exist_ok=True)
        timings = []
        for r in range(ns.repeats):
            for checkout in (checkouts if r % 2 == 0 else checkouts[::-1]):
                log = None if ns.log is None else \
                    ns.log / f"{checkout.name}_{r}_{len(timings)}.log"
                t = run_once(checkout, args, folder, log)
                timings.append(t)
                if not ns.json:
                    print(f"{checkout}: wall {t.wall:.1f} s, CPU {t.cpu:.1f} s, peak "
                          f"{t.peak_mib:.0f} MiB, exit {t.code}", flush=True)
    result = summary(timings)
    if ns.json:
        print(json.dumps({"runs": [asdict(t) for t in timings], "median": result}))
    else:
        for checkout, figures in result.items():
            print(f"median {checkout}: wall {figures['wall_s']:.1f} s, CPU "
                  f"{figures['cpu_s']:.1f} s, peak {figures['peak_mib']:.0f} MiB "
                  f"({figures['runs']} runs, {figures['failed']} failed)")
    return 0 if all(t.code == 0 for t in timings) else 1


if __name__ == "__main__":
    raise SystemExit(main())
