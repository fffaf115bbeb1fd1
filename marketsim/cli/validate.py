"""``marketsim validate SCENARIO``: check a scenario file (every sweep point included) and print
a short summary, the resolved scenario as TOML (``--toml``) or as JSON (``--json``)."""

from __future__ import annotations

import argparse
import json

from marketsim.errors import EXIT_OK, InputError
from marketsim.report.formatting import clean_name
from marketsim.scenario.market_specs import BlockingSpec, GoldSpec
from marketsim.scenario.parser import load_scenario
from marketsim.scenario.specs import Scenario
from marketsim.scenario.sweep import expand
from marketsim.scenario.toml_out import dumps


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``validate``."""
    p = sub.add_parser(
        "validate",
        help="check a scenario file and summarise it (--toml: every resolved parameter)",
        description="Check SCENARIO without running it, every sweep point included, and print "
        "a short summary. Exit code 0 if valid, 2 with a one-line reason if not.",
        epilog="examples:\n  python -m marketsim validate scenarios/30_workers.toml\n"
        "  python -m marketsim validate scenarios/30_workers.toml --toml > resolved.toml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scenario", help="scenario TOML file")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the resolved scenario as JSON")
    out.add_argument("--toml", action="store_true",
                     help="print the resolved scenario (defaults included) as a scenario file "
                     "that run accepts")
    p.add_argument("--allow-imports", action="store_true",
                   help="also import plugin policies and check their options")
    p.add_argument("--data-dir", metavar="DIR",
                   help="folder of the replayed reference data set (as run --data-dir: it "
                   "beats $MARKETSIM_DATA, which beats the scenario's replay.data_dir)")


def _mechanics_text(gold: GoldSpec | None, blocking: BlockingSpec | None) -> str:
    """``gold: 10 questions at rate 0.1; blocking: after 3 gold answers below 0.7``."""
    parts = []
    if gold is not None:
        parts.append(f"gold: {gold.count} questions at rate {gold.rate:g}")
    if blocking is not None:
        parts.append(f"blocking: after {blocking.after} gold answers below "
                     f"{blocking.min_accuracy:g}")
    return "; ".join(parts)


def summary(scenario: Scenario, points: int) -> list[str]:
    """A few lines: name, seed, sizes, one line per arm, sweep size (names with their control
    characters as escapes: a name cannot add a line or colour the terminal)."""
    tk, wk, bg = scenario.tasks, scenario.workers, scenario.budget
    kind = "continuous scores" if scenario.worker_model.scores else f"{tk.classes} classes"
    lines = [
        f"name: {clean_name(scenario.name)}   seed: {scenario.seed}   "
        f"replicates: {scenario.replicates}",
        f"tasks: {tk.count} ({kind})   workers: {wk.count} ({wk.model})   "
        f"budget: {bg.edges} labels, initial {bg.initial}, batch {bg.batch}",
    ]
    if scenario.replay is not None:
        lines.append(f"replay: {scenario.replay.dataset or scenario.replay.labels}")
    rules = _mechanics_text(scenario.gold, scenario.blocking)
    if rules:
        lines.append(rules)
    for arm in scenario.arms:
        options = ", ".join(f"{k}={v!r}" for k, v in arm.policy.options.items())
        policy = f"{arm.policy.name}({options})" if options else arm.policy.name
        initial = f", initial {arm.initial}" if arm.initial else ""
        own = _mechanics_text(arm.gold, arm.blocking)
        lines.append(f"arm {clean_name(arm.name)}: policy {policy}, inference "
                     f"{arm.inference.method}{initial}{f'; {own}' if own else ''}")
    if scenario.sweep:
        keys = ", ".join(f"{k} ({len(v)})" for k, v in scenario.sweep)
        lines.append(f"sweep: {points} points over {keys}")
    return lines


def execute(args: argparse.Namespace) -> int:
    """Validate (every sweep point too) and print."""
    scenario = load_scenario(args.scenario, allow_imports=args.allow_imports,
                             data_dir=args.data_dir)
    if args.data_dir is not None and (scenario.replay is None or scenario.replay.dataset is None):
        raise InputError("--data-dir only applies to a replay of a reference data set "
                         "(replay.dataset)", source=scenario.source)
    points = expand(scenario)
    if args.json:
        print(json.dumps(scenario.to_dict(), default=str))
    elif args.toml:
        print(dumps(scenario.resolved_document()), end="")
    else:
        print(f"valid: {args.scenario}")
        print("\n".join(summary(scenario, len(points))))
    return EXIT_OK
