"""``marketsim list``: policies, inference methods, worker models, machine annotators and
bundled data sets."""

from __future__ import annotations

import argparse

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from marketsim.aggregation.registry import METHODS
from marketsim.errors import EXIT_OK, InputError
from marketsim.machines.registry import MACHINE_KINDS
from marketsim.plugins import is_import_path
from marketsim.policies.registry import POLICIES, facts_text, policy_class, summary
from marketsim.scenario.docs import allowed, default, type_name
from marketsim.scenario.inference_spec import settings_model
from marketsim.scenario.validation import suggest
from marketsim.workers.registry import WORKER_MODELS

DATASETS = {
    "bluebird": "Welinder et al. 2010: 108 binary bird images, 39 workers, 4,212 labels",
    "rte": "Snow et al. 2008: 800 textual-entailment pairs, 164 workers, 8,000 labels",
    "dog": "Zhou et al. 2012: 807 dog images, 4 breeds, 109 workers, 8,070 labels",
    "web": "Zhou et al. 2012: 2,665 query-URL pairs, 5 grades, 177 workers, 15,567 labels",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``list``."""
    p = sub.add_parser(
        "list",
        help="list policies, inference methods, worker models and reference data sets",
        description="List everything a scenario or the infer command can name; with --policy, "
        "one policy's options; with --method, one inference method's settings.",
    )
    p.add_argument("--policy", metavar="NAME", default=None,
                   help="show this policy's description and options (name, type, default, "
                   "allowed values, meaning): a built-in name or a package.module:Class "
                   "import path (imported: it runs that module's code)")
    p.add_argument("--method", metavar="NAME", default=None,
                   help="show this inference method's description and settings (the keys of "
                   "an arm's inference table besides method: name, type, default, allowed "
                   "values, meaning)")


def _options_table(title: str, column: str, model: type[BaseModel]) -> Table:
    """A model's fields as a table: name, type, default, allowed values, meaning."""
    table = Table(title=title, title_justify="left")
    for header in (column, "type", "default", "allowed", "meaning"):
        table.add_column(header, no_wrap=header == column)
    for key, field in model.model_fields.items():
        table.add_row(*(Text(cell.replace("`", "")) for cell in (
            key, type_name(field.annotation), default(field), allowed(field),
            field.description or "")))
    return table


def method_settings(name: str) -> int:
    """Print inference method ``name``'s description and the settings its ``Options`` model
    declares."""
    if name not in METHODS:
        raise InputError(f"--method: unknown inference method {name!r}; choose one of: "
                         f"{', '.join(METHODS)}{suggest(name, list(METHODS))}")
    cls, model = METHODS[name], settings_model(name)
    console = Console()
    kind = "continuous scores" if cls.output == "scores" else "class labels"
    console.print(Text(f"{name} (estimates from {kind}; Python: {cls.__module__}."
                       f"{cls.__qualname__})", style="bold cyan"))
    console.print(Text(cls.describe()))
    if not model.model_fields:
        console.print(Text("settings: none"))
    else:
        console.print(_options_table("settings", "setting", model))
    return EXIT_OK


def policy_options(name: str) -> int:
    """Print policy ``name``'s words (its class's ``describe``) and the options its class's
    ``Options`` model declares."""
    if name not in POLICIES and not is_import_path(name):
        raise InputError(f"--policy: unknown policy {name!r}; choose one of: "
                         f"{', '.join(POLICIES)}, or a 'package.module:Class' import path"
                         f"{suggest(name, list(POLICIES))}")
    cls = policy_class(name, allow_imports=True)  # named on the command line by the user
    console = Console()
    text = cls.describe()
    console.print(Text(f"{name} ({cls.__module__}.{cls.__qualname__})", style="bold cyan"))
    if text:
        console.print(Text(text))
    console.print(Text(f"markets: {facts_text(cls)}"))
    if not cls.Options.model_fields:
        console.print(Text("options: none"))
        return EXIT_OK
    console.print(_options_table("options", "option", cls.Options))
    return EXIT_OK


def execute(args: argparse.Namespace) -> int:
    """Print the five tables: each policy's first sentence (it may contain ``et al.``), each
    method's, worker model's and data set's one-line description, whole; with ``--policy``,
    that policy's options; with ``--method``, that method's settings."""
    if getattr(args, "policy", None) is not None:
        return policy_options(args.policy)
    if getattr(args, "method", None) is not None:
        return method_settings(args.method)
    console = Console()
    for title, rows in (
        ("policies", [(n, summary(n)) for n in POLICIES]),
        ("inference methods", [(n, c.describe()) for n, c in METHODS.items()]),
        ("worker models", [(n, cls.summary) for n, cls in WORKER_MODELS.items()]),
        ("machine annotators (the kind of each of a scenario's machines)",
         [(n, cls.summary) for n, cls in MACHINE_KINDS.items()]),
        ("reference data sets (infer --dataset; files from --data-dir, $MARKETSIM_DATA or "
         "../shared/data)",
         list(DATASETS.items())),
    ):
        table = Table(title=title, title_justify="left", show_header=False)
        table.add_column("name", style="bold cyan", no_wrap=True)
        table.add_column("description")
        for name, text in rows:  # Text: '[low, high]' is words, not console markup
            table.add_row(Text(name), Text(text))
        console.print(table)
    return EXIT_OK
