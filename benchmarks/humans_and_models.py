"""The humans-and-models study's figures (issue #41) from a run of
`scenarios/humans_and_models.toml`: each arm's labels, money and error at the end of its
replicates, its money and simulated time to 5 % and 1 % error (mean of the replicates' own
figures with its 95 % Student-t interval, or how many replicates reached the target), and the
paired differences in money and time against the first arm (the humans alone at a preset).

    python -m marketsim run scenarios/humans_and_models.toml --jobs 2 --out runs/hm
    python benchmarks/humans_and_models.py runs/hm
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from platform_presets import fmt, paired  # noqa: E402

TARGETS = ("0.05", "0.01")


def interval(value: dict, digits: int = 0, scale: float = 1.0) -> str:
    """A summary's mean [95 % interval]."""
    return (f"{scale * value['mean']:,.{digits}f} [{scale * value['low']:,.{digits}f}, "
            f"{scale * value['high']:,.{digits}f}]")


def ends(arm: dict) -> str:
    """Labels, money and error at the end of the replicates (mean [interval])."""
    return (f"{interval(arm['final_edges'])} | {interval(arm['final_money'])} | "
            f"{interval(arm['final_error'], 2, 100)} %")


def table(run: Path) -> None:
    """Print the end, reach and paired tables in the layout of
    docs/explanation/policies/humans-and-models.md."""
    arms = json.loads((run / "summary.json").read_text(encoding="utf-8"))["arms"]
    print("| arm | labels at the end | money at the end | error at the end |")
    print("|---|---:|---:|---:|")
    for name, arm in arms.items():
        print(f"| {name} | {ends(arm)} |")
    print("\n| arm | money to 5 % | time to 5 % | money to 1 % | time to 1 % |")
    print("|---|---:|---:|---:|---:|")
    for name, arm in arms.items():
        money, time = arm["money_to_reach_replicates"], arm["time_to_reach_replicates"]
        print(f"| {name} | " + " | ".join(f"{fmt(money[t])} | {fmt(time[t])}"
                                         for t in TARGETS) + " |")
    reference = next(iter(arms))
    print(f"\nPaired against {reference!r} (arm minus reference):\n")
    print("| arm | money to 5 % | time to 5 % | money to 1 % | time to 1 % |")
    print("|---|---|---|---|---|")
    ref = arms[reference]
    for name, arm in list(arms.items())[1:]:
        cells = [paired(arm[f"{axis}_to_reach_replicates"][t],
                        ref[f"{axis}_to_reach_replicates"][t])
                 for t in TARGETS for axis in ("money", "time")]
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run folder of scenarios/humans_and_models.toml")
    table(parser.parse_args().run)


if __name__ == "__main__":
    main()
