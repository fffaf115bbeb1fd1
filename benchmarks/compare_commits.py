"""Time one benchmark at two commits, interleaved, and print the ratio old/new with its spread.

    python benchmarks/compare_commits.py OLD NEW [--repeats N] [--bench NAME] -- BENCH_ARGS

Both commits are checked out into temporary worktrees (``git worktree add --detach``, removed
at the end); one process drives the benchmark as subprocesses, each run with its own worktree
first on ``PYTHONPATH`` and as its working directory, in interleaved pairs: old, new, then new,
old, and so on (the order flips every pair, so a load that drifts during the session weighs on
both sides alike). One untimed warm-up run per side comes first (it also compiles the
worktree's bytecode, which ``PYTHONDONTWRITEBYTECODE`` would otherwise redo on every run).
A checkout with a ``setup.py`` (C extensions) has them compiled in its worktree first
(``setup.py build_ext --inplace``), as ``pip install -e`` would.

Benchmarks (``--bench``; BENCH_ARGS are appended to the command):

- ``main`` (default): ``python -m marketsim run SCENARIO --out TMP --quiet BENCH_ARGS``,
  SCENARIO = ``--scenario`` (default ``scenarios/30_workers.toml``, each side's own copy);
- ``unit``: the same with a scenario cut down to one arm (``--arm``, default 0) and one
  replicate: a single market unit through the CLI;
- ``infer``: ``python -m marketsim infer LABELS --json BENCH_ARGS``, LABELS = ``--labels FILE``
  (e.g. the 1,000,000-label file of ``benchmarks/make_synthetic_labels.py``);
- ``cmd``: ``python BENCH_ARGS`` as given.

Example (the main command at one replicate, before and after a change)::

    python benchmarks/compare_commits.py c3d041e HEAD --repeats 5 -- --replicates 1 --jobs 1

With ``--metric NAME`` the timed figure is not the run's wall time but the seconds it prints
on a stdout line ``{"metric": NAME, "seconds": S}``: for a benchmark that times one step
inside the process (e.g. ``bench_dawid_skene.py --metric whole``, the Dawid–Skene fit as
``infer`` runs it), without interpreter start-up and data generation. Give the benchmark
script by an absolute path to run this checkout's copy of it against both commits' code (it
imports ``marketsim`` from ``PYTHONPATH``)::

    python benchmarks/compare_commits.py BASE HEAD --bench cmd --metric whole --repeats 5 -- \
        $PWD/benchmarks/bench_dawid_skene.py --classes 2 --no-memory --no-crowdkit --metric whole

Printed: each side's median wall time (with min and max), CPU time (the child's user + system
time, its reaped worker processes included) and peak resident memory (of the largest process
of the tree), the ratios of the medians old/new, the per-pair wall ratios' median, min–max and
interquartile range, and a bootstrap 95 % interval of the median per-pair ratio. A ratio above
1 means NEW is faster (or leaner). For ``main`` and ``unit`` the script also says whether every
run wrote the same ``curves.csv`` bytes.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHES = ("main", "unit", "infer", "cmd")
BOOTSTRAP_RESAMPLES = 10_000


@dataclass
class Side:
    """One commit under test: where it is checked out and what its runs measured."""

    label: str
    commit: str
    tree: Path
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)  # peak MiB of the largest process
    outputs: set[str] = field(default_factory=set)  # distinct curves.csv texts


def git(*args: str, cwd: Path = ROOT) -> str:
    """Output of a git command in ``cwd`` (the repository of this script by default)."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"compare_commits: git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def one_arm(text: str, arm: int) -> str:
    """Scenario TOML ``text`` keeping only arm number ``arm`` (its ``[arms.*]`` tables too)."""
    head: list[str] = []
    arms: list[list[str]] = []
    in_arm = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[[arms]]"):
            arms.append([])
            in_arm = True
        elif stripped.startswith("[") and not stripped.startswith("[arms."):
            in_arm = False
        (arms[-1] if in_arm else head).append(line)
    if not 0 <= arm < len(arms):
        raise SystemExit(f"compare_commits: --arm {arm}: the scenario has {len(arms)} arms")
    return "\n".join(head + arms[arm]) + "\n"


