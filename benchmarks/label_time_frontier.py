"""The label–time frontier of worker-aware policies on worker_aware.toml (issue #30, point 5).

A requester pays in labels and in time: declining poor workers saves labels and costs the
waiting for better ones. This script pairs runs on worker_aware.toml's world (same seed, same
replicates, so replicate r is the same crowd, tasks and initial graph in all):

    python -m marketsim run scenarios/frontier/reference.toml --jobs 2 --out runs/frontier_ref
    python -m marketsim run scenarios/frontier/explore_exploit.toml --jobs 2 --out runs/frontier_ee
    python -m marketsim run scenarios/frontier/known_workers.toml --jobs 2 --out runs/frontier_kw
    python -m marketsim run scenarios/frontier/route.toml --jobs 2 --out runs/frontier_route
    python benchmarks/label_floor.py scenarios/frontier/known_workers.toml --top \
        --json runs/floor.json
    python benchmarks/label_time_frontier.py runs/frontier_ref runs/frontier_ee runs/frontier_kw \
        --plot docs/images/label_time_frontier.png --floor runs/floor.json

and prints, for every arm, the labels and the simulated time to 1 % error (each replicate's own
figure: the labels after which its error stays at or below 1 %; mean [95 % Student-t interval]),
the paired differences against entropy-greedy (labels; time as a ratio of means with the
interval of the paired difference), and whether the arm is inside both bounds of the issue:
labels within 10 % of oracle-workers' and time within 1.5 times entropy-greedy's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from marketsim.record.stats import mean_interval

TARGET = "0.01"
REFERENCE, BOUND_ARM = "entropy-greedy", "oracle-workers"
LABEL_SLACK, TIME_SLACK = 1.10, 1.5


def arms_of(run: Path) -> dict[str, tuple[list[float | None], list[float | None]]]:
    """Arm -> (labels to 1 % per replicate, simulated time to 1 % per replicate)."""
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return {name: (arm["edges_to_reach_replicates"][TARGET],
                   arm["time_to_reach_replicates"][TARGET])
            for name, arm in summary["arms"].items()}


def interval(values: list[float | None]) -> tuple[float, float, float] | None:
    """(mean, low, high) over the replicates, or None unless every replicate reached 1 %."""
    if not values or any(v is None for v in values):
        return None
    iv = mean_interval([float(v) for v in values if v is not None])
    return iv.mean, iv.low, iv.high


def paired(a: list[float | None], b: list[float | None]) -> tuple[float, float, float, int]:
    """Mean [interval] of a − b over the replicates both reached, and how many those are."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    iv = mean_interval([x - y for x, y in pairs])
    return iv.mean, iv.low, iv.high, len(pairs)


def table(arms: dict[str, tuple[list[float | None], list[float | None]]]) -> list[dict]:
    """Print the frontier table; return its rows for the plot."""
    ref_labels, ref_time = arms[REFERENCE]
    got = [t for t in ref_time if t is not None]
    time_bound = TIME_SLACK * float(np.mean(got))
    bound_labels = interval(arms[BOUND_ARM][0])
    label_bound = LABEL_SLACK * bound_labels[0] if bound_labels else float("nan")
    print(f"bounds: labels <= {label_bound:,.0f} (1.1 x {BOUND_ARM}), simulated time <= "
          f"{time_bound:,.0f} (1.5 x {REFERENCE}; {len(got)} of {len(ref_time)} replicates "
          "reached 1 %)\n")
    print("| arm | labels to 1 % | time to 1 % | labels − entropy-greedy | "
          "time ÷ entropy-greedy | inside both |")
    print("|---|---:|---:|---:|---:|:-:|")
    rows = []
    for name, (labels, time) in arms.items():
        li, ti = interval(labels), interval(time)
        n_reached = sum(v is not None for v in labels)
        lab = (f"{li[0]:,.0f} [{li[1]:,.0f}, {li[2]:,.0f}]" if li
               else f"{n_reached} of {len(labels)} replicates")
        tim = f"{ti[0]:,.0f} [{ti[1]:,.0f}, {ti[2]:,.0f}]" if ti else "—"
        if name == REFERENCE:
            dl = dt = "—"
        else:
            d = paired(labels, ref_labels)
            dl = f"{d[0]:+,.0f} [{d[1]:+,.0f}, {d[2]:+,.0f}] ({d[3]})"
            t = paired(time, ref_time)
            base = float(np.mean([y for x, y in zip(time, ref_time, strict=True)
                                  if x is not None and y is not None]))
            dt = f"{1 + t[0] / base:.2f} [{1 + t[1] / base:.2f}, {1 + t[2] / base:.2f}]"
        inside = bool(li and ti and li[0] <= label_bound and ti[0] <= time_bound)
        print(f"| {name} | {lab} | {tim} | {dl} | {dt} | {'yes' if inside else 'no'} |")
        rows.append({"arm": name, "labels": li, "time": ti})
    return rows


