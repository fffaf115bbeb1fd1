"""Print two finished runs side by side: mean error per arm at chosen budgets, and the difference.

    python benchmarks/compare_runs.py RUN_A RUN_B [--edges 4800 7600 10400 13200 30000]
    python benchmarks/compare_runs.py OLD_RUN NEW_RUN --paired

Arms are matched by name; arms present in one run only are printed alone. Errors are in percent
(class error) with the 95 % confidence half-width of each mean; "diff" is B - A in points.
Used for docs/explanation/reproductions/maginnis-gupta-2015.md (faithful vs improved
Maginnis-Gupta study).

``--paired`` is for two runs of the same scenario and seed by two versions of the code (a
change of floating-point or random-draw order): it matches the runs' ``curves.csv`` rows by
(arm, replicate, edges) and prints the mean paired difference B - A with its 95 % Student-t
interval at the chosen budgets, then, over every (arm, refresh) both runs recorded, how many
of those intervals exclude 0 (about 5 % would by chance alone) and how many replicates are
identical at every refresh.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats


def load_summary(run: Path) -> dict[str, Any]:
    """The run's ``summary.json``."""
    path = run / "summary.json"
    if not path.is_file():
        raise SystemExit(f"compare_runs: {path}: not found (is {run} a finished run folder?)")
    return json.loads(path.read_text())


def at(arm: dict[str, Any], edges: int) -> tuple[float, float] | None:
    """(mean error %, 95 % half-width %) of ``arm`` at ``edges``, or None if not recorded."""
    if edges not in arm["edges"]:
        return None
    i = arm["edges"].index(edges)
    new = "error" in arm  # summary.json record_version 2; version 1 said error_rate
    mean, ci = (arm["error"], arm["error_ci95"]) if new else (arm["error_rate"],
                                                             arm["error_rate_ci95"])
    return 100 * mean[i], 100 * ci[i]


def paired_errors(run_a: Path, run_b: Path) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """(arm, edges) -> [(error A, error B)] over the replicates both runs recorded."""
    def rows(run: Path) -> dict[tuple[str, int, int], float]:
        path = run / "curves.csv"
        if not path.is_file():
            raise SystemExit(f"compare_runs: {path}: not found (is {run} a finished run folder?)")
        with path.open(newline="") as f:
            return {(r["arm"], int(r["replicate"]), int(float(r["edges"]))): float(r["error_rate"])
                    for r in csv.DictReader(f)}

    a, b = rows(run_a), rows(run_b)
    pairs: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for key in sorted(a.keys() & b.keys(), key=lambda k: (k[0], k[2], k[1])):
        pairs[(key[0], key[2])].append((a[key], b[key]))
    return pairs


def paired_interval(diffs: np.ndarray) -> tuple[float, float]:
    """Mean of ``diffs`` and the half-width of its 95 % Student-t interval (0 if all equal)."""
    if diffs.size < 2:
        return float(diffs.mean()), float("nan")
    half = stats.t.ppf(0.975, diffs.size - 1) * diffs.std(ddof=1) / np.sqrt(diffs.size)
    return float(diffs.mean()), float(half)


def print_paired(run_a: Path, run_b: Path, edges: list[int]) -> None:
    """The ``--paired`` report (module docstring)."""
    pairs = paired_errors(run_a, run_b)
    if not pairs:
        raise SystemExit("compare_runs: the two runs share no (arm, replicate, edges) row")
    print(f"A: {run_a}\nB: {run_b}")
    print(f"{'arm':<24}{'edges':>7}{'A %':>9}{'B %':>9}{'B - A pt':>10}{'95 % interval':>20}"
          f"{'same':>9}")
    excluding, identical = 0, defaultdict(lambda: True)
    for (arm, e), values in pairs.items():
        err = 100 * np.array(values)
        diff = err[:, 1] - err[:, 0]
        mean, half = paired_interval(diff)
        excludes = bool(abs(mean) > half) if half > 0 else bool(mean != 0)
        excluding += excludes
        identical[arm] &= bool(np.all(diff == 0))
        if e in edges:
            print(f"{arm:<24}{e:>7}{err[:, 0].mean():>9.3f}{err[:, 1].mean():>9.3f}{mean:>+10.3f}"
                  f"   [{mean - half:+.3f}, {mean + half:+.3f}]{int((diff == 0).sum()):>5}/"
                  f"{diff.size}{'  excludes 0' if excludes else ''}")
    print(f"(arm, refresh) cells: {len(pairs)}; paired 95 % interval excludes 0 in {excluding} "
          f"(about {0.05 * len(pairs):.0f} would by chance alone)")
    print("arms identical in every replicate and refresh: "
          + (", ".join(arm for arm, ok in identical.items() if ok) or "none"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--edges", type=int, nargs="+", default=[4800, 7600, 10400, 13200, 30000])
    parser.add_argument("--paired", action="store_true",
                        help="paired differences of two runs of the same scenario and seed")
    args = parser.parse_args(argv)
    if args.paired:
        print_paired(args.run_a, args.run_b, [2000, *args.edges])
        return 0
    a, b = load_summary(args.run_a), load_summary(args.run_b)
    print(f"A: {a.get('scenario')} ({args.run_a})")
    print(f"B: {b.get('scenario')} ({args.run_b})")
    print(f"{'arm':<24}{'edges':>7}{'A %':>16}{'B %':>16}{'diff pt':>9}")
    names = list(a["arms"]) + [n for n in b["arms"] if n not in a["arms"]]
    for name in names:
        for e in args.edges:
            va = at(a["arms"][name], e) if name in a["arms"] else None
            vb = at(b["arms"][name], e) if name in b["arms"] else None
            if va is None and vb is None:
                continue
            sa = f"{va[0]:.3f} ±{va[1]:.3f}" if va else "-"
            sb = f"{vb[0]:.3f} ±{vb[1]:.3f}" if vb else "-"
            diff = f"{vb[0] - va[0]:+.3f}" if va and vb else ""
            print(f"{name:<24}{e:>7}{sa:>16}{sb:>16}{diff:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
