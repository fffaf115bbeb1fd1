"""``--duplicates``, the option ``infer`` and ``calibrate`` share: what to do with a label file
that answers a (task, worker) pair more than once (ZenCrowd's files do), and the one warning
line that says how many answers were dropped."""

from __future__ import annotations

import argparse
import sys

from marketsim.data.assembly import DUPLICATES, check_duplicates


def add_duplicates_option(p: argparse.ArgumentParser) -> None:
    """Register ``--duplicates first|last|error`` (checked by
    :func:`marketsim.data.assembly.check_duplicates`, so a bad value is one line)."""
    p.add_argument("--duplicates", metavar="RULE", default="error",
                   help=f"a (task, worker) pair answered more than once: {' | '.join(DUPLICATES)}"
                   " (default error: refuse the file naming the line; first/last: keep that "
                   "answer of each pair and warn how many were dropped)")


def check_duplicates_option(args: argparse.Namespace) -> None:
    """Raise InputError (one line) unless ``--duplicates`` names a rule."""
    check_duplicates(args.duplicates)


def warn(note: str) -> None:
    """Print the loader's note of dropped answers as one ``marketsim: warning:`` line."""
    print(f"marketsim: warning: {note}", file=sys.stderr)
