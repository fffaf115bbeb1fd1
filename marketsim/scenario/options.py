"""Checking a policy's options as ``run`` will use them (name, type and range), before any
run folder exists.

The options are declared once, by the policy class's ``Options`` model (see
:mod:`marketsim.options`): a built-in policy's, or a ``package.module:Class`` policy's once
imported (``--allow-imports``). A plug-in class without an ``Options`` model is checked
against its constructor's signature.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from marketsim.errors import InputError
from marketsim.policies.registry import instantiate, options_model
from marketsim.scenario.validation import dotted, printable, suggest, validate


def check_options(cls: type, name: str, options: Mapping[str, Any], key: str,
                  source: str) -> None:
    """Check policy ``name``'s ``options`` (``key``: the policy table's dotted key) against its
    class's ``Options`` model: an unknown option with a did-you-mean, a bad value naming the
    key and what is allowed."""
    model = options_model(cls)
    if model is None:
        _check_signature(cls, name, options, key, source)
        return
    if not model.model_fields and options:
        first = next(iter(options))
        raise InputError(f"{key}.{dotted([first])} is not an option: policy {name!r} takes "
                         "none", source=source)
    try:
        validate(model, options, source, (key,))
    except InputError as exc:
        raise InputError(exc.detail.replace("is not a known key", "is not an option of "
                                            f"{name!r}"), source=source) from None


def _check_signature(cls: type, name: str, options: Mapping[str, Any], key: str,
                     source: str) -> None:
    """Options of an imported policy class without an ``Options`` model: names its
    constructor accepts."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return
    params = sig.parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    allowed = [n for n, p in params.items() if p.kind in (p.KEYWORD_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
    for opt in options:
        if opt not in allowed:
            raise InputError(f"{key}.{dotted([opt])} is not an option of {name!r} (allowed: "
                             f"{', '.join(allowed) or 'none'}){suggest(opt, allowed)}",
                             source=source)
    missing = [n for n, p in params.items() if p.default is p.empty
               and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n not in options]
    if missing:
        raise InputError(f"{key}.{missing[0]} is required by {name!r}", source=source)


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
