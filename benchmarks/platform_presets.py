"""The platform-presets study's figures (issue #29) from a run of `scenarios/platform_presets.toml`:
money and simulated time to 5 % and 1 % error per arm (mean of the replicates' own figures with
its 95 % Student-t interval), the best research arm's paired saving against the best preset, and
the error–money frontier plot (`docs/images/platform_presets_frontier.png`).

    python -m marketsim run scenarios/platform_presets.toml --jobs 2 --out runs/presets
    python benchmarks/platform_presets.py runs/presets \
        --plot docs/images/platform_presets_frontier.png

A preset stops spending once every task is closed, so its curve ends under budget: the plot
draws each arm's mean error against its mean money over the label counts every replicate
reached, and each preset's end (mean money and mean error at the end of its replicates) as a
marker.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from marketsim.record.curves import CurveRow, read_curves
from marketsim.record.stats import mean_interval

#: The policies that are platform presets (the others are research policies).
PRESETS = ("fixed-overlap", "dynamic-overlap", "until-agreement")
TARGETS = ("0.05", "0.01")


def arm_policies(run: Path) -> dict[str, str]:
    """Arm name -> policy name, from the run's `run.json` scenario."""
    data = json.loads((run / "run.json").read_text(encoding="utf-8"))
    out = {}
    for arm in data["document"]["arms"]:
        policy = arm["policy"]
        out[arm["name"]] = policy if isinstance(policy, str) else policy["name"]
    return out


def fmt(values: list[float | None], digits: int = 0) -> str:
    """Mean [95 % interval] of the replicates' values, or how many reached the target."""
    got = [v for v in values if v is not None]
    if len(got) < len(values):
        return f"{len(got)} of {len(values)} replicates"
    iv = mean_interval(got)
    return f"{iv.mean:,.{digits}f} [{iv.low:,.{digits}f}, {iv.high:,.{digits}f}]"


def paired(a: list[float | None], b: list[float | None]) -> str:
    """Paired relative saving of ``a`` against ``b`` (1 − a/b of the means) and the interval of
    the paired difference a − b, over replicates where both reached the target."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if len(pairs) < 2:
        return "—"
    diff = mean_interval([x - y for x, y in pairs])
    base = float(np.mean([y for _, y in pairs]))
    return (f"{diff.mean:+,.0f} [{diff.low:+,.0f}, {diff.high:+,.0f}] "
            f"({-diff.mean / base:.0%} less, {-diff.high / base:.0%} to {-diff.low / base:.0%};"
            f" {len(pairs)} replicates)")


def table(run: Path) -> None:
    """Print the money and time table and the research-against-preset savings."""
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    policies = arm_policies(run)
    arms = summary["arms"]
    print("| arm | money to 5 % | time to 5 % | money to 1 % | time to 1 % |")
    print("|---|---:|---:|---:|---:|")
    for name, arm in arms.items():
        money, time = arm["money_to_reach_replicates"], arm["time_to_reach_replicates"]
        print(f"| {name} | {fmt(money['0.05'])} | {fmt(time['0.05'])} | {fmt(money['0.01'])} | "
              f"{fmt(time['0.01'])} |")
    for target in TARGETS:
        def mean_money(name: str, target: str = target) -> float:
            values = arms[name]["money_to_reach_replicates"][target]
            return np.inf if None in values else float(np.mean(values))
        presets = [n for n in arms if policies[n] in PRESETS]
        research = [n for n in arms if policies[n] not in PRESETS]
        if not presets or not research:
            continue
        best_p, best_r = min(presets, key=mean_money), min(research, key=mean_money)
        print(f"\n{target}: best preset {best_p!r} ({mean_money(best_p):,.0f}), best research "
              f"arm {best_r!r} ({mean_money(best_r):,.0f})")
        for name in research:
            print(f"  {name} minus {best_p}: " + paired(
                arms[name]["money_to_reach_replicates"][target],
                arms[best_p]["money_to_reach_replicates"][target]))


def plot(run: Path, out: Path) -> None:
    """The error–money frontier: mean curves, and each preset's end as a marker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_curves(run / "curves.csv")
    policies = arm_policies(run)
    by_arm: dict[str, dict[int, list[CurveRow]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by_arm[r.arm][r.replicate].append(r)
    fig, ax = plt.subplots(figsize=(8, 5.2))
    for i, (arm, reps) in enumerate(by_arm.items()):
        color = f"C{i % 10}"
        common = set.intersection(*({r.edges for r in rs} for rs in reps.values()))
        edges = sorted(common)
        money = [np.mean([r.money for rs in reps.values() for r in rs if r.edges == e])
                 for e in edges]
        error = [np.mean([r.error_rate for rs in reps.values() for r in rs if r.edges == e])
                 for e in edges]
        preset = policies[arm] in PRESETS
        ax.plot(money, np.maximum(error, 2.5e-4), color=color, lw=1.4,
                ls="--" if preset else "-", label=arm)
        if preset:
            ends = [max(rs, key=lambda r: r.edges) for rs in reps.values()]
            ax.plot(np.mean([r.money for r in ends]),
                    max(float(np.mean([r.error_rate for r in ends])), 2.5e-4), "o",
                    color=color, ms=7, mec="black")
    for target in (0.05, 0.01):
        ax.axhline(target, color="grey", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_xlabel("money spent (price 1 per label + 20 % fee; gold included)")
    ax.set_ylabel("task error rate (mean of 10 replicates)")
    ax.set_title("Platform presets (dashed; ● = where the preset stops spending) "
                 "against research policies", fontsize=10)
    ax.legend(fontsize=7.5, ncol=2, loc="upper right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="run folder of scenarios/platform_presets.toml")
    parser.add_argument("--plot", type=Path, help="write the frontier plot here (PNG)")
    args = parser.parse_args()
    table(args.run)
    if args.plot:
        plot(args.run, args.plot)


if __name__ == "__main__":
    main()