def command(args: argparse.Namespace, side: Side, out: Path) -> list[str]:
    """The argv of one timed run of ``args.bench`` on ``side``, writing into ``out``."""
    py = [sys.executable]
    if args.bench == "cmd":
        return py + args.bench_args
    if args.bench == "infer":
        return py + ["-m", "marketsim", "infer", str(args.labels), "--json", *args.bench_args]
    scenario = side.tree / args.scenario
    if args.bench == "unit":
        cut = out.parent / f"{side.label}-unit.toml"
        cut.write_text(one_arm(scenario.read_text(), args.arm))
        scenario = cut
        extra = ["--replicates", "1"]
    else:
        extra = []
    return py + ["-m", "marketsim", "run", str(scenario), "--out", str(out), "--quiet",
                 *extra, *args.bench_args]


def side_env(side: Side) -> dict[str, str]:
    """Environment of ``side``'s runs: its worktree first on the import path, bytecode cached."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(side.tree), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env.setdefault("MPLBACKEND", "Agg")
    return env


#: Prints the files ``setup.py build_ext --inplace`` writes, one a line (run in a worktree).
EXTENSION_OUTPUTS = (
    "import setuptools\n"
    "from distutils.core import run_setup\n"
    "cmd = run_setup('setup.py', stop_after='init').get_command_obj('build_ext')\n"
    "cmd.inplace = 1\n"
    "cmd.ensure_finalized()\n"
    "print('\\n'.join(cmd.get_ext_fullpath(ext.name) for ext in cmd.extensions))\n"
)


def extension_outputs(tree: Path) -> list[Path]:
    """The compiled files ``tree``'s ``setup.py`` builds in place (absolute paths)."""
    done = subprocess.run([sys.executable, "-c", EXTENSION_OUTPUTS], cwd=tree,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"compare_commits: cannot read the C extensions of {tree}/setup.py:\n"
                         f"{done.stderr[-2000:]}")
    return [tree / line for line in done.stdout.split("\n") if line.strip()]


def build_extensions(side: Side) -> None:
    """Compile the C extensions of ``side``'s ``setup.py``, if it has one, in its worktree, as
    ``pip install -e`` would (a checkout's runs would otherwise fall back to the pure-Python
    paths and time those). An extension declared ``optional`` that fails to compile leaves
    ``build_ext`` with exit code 0, so success is judged by the files: every extension's
    compiled file must have been written by this build; otherwise the script stops and says
    which are missing, with the compiler's output."""
    if not (side.tree / "setup.py").exists():
        return
    expected = extension_outputs(side.tree)
    for path in expected:  # no stale file from an earlier build may pass for this one
        path.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=side.tree,
                          capture_output=True, text=True)
    missing = [str(path.relative_to(side.tree)) for path in expected if not path.is_file()]
    if done.returncode != 0 or missing:
        why = (f"exit code {done.returncode}" if done.returncode != 0
               else "not written: " + ", ".join(missing))
        raise SystemExit(f"compare_commits: {side.label}'s C extensions do not build ({why}):\n"
                         f"{(done.stderr + done.stdout)[-2000:]}")
    names = ", ".join(path.name for path in expected)
    print(f"  {side.label}: built its C extensions in its worktree ({names})", flush=True)


