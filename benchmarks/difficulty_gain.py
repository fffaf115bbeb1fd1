"""Adaptive allocation's gain against the spread of task difficulty (issue #28), from a run of
`scenarios/difficulty.toml`: per grid point and target error, the labels uniform allocation
needs divided by the labels the adaptive arm needs, replicate by replicate (the arms share each
replicate's world), with the mean ratio's 95 % Student-t interval over the replicates where
both arms reached the target.

    python -m marketsim run scenarios/difficulty.toml --jobs 2 --out runs/difficulty
    python benchmarks/difficulty_gain.py runs/difficulty [--reference uniform]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.record.stats import mean_interval


def paired_ratios(reference: dict[str, Any], arm: dict[str, Any], target: str) -> np.ndarray:
    """Per replicate both arms reached ``target`` in: reference labels / arm labels."""
    ref = dict(zip(reference["replicate_ids"], reference["edges_to_reach_replicates"][target],
                   strict=True))
    mine = dict(zip(arm["replicate_ids"], arm["edges_to_reach_replicates"][target],
                    strict=True))
    pairs = [(ref[r], mine[r]) for r in sorted(set(ref) & set(mine))
             if ref[r] is not None and mine[r] is not None and mine[r] > 0]
    return np.array([a / b for a, b in pairs], dtype=np.float64)


def gain_rows(run: Path, reference: str = "uniform") -> list[dict[str, Any]]:
    """One row per grid point, adaptive arm and target: the swept values, the replicates both
    reached the target in (of all), the mean ratio and its interval."""
    sweep = json.loads((run / "sweep.json").read_text(encoding="utf-8"))
    keys, points = sweep["keys"], {}
    for row in sweep["rows"]:
        points.setdefault(row["point"], {k: row[k] for k in keys})
    rows = []
    for point, values in points.items():
        arms = json.loads((run / point / "summary.json").read_text(encoding="utf-8"))["arms"]
        ref = arms[reference]
        for name, arm in arms.items():
            if name == reference:
                continue
            for target in ref["edges_to_reach_replicates"]:
                ratios = paired_ratios(ref, arm, target)
                iv = mean_interval(ratios)
                rows.append({**values, "arm": name, "target": float(target),
                             "pairs": int(ratios.size), "replicates": len(ref["replicate_ids"]),
                             "ratio": iv.mean, "low": iv.low, "high": iv.high})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a sweep run folder of scenarios/difficulty.toml")
    parser.add_argument("--reference", default="uniform", help="the arm divided by the others")
    args = parser.parse_args()
    rows = gain_rows(args.run, args.reference)
    keys = [k for k in rows[0] if k not in ("arm", "target", "pairs", "replicates", "ratio",
                                              "low", "high")] if rows else []
    print(f"| {' | '.join(keys)} | arm | target | {args.reference} / arm, mean [95 % CI] | "
          "replicates |")
    print("|" + "---|" * (len(keys) + 4))
    for r in rows:
        cell = "—" if not r["pairs"] else (f"{r['ratio']:.2f}" if r["pairs"] < 2 else
                                          f"{r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}]")
        print(f"| {' | '.join(f'{r[k]:g}' for k in keys)} | {r['arm']} | {r['target']:.0%} | "
              f"{cell} | {r['pairs']}/{r['replicates']} |")


if __name__ == "__main__":
    main()
