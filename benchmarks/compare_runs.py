"""Print two finished runs side by side: mean error per arm at chosen budgets, and the difference.

    python benchmarks/compare_runs.py RUN_A RUN_B [--edges 4800 7600 10400 13200 30000]

Arms are matched by name; arms present in one run only are printed alone. Errors are in percent
(class error) with the 95 % confidence half-width of each mean; "diff" is B - A in points.
Used for docs/reproductions.md (faithful vs improved Maginnis-Gupta study).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


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
    return 100 * arm["error_rate"][i], 100 * arm["error_rate_ci95"][i]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--edges", type=int, nargs="+", default=[4800, 7600, 10400, 13200, 30000])
    args = parser.parse_args(argv)
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