def plot(rows: list[dict], label_bound: float, time_bound: float, out: Path,
         floor: list[dict] | None = None, routing: list[dict] | None = None) -> None:
    """Labels against time to 1 %, each arm with its intervals (squares: not realisable;
    diamonds: explore-exploit's route option), the box of both bounds and, if given, the
    optimal-stopping floor of benchmarks/label_floor.py and the floor of routing within a mean
    time of benchmarks/routing_floor.py."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10.5, 5.6))
    colours = plt.get_cmap("tab20")
    for i, row in enumerate(r for r in rows if r["labels"] and r["time"]):
        (lm, ll, lh), (tm, tl, th) = row["labels"], row["time"]
        bound = row["arm"].startswith(("oracle", "known"))
        marker = "s" if bound else "D" if row["arm"].startswith("route") else "o"
        ax.errorbar(tm, lm, xerr=[[tm - tl], [th - tm]], yerr=[[lm - ll], [lh - lm]],
                    fmt=marker, color=colours(i % 20), capsize=3,
                    label=row["arm"] + (" (not realisable)" if bound else ""))
    if floor:
        pts = sorted((f["time"], f["labels"], f["cut"]) for f in floor)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "k--", lw=1,
                label="floor: known workers, optimal stopping")
        for t, lab, cut in pts:
            ax.annotate(f"{cut:g}", (t, lab), fontsize=6.5, xytext=(3, -9),
                        textcoords="offset points")
    if routing:
        pts = sorted((f["time"], f["labels"]) for f in routing if f["labels"] < 1e6)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "k-", lw=1.5,
                label="floor: any policy, known workers, mean time at most x")
    ax.axhline(label_bound, color="grey", ls=":", lw=1)
    ax.axvline(time_bound, color="grey", ls=":", lw=1)
    ax.fill_between([0, time_bound], 0, label_bound, color="green", alpha=0.08,
                    label="inside both bounds")
    ax.set_xscale("log")
    ax.set_xlabel("simulated time to 1 % error (arrivals at rate 1; mean, 95 % interval)")
    ax.set_ylabel("labels to 1 % error (gold included; mean, 95 % interval)")
    ax.set_title("Label–time frontier on worker_aware.toml (20 replicates)", fontsize=10)
    low = min([label_bound] + [r["labels"][1] for r in rows if r["labels"]])
    ax.set_ylim(bottom=0.9 * low)
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print(f"\nwrote {out}")


def main() -> None:
    """Pair the runs, print the table, draw the frontier."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (the reference first)")
    parser.add_argument("--plot", type=Path, help="write the frontier figure here")
    parser.add_argument("--floor", type=Path,
                        help="JSON of benchmarks/label_floor.py --json: draw the floor")
    parser.add_argument("--routing-floor", type=Path,
                        help="JSON of benchmarks/routing_floor.py --json: draw its curve")
    args = parser.parse_args()
    arms: dict[str, tuple[list[float | None], list[float | None]]] = {}
    for run in args.runs:
        arms.update(arms_of(run))
    rows = table(arms)
    if args.plot:
        ref_time = [t for t in arms[REFERENCE][1] if t is not None]
        bound_labels = interval(arms[BOUND_ARM][0])
        assert bound_labels is not None, f"{BOUND_ARM} must reach 1 % in every replicate"
        floor = json.loads(args.floor.read_text(encoding="utf-8")) if args.floor else None
        routing = (json.loads(args.routing_floor.read_text(encoding="utf-8"))["curve"]
                   if args.routing_floor else None)
        plot(rows, LABEL_SLACK * bound_labels[0], TIME_SLACK * float(np.mean(ref_time)),
             args.plot, floor, routing)


if __name__ == "__main__":
    main()
