"""Checking a policy's options as ``run`` will use them (name, type and range), before any
run folder exists.

The options are declared once, by the policy class's ``Options`` model (see
:mod:`marketsim.options`): a built-in policy's, or a ``package.module:Class`` policy's once
imported (``--allow-imports``; a subclass of ``Policy`` without options of its own takes none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marketsim.errors import InputError
from marketsim.policies.base import PolicyClass
from marketsim.policies.registry import instantiate
from marketsim.scenario.validation import dotted, printable, validate


def check_options(cls: PolicyClass, name: str, options: Mapping[str, Any], key: str,
                  source: str) -> None:
    """Check policy ``name``'s ``options`` (``key``: the policy table's dotted key) against its
    class's ``Options`` model: an unknown option with a did-you-mean, a bad value naming the
    key and what is allowed."""
    model = cls.Options
    if not model.model_fields and options:
        first = next(iter(options))
        raise InputError(f"{key}.{dotted([first])} is not an option: policy {name!r} takes "
                         "none", source=source)
    try:
        validate(model, options, source, (key,))
    except InputError as exc:
        raise InputError(exc.detail.replace("is not a known key", "is not an option of "
                                            f"{name!r}"), source=source) from None


def check_builds(cls: type, name: str, options: Mapping[str, Any], key: str,
                 source: str) -> None:
    """Build the policy once with its options, so a value its constructor refuses is a
    one-line error naming the policy table now, not a traceback once the run has started."""
    try:
        instantiate(cls, name, dict(options))
    except InputError as exc:
        if exc.source is not None:
            raise
        raise InputError(f"{key}: {exc.detail}", source=source) from None
    except (ValueError, TypeError) as exc:
        raise InputError(f"{key}: policy {name!r} refuses its options: "
                         f"{printable(str(exc))}", source=source) from None
    except (Exception, SystemExit):  # a policy that fails otherwise (raises,
        # calls sys.exit) is the market's policy guard's to report, with its traceback (exit 70)
        return