def check_import(side: Side) -> None:
    """Stop unless ``import marketsim`` in ``side``'s runs loads the worktree's own copy."""
    found = subprocess.run(
        [sys.executable, "-c", "import marketsim; print(marketsim.__file__)"],
        cwd=side.tree, env=side_env(side), capture_output=True, text=True,
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(side.tree.resolve()):
        raise SystemExit(f"compare_commits: {side.label} imports marketsim from {found!r}, "
                         f"not from its worktree {side.tree}")


def run_once(args: argparse.Namespace, side: Side,
             scratch: Path) -> tuple[float, float, float]:
    """Run the benchmark once on ``side``; return (wall seconds, CPU seconds, peak MiB): the
    CPU of the whole process tree, the peak resident memory of its largest process (Linux's
    ``ru_maxrss`` of the reaped children, what ``/usr/bin/time`` prints as maximum RSS)."""
    out = scratch / f"{side.label}-out"
    shutil.rmtree(out, ignore_errors=True)
    argv = command(args, side, out)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as stdout:
        proc = subprocess.Popen(argv, cwd=side.tree, env=side_env(side), stdout=stdout,
                                stderr=subprocess.PIPE)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        stdout.seek(0)
        printed = stdout.read().decode(errors="replace")
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"compare_commits: {side.label} ({side.commit[:10]}) failed with "
                         f"exit code {proc.returncode}: {' '.join(argv)}\n"
                         f"{err.decode(errors='replace')[-2000:]}")
    curves = out / "curves.csv"
    if curves.is_file():
        side.outputs.add(curves.read_text())
    if args.metric:
        wall = printed_metric(printed, args.metric, side)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def printed_metric(printed: str, metric: str, side: Side) -> float:
    """The ``seconds`` of the last stdout line ``{"metric": METRIC, "seconds": S}``."""
    for line in reversed(printed.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("metric") == metric:
            return float(record["seconds"])
    raise SystemExit(f"compare_commits: {side.label} ({side.commit[:10]}) printed no "
                     f'{{"metric": "{metric}", "seconds": ...}} line')


def quartiles(values: list[float]) -> tuple[float, float]:
    """First and third quartile (the values themselves when there are fewer than two)."""
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def bootstrap_median(values: list[float], seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of the median of ``values`` (seeded)."""
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(
        statistics.median(rng.choices(values, k=n)) for _ in range(BOOTSTRAP_RESAMPLES)
    )
    return medians[int(0.025 * BOOTSTRAP_RESAMPLES)], medians[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]


def summarise(old: Side, new: Side) -> dict:
    """Medians per side, ratio of the medians, and the spread of the per-pair ratios."""
    ratios = [o / n for o, n in zip(old.wall, new.wall, strict=True)]
    low, high = bootstrap_median(ratios)
    q1, q3 = quartiles(ratios)
    result = {
        side.label: {
            "commit": side.commit,
            "wall_s": side.wall,
            "cpu_s": side.cpu,
            "wall_median_s": statistics.median(side.wall),
            "cpu_median_s": statistics.median(side.cpu),
            "rss_mib": side.rss,
            "rss_median_mib": statistics.median(side.rss),
        }
        for side in (old, new)
    }
    result["ratio_of_medians"] = result["old"]["wall_median_s"] / result["new"]["wall_median_s"]
    result["cpu_ratio_of_medians"] = (result["old"]["cpu_median_s"]
                                      / result["new"]["cpu_median_s"])
    result["rss_ratio_of_medians"] = (result["old"]["rss_median_mib"]
                                      / result["new"]["rss_median_mib"])
    result["pair_ratios"] = ratios
    result["pair_ratio_median"] = statistics.median(ratios)
    result["pair_ratio_min_max"] = [min(ratios), max(ratios)]
    result["pair_ratio_iqr"] = [q1, q3]
    result["pair_ratio_median_ci95"] = [low, high]
    if old.outputs or new.outputs:
        result["same_curves"] = same_curves(old.outputs, new.outputs)
    return result


def same_curves(old: set[str], new: set[str]) -> bool:
    """Whether every run wrote the same ``curves.csv`` on the columns both commits write (a
    newer commit may add columns; the ones the old commit has must not change)."""
    tables = [list(csv.reader(io.StringIO(text))) for text in old | new]
    if not all(tables):
        return len(old | new) == 1
    shared = [name for name in tables[0][0] if all(name in t[0] for t in tables[1:])]
    projected = {
        tuple(tuple(row[t[0].index(name)] for name in shared) for row in t) for t in tables
    }
    return len(projected) == 1


def report(args: argparse.Namespace, old: Side, new: Side, res: dict) -> None:
    """Print the comparison as a few aligned lines."""
    print(f"benchmark: {args.bench}  args: {' '.join(args.bench_args) or '-'}  "
          f"{f'metric: {args.metric}  ' if args.metric else ''}"
          f"pairs: {args.repeats}  machine: {os.cpu_count()} CPUs, "
          f"load average at end {os.getloadavg()[0]:.2f}")
    timed = f"{args.metric} (printed)" if args.metric else "wall"
    digits = 4 if args.metric else 2
    for side in (old, new):
        r = res[side.label]
        print(f"  {side.label} {side.commit[:10]}  {timed} median "
              f"{r['wall_median_s']:8.{digits}f} s [{min(side.wall):.{digits}f}, "
              f"{max(side.wall):.{digits}f}]   CPU median {r['cpu_median_s']:8.2f} s "
              f"[{min(side.cpu):.2f}, {max(side.cpu):.2f}]   peak RSS median "
              f"{r['rss_median_mib']:.0f} MiB [{min(side.rss):.0f}, {max(side.rss):.0f}]   runs: "
              f"{', '.join(f'{w:.{digits}f}' for w in side.wall)}")
    lo, hi = res["pair_ratio_min_max"]
    q1, q3 = res["pair_ratio_iqr"]
    c_lo, c_hi = res["pair_ratio_median_ci95"]
    print(f"  old/new {timed}: ratio of medians {res['ratio_of_medians']:.3f}x; per pair median "
          f"{res['pair_ratio_median']:.3f}x, min-max {lo:.3f}-{hi:.3f}, IQR {q1:.3f}-{q3:.3f}, "
          f"bootstrap 95% {c_lo:.3f}-{c_hi:.3f}")
    print(f"  old/new CPU: ratio of medians {res['cpu_ratio_of_medians']:.3f}x; old/new peak RSS: "
          f"ratio of medians {res['rss_ratio_of_medians']:.3f}x")
    if "same_curves" in res:
        print("  curves.csv identical in every run (the columns both commits write): "
              f"{'yes' if res['same_curves'] else 'NO'}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    """Command-line arguments; everything after ``--`` goes to the benchmark."""
    argv = sys.argv[1:] if argv is None else argv
    bench_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, bench_args = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", help="the reference commit (any git revision)")
    p.add_argument("new", help="the commit compared with it")
    p.add_argument("--bench", choices=BENCHES, default="main")
    p.add_argument("--repeats", type=int, default=5, help="timed pairs (default 5)")
    p.add_argument("--scenario", default="scenarios/30_workers.toml",
                   help="main/unit: scenario path inside each checkout")
    p.add_argument("--arm", type=int, default=0, help="unit: index of the arm kept (default 0)")
    p.add_argument("--labels", type=Path, help="infer: the labels file")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs per side (default 1)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--metric", metavar="NAME",
                   help="compare the seconds the benchmark prints on a stdout line "
                   '{"metric": NAME, "seconds": S} instead of its wall time (e.g. '
                   "bench_dawid_skene.py --metric whole: the fit alone, without start-up)")
    args = p.parse_args(argv)
    args.bench_args = bench_args
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    if args.bench == "infer":
        if args.labels is None or not args.labels.is_file():
            p.error("--bench infer needs --labels FILE (an existing labels file)")
        args.labels = args.labels.resolve()
    if args.bench == "cmd" and not bench_args:
        p.error("--bench cmd needs the command after --")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    commits = [git("rev-parse", "--verify", f"{rev}^{{commit}}") for rev in (args.old, args.new)]
    scratch = Path(tempfile.mkdtemp(prefix="compare-commits-"))
    sides = [Side(label, sha, scratch / label) for label, sha in zip(("old", "new"), commits,
                                                                      strict=True)]
    try:
        for side in sides:
            git("worktree", "add", "--detach", str(side.tree), side.commit)
        for side in sides:
            build_extensions(side)
            check_import(side)
            for _ in range(args.warmup):
                run_once(args, side, scratch)
        for i in range(args.repeats):
            for side in sides if i % 2 == 0 else sides[::-1]:
                wall, cpu, rss = run_once(args, side, scratch)
                side.wall.append(wall)
                side.cpu.append(cpu)
                side.rss.append(rss)
                print(f"  pair {i + 1}/{args.repeats} {side.label}: {wall:.2f} s", flush=True)
    finally:
        for side in sides:
            if side.tree.exists():
                git("worktree", "remove", "--force", str(side.tree))
        git("worktree", "prune")
        shutil.rmtree(scratch, ignore_errors=True)
    res = summarise(*sides)
    report(args, *sides, res)
    if args.json:
        args.json.write_text(json.dumps({"bench": args.bench, "args": args.bench_args, **res},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
