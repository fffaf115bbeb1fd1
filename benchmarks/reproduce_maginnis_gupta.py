"""Reproduce Maginnis & Gupta's 30-worker figure and print our curve beside the paper's.

    python benchmarks/reproduce_maginnis_gupta.py                 # faithful, 100 replicates
    python benchmarks/reproduce_maginnis_gupta.py --replicates 10 --jobs 2
    python benchmarks/reproduce_maginnis_gupta.py \
        --scenario scenarios/paper/30_workers_improved.toml

Acceptance (issue 3): at 4,800 / 7,600 / 10,400 / 13,200 edges, both uniform arms within 15 %
(relative) of the paper, and the random-forest arm with prior at or below paper + 10 %.
The run folder (curves.csv, summary.json) is written like any ``marketsim run``.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from marketsim.data.datasets import data_root  # noqa: E402
from marketsim.scenario.parser import load_scenario  # noqa: E402
from marketsim.study.run_folder import write_run  # noqa: E402
from marketsim.study.runner import run_study  # noqa: E402

CHECKPOINTS = (4800, 7600, 10400, 13200)
SHARED = data_root() or ROOT.parent / "shared" / "data"  # $MARKETSIM_DATA or ../shared/data
PAPER_CSV = SHARED / "maginnis_gupta2015" / "30_workers.csv"


def read_paper(path: Path) -> dict[str, dict[int, float]]:
    """Paper columns (percent error) by edges."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    cols = [c for c in rows[0] if c != "edges"]
    return {c: {int(r["edges"]): float(r[c]) for r in rows} for c in cols}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenario", default=str(ROOT / "scenarios/paper/30_workers_faithful.toml")
    )
    parser.add_argument("--replicates", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=None, help="run folder (default reports/...)")
    args = parser.parse_args()

    scenario = load_scenario(args.scenario).with_overrides(replicates=args.replicates)
    paper = read_paper(PAPER_CSV)
    started = time.perf_counter()
    done = 0

    def progress(unit, finished, total):  # noqa: ANN001
        nonlocal done
        done = finished
        if finished % max(1, total // 20) == 0 or finished == total:
            el = time.perf_counter() - started
            print(f"  {finished}/{total} units, {el:.0f}s", file=sys.stderr, flush=True)

    results = run_study(scenario, jobs=args.jobs, on_unit=progress)
    seconds = time.perf_counter() - started
    out = Path(args.out) if args.out else ROOT / "reports" / scenario.slug / "reproduction"
    summary = write_run(out, scenario, results, started, complete=True)
    print(f"scenario: {scenario.name}  replicates: {scenario.replicates}  jobs: {args.jobs}  "
          f"wall time: {seconds:.0f}s  run folder: {out}")
    print(f"{'arm':<24}{'edges':>7}{'ours %':>9}{'paper %':>9}{'rel diff':>10}")
    verdicts = []
    for arm, s in summary["arms"].items():
        edges = np.asarray(s["edges"])
        err = 100 * np.asarray(s["error"])
        ci = 100 * np.asarray(s["error_ci95"])
        for e in (2000, *CHECKPOINTS, 20400, 30000):
            idx = np.nonzero(edges == e)[0]
            if not idx.size:
                continue
            ours = err[idx[0]]
            ref = paper.get(arm, {}).get(e)
            if ref is None:
                print(f"{arm:<24}{e:>7}{ours:>9.3f} ±{ci[idx[0]]:.3f}")
                continue
            rel = (ours - ref) / ref
            print(f"{arm:<24}{e:>7}{ours:>9.3f}{ref:>9.3f}{100 * rel:>9.1f}%  (±{ci[idx[0]]:.3f})")
            if e in CHECKPOINTS:
                if arm.startswith("random_"):
                    verdicts.append((arm, e, abs(rel) <= 0.15, "within 15%"))
                elif arm == "adaptive_prior":
                    verdicts.append((arm, e, ours <= 1.10 * ref, "<= paper + 10%"))
    if verdicts:
        print("acceptance:")
        for arm, e, ok, what in verdicts:
            print(f"  {arm:<20} at {e:>6}: {what:<16} {'PASS' if ok else 'FAIL'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
