"""Command line: ``python -m marketsim [run] SCENARIO.toml`` and subcommands.

Every subcommand lives in its own module exposing ``add_parser(subparsers)`` and
``execute(args) -> int``. Bad input raises :class:`~marketsim.errors.InputError`, printed here
as one line with exit code 2; an ``OSError`` (disk full, permission denied) as one line naming the
file with exit code 74 (every file is written atomically, so earlier files are intact); Ctrl-C
exits 130.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Sequence

from marketsim._version import __version__
from marketsim.cli.interrupts import caused_by_interrupt, interrupts_deferred
from marketsim.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_IO_ERROR, InputError

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS = ("run", "infer", "calibrate", "validate", "list_cmd", "report")

EPILOG = """examples:
  python -m marketsim scenarios/30_workers.toml          run a study (same as 'run')
  python -m marketsim infer --dataset rte --method opt-ds --data-dir ../shared/data/zhang2014
  python -m marketsim infer labels.csv --truth truth.csv --method ds --json
"""


#: Subcommand name -> module name (``list`` is a builtin, so its module is ``list_cmd``).
COMMAND_MODULES = {name.removesuffix("_cmd"): name for name in COMMANDS}


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered, or with subcommand ``only``
    alone: a command then imports its own module and not the others' (``infer`` need not
    load the simulator), and ``--help`` of a subcommand is the same either way."""
    parser = _Parser(
        prog="marketsim",
        description="Simulate a crowdsourcing marketplace and aggregate crowd labels.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"marketsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS if only is None else (COMMAND_MODULES[only],):
        importlib.import_module(f"marketsim.cli.{name}").add_parser(sub)
    return parser


def one_line(text: str) -> str:
    r"""``text`` on one line: line breaks (e.g. from a file's content) shown as ``\n``."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the subcommand; return the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0].endswith(".toml"):
        args_list.insert(0, "run")
    if args_list == ["--version"]:  # answered before anything heavy is imported
        print(f"marketsim {__version__}")
        return 0
    try:
        # Building the parser imports numpy, scipy...: Ctrl-C there is an interrupt too,
        # raised once the imports are done.
        with interrupts_deferred():
            named = args_list[0] if args_list and args_list[0] in COMMAND_MODULES else None
            parser = build_parser(named)
            args = parser.parse_args(args_list)
            if getattr(args, "command", None):
                module = importlib.import_module(
                    f"marketsim.cli.{COMMAND_MODULES[args.command]}"
                )
        if argv is None:
            # The program (python -m marketsim, the console script): the objects of the
            # modules just imported live as long as the process, so they are moved out of the
            # cycle collector's sight, and its full collections (0.03 to 0.14 CPU s each,
            # several a run) stop scanning them again: 0.3 CPU s of a lesson's 7. Not when
            # called from Python (tests, a notebook), whose later objects would stay frozen.
            gc.freeze()
        if not getattr(args, "command", None):
            parser.print_help()
            return EXIT_BAD_INPUT
        return int(module.execute(args))
    except InputError as exc:
        sys.stderr.write(f"marketsim: error: {one_line(str(exc))}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("marketsim: interrupted\n")
        return EXIT_INTERRUPTED
    except OSError as exc:  # disk full, permission denied... while writing results
        where = f"{exc.filename}: " if exc.filename else ""
        reason = exc.strerror or str(exc)
        sys.stderr.write(f"marketsim: error: {one_line(where + reason)} (files written "
                         "earlier are intact)\n")
        return EXIT_IO_ERROR
    except Exception as exc:
        if not caused_by_interrupt(exc):
            raise
        # A library turned the Ctrl-C into its own error (matplotlib's class creation does):
        # still an interrupt, its message on the same line.
        sys.stderr.write(f"marketsim: interrupted ({one_line(f'{type(exc).__name__}: {exc}')})\n")
        return EXIT_INTERRUPTED
