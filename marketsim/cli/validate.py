"""``marketsim validate SCENARIO``: check a scenario file and print its resolved parameters."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.pretty import Pretty

from marketsim.errors import EXIT_OK
from marketsim.policies.registry import policy_class
from marketsim.scenario.parser import load_scenario


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``validate``."""
    p = sub.add_parser(
        "validate",
        help="check a scenario file and print the resolved parameters, defaults included",
        description="Check SCENARIO without running it; print every parameter, defaults "
        "included. Exit code 0 if valid, 2 with a one-line reason if not.",
        epilog="example: python -m marketsim validate scenarios/30_workers.toml --json",
    )
    p.add_argument("scenario", help="scenario TOML file")
    p.add_argument("--json", action="store_true", help="print the resolved scenario as JSON")
    p.add_argument("--allow-imports", action="store_true", help="also import plugin policies")


def execute(args: argparse.Namespace) -> int:
    """Validate and print."""
    scenario = load_scenario(args.scenario)
    if args.allow_imports:
        for arm in scenario.arms:
            policy_class(arm.policy.name, allow_imports=True, source=scenario.source)
    resolved = scenario.to_dict()
    if args.json:
        print(json.dumps(resolved, default=str))
    else:
        console = Console()
        console.print(f"[green]valid[/green]: {args.scenario}")
        console.print(Pretty(resolved, expand_all=True))
    return EXIT_OK
