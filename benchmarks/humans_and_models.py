"""The humans-and-models study's figures (issue #41) from a run of
`scenarios/humans_and_models.toml`: each arm's labels, money and error at the end of its
replicates, its money and simulated time to 5 % and 1 % error (mean of the replicates' own
figures with its 95 % Student-t interval, or how many replicates reached the target), and the
paired differences in money and time against the first arm (the humans alone at a preset) and
any arm named with ``--against``; with ``--calls``, each machine-first arm's model calls per
task (per model) and the share of tasks humans labelled, from its units replayed in-process
(the same worlds and streams as the run: the run folder does not record calls per model).

    python -m marketsim run scenarios/humans_and_models.toml --jobs 2 --out runs/hm
    python benchmarks/humans_and_models.py runs/hm --against cascade --calls
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from platform_presets import fmt, paired  # noqa: E402

from marketsim.market.inference import estimator_factory  # noqa: E402
from marketsim.market.market import Market  # noqa: E402
from marketsim.market.worker_models import draw_world  # noqa: E402
from marketsim.policies.registry import POLICIES, make_policy  # noqa: E402
from marketsim.scenario.parser import load_scenario  # noqa: E402
from marketsim.study.runner import market_setup  # noqa: E402
from marketsim.study.seeds import unit_streams, world_rng  # noqa: E402

TARGETS = ("0.05", "0.01")


def interval(value: dict, digits: int = 0, scale: float = 1.0) -> str:
    """A summary's mean [95 % interval]."""
    return (f"{scale * value['mean']:,.{digits}f} [{scale * value['low']:,.{digits}f}, "
            f"{scale * value['high']:,.{digits}f}]")


def ends(arm: dict) -> str:
    """Labels, money and error at the end of the replicates (mean [interval])."""
    return (f"{interval(arm['final_edges'])} | {interval(arm['final_money'])} | "
            f"{interval(arm['final_error'], 2, 100)} %")


def table(run: Path, references: list[str]) -> None:
    """Print the end, reach and paired tables (against each of ``references``) in the layout
    of docs/explanation/policies/humans-and-models.md."""
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
    for reference in references:
        print(f"\nPaired against {reference!r} (arm minus reference):\n")
        print("| arm | money to 5 % | time to 5 % | money to 1 % | time to 1 % |")
        print("|---|---|---|---|---|")
        ref = arms[reference]
        for name, arm in arms.items():
            if name == reference:
                continue
            cells = [paired(arm[f"{axis}_to_reach_replicates"][t],
                            ref[f"{axis}_to_reach_replicates"][t])
                     for t in TARGETS for axis in ("money", "time")]
            print(f"| {name} | " + " | ".join(cells) + " |")


def calls(run: Path) -> None:
    """Each machine-first arm's model calls per task, per model and in all (mean over the
    replicates, with their range), and the share of tasks that got a human label."""
    scenario = load_scenario(run / "scenario.toml")
    replicates = json.loads((run / "summary.json").read_text(encoding="utf-8"))["arms"]
    names = [m.name for m in scenario.machines]
    print("\n| arm | " + " | ".join(f"calls to {n} per task" for n in names)
          + " | calls per task | tasks with humans |")
    print("|---|" + "---:|" * (len(names) + 2))
    for index, arm in enumerate(scenario.arms):
        if not hasattr(POLICIES.get(arm.policy.name), "machines_problem"):
            continue  # the humans' arms make no call
        per_model, humans = [], []
        for replicate in replicates[arm.name]["replicate_ids"]:
            # a machine-first arm starts from no label (budget.initial = "none")
            world = draw_world(scenario.crowd, world_rng(scenario.seed, replicate),
                               arm.initial_graph(scenario.budget))
            market = Market(market_setup(scenario.for_arm(arm)), world,
                            make_policy(arm.policy.name, dict(arm.policy.options)),
                            estimator_factory(scenario.crowd, arm.inference),
                            unit_streams(scenario.seed, replicate, index), keep_graph=False)
            market.run()
            unit = json.loads((run / "units" / f"r{replicate:06d}_a{index:03d}.json")
                              .read_text(encoding="utf-8"))
            if unit["rows"][-1][0] != market.curve[-1].edges:  # not the run's unit
                raise SystemExit(f"{arm.name!r} replicate {replicate}: the replay bought "
                                 f"{market.curve[-1].edges} labels, the run "
                                 f"{unit['rows'][-1][0]}: run it with this code")
            assert market.machines is not None
            n_tasks = market.machines.asked.shape[1]
            per_model.append(market.machines.asked.sum(axis=1) / n_tasks)
            humans.append(np.unique(market.log.view().tasks).size / n_tasks)
        per = np.array(per_model)
        total = per.sum(axis=1)
        cells = [f"{per[:, m].mean():.2f}" for m in range(len(names))]
        print(f"| {arm.name} | " + " | ".join(cells) + f" | {total.mean():.2f} "
              f"[{total.min():.2f}-{total.max():.2f}] | {np.mean(humans):.0%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run folder of scenarios/humans_and_models.toml")
    parser.add_argument("--against", action="append", default=[], metavar="ARM",
                        help="also pair every arm against this one (repeatable)")
    parser.add_argument("--calls", action="store_true",
                        help="replay the machine-first arms' units: model calls per task")
    args = parser.parse_args()
    arms = json.loads((args.run / "summary.json").read_text(encoding="utf-8"))["arms"]
    unknown = [a for a in args.against if a not in arms]
    if unknown:
        parser.error(f"--against {unknown[0]!r} is not an arm of the run ({', '.join(arms)})")
    table(args.run, [next(iter(arms)), *args.against])
    if args.calls:
        calls(args.run)


if __name__ == "__main__":
    main()
