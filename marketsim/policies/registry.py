"""Policy names → classes, discovered; loading user policies by ``module:Class`` import path;
checking a policy class's facts.

Adding a policy is one module in ``marketsim/policies/`` (and its test): the registry imports
every module of the package, in sorted order, and collects each subclass of
:class:`~marketsim.policies.base.Policy` defined there that sets ``name``. Validation,
``marketsim list``, the docs' option tables, the JSON Schema and ``report.md`` read
:data:`POLICIES`.
"""

from __future__ import annotations

import math
import re
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from marketsim.errors import InputError
from marketsim.options import OptionError, Options
from marketsim.plugins import declared_classes, import_class, is_import_path
from marketsim.policies.base import (
    AssignmentPolicy,
    Policy,
    PolicyClass,
    WorkerAwarePolicy,
    is_worker_aware,
)


def _discover() -> dict[str, PolicyClass]:
    """Every policy class of the package's modules (sorted module names, ``_private`` ones and
    this one skipped), by name, sorted by name."""
    found: dict[str, PolicyClass] = {}
    for cls in declared_classes(__package__, Policy, "name"):
        if cls.name in found:
            raise RuntimeError(f"two policies are named {cls.name!r}: "
                               f"{found[cls.name].__qualname__} and {cls.__qualname__}")
        found[cls.name] = cls
    return dict(sorted(found.items()))


#: Built-in policies: name (each class's ``name``) -> class, sorted by name.
POLICIES: dict[str, PolicyClass] = _discover()

#: Built-in policies that work in a continuous-score market (they need no class posterior).
SCORE_POLICIES = tuple(n for n, c in POLICIES.items() if "scores" in c.markets)
#: Built-in policies that need continuous scores (posterior variance of the task means).
SCORE_ONLY_POLICIES = tuple(n for n, c in POLICIES.items() if "classes" not in c.markets)
#: Built-in policies defined for binary tasks only (fact ``binary_only``).
BINARY_ONLY_POLICIES = tuple(n for n, c in POLICIES.items() if c.binary_only)


#: The facts a policy class declares: :class:`Policy`'s class variables (``name`` first).
FACTS: tuple[str, ...] = tuple(Policy.__annotations__)
#: Option facts: each names options of the class's ``Options`` model.
_OPTION_FACTS = ("binary_only_options", "per_task_options", "tier_options")


@cache
def _fact_types() -> dict[str, TypeAdapter[Any]]:
    """Each fact's declared type (``ClassVar[T]``'s ``T``), as a strict validator."""
    hints = typing.get_type_hints(Policy, include_extras=True)
    return {n: TypeAdapter(typing.get_args(hints[n])[0]) for n in FACTS}


def fact_problem(cls: type) -> str | None:
    """What is wrong with ``cls``'s facts, options model and methods, on one line, or
    ``None``: a subclass of :class:`Policy` has every fact (its defaults); any other class
    must declare each one itself, with the declared type. Option facts name options of its
    ``Options`` model, and it has ``describe``, ``bind`` and ``rank`` or ``assign``."""
    hint = "subclass marketsim.policies.base.Policy for the defaults"
    for fact in (*FACTS, "Options"):
        if not hasattr(cls, fact):
            return f"does not declare the fact {fact!r} ({hint})"
        value = getattr(cls, fact)
        if fact == "Options":
            if not (isinstance(value, type) and issubclass(value, BaseModel)):
                return f"Options = {value!r} is not a pydantic model of its options"
            continue
        try:
            _fact_types()[fact].validate_python(value, strict=True)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            return f"{fact} = {value!r}: {first['msg'].lower()}"
    policy = typing.cast(PolicyClass, cls)  # every fact present, with its declared type
    if not policy.name:
        return "name is empty"
    if not policy.markets:
        return "markets is empty: it must serve 'classes', 'scores' or both"
    for fact in _OPTION_FACTS:
        unknown = [o for o in getattr(policy, fact) if o not in policy.Options.model_fields]
        if unknown:
            return f"{fact} names {unknown[0]!r}, which is not one of its options"
    for method in ("describe", "bind"):
        if not (hasattr(cls, method) and callable(getattr(cls, method))):
            return f"has no {method}() ({hint})"
    if not (hasattr(cls, "rank") or is_worker_aware(cls)):
        return "has neither rank(state, rng) nor assign(worker, state, rng)"
    if not math.isfinite(policy.unit_cost):
        return f"unit_cost = {policy.unit_cost!r} is not a finite number"
    return None


def check_facts(cls: type, label: str, *, source: str | None = None) -> PolicyClass:
    """``cls`` as a policy class, or a one-line :class:`InputError` naming ``label`` and what
    is wrong (:func:`fact_problem`)."""
    problem = fact_problem(cls)
    if problem is not None:
        raise InputError(f"{label}: {problem}", source=source)
    return typing.cast(PolicyClass, cls)


def market_problem(cls: PolicyClass, scores: bool, n_classes: int,
                   options: Mapping[str, Any] | None = None) -> str | None:
    """Why policy class ``cls`` (with its scenario ``options``) cannot run in this market, or
    ``None`` if it can, from its facts ``markets``, ``binary_only`` and
    ``binary_only_options``.

    Entropy-greedy, the oracle, random-forest and knowledge-gradient rank by class posteriors
    or class votes, which a continuous-score market does not have; ``uncertainty`` ranks by the
    posterior variance of continuous task means, which a class market does not have.
    """
    if scores and "scores" not in cls.markets:
        return ("needs class labels; a workers.model = 'gaussian-scores' market can use "
                f"{', '.join(SCORE_POLICIES)}")
    if not scores and "classes" not in cls.markets:
        return ("ranks by the variance of continuous task means and needs workers.model = "
                "'gaussian-scores'")
    if cls.binary_only and n_classes != 2:
        return f"supports binary tasks only (2 classes), got {n_classes} classes"
    for option in cls.binary_only_options:
        if n_classes != 2 and (options or {}).get(option) is True:
            return (f"supports {option} = true for binary tasks only (2 classes), got "
                    f"{n_classes} classes")
    return None


def facts_text(cls: PolicyClass) -> str:
    """The policy's market facts in words, for ``list --policy`` and the generated docs:
    ``class labels and continuous scores; binary tasks only; worker-aware; ...``."""
    kinds = {"classes": "class labels", "scores": "continuous scores"}
    parts = [" and ".join(kinds[m] for m in cls.markets)]
    parts += ["binary tasks only"] * cls.binary_only
    parts += [f"{o} = true needs binary tasks" for o in cls.binary_only_options]
    parts += ["worker-aware (assign per arriving worker)"] * is_worker_aware(cls)
    parts += ["NOT realisable: sees the true classes"] * cls.needs_truth
    parts += ["NOT realisable: sees the workers' true matrices"] * (
        cls.needs_true_workers and not cls.needs_truth)
    return "; ".join(parts)


def policy_class(name: str, *, allow_imports: bool = False, source: str | None = None
                 ) -> PolicyClass:
    """Resolve a policy name or import path to its class (an imported class's facts checked).

    Import paths run code from outside marketsim, so they need ``allow_imports``
    (:func:`marketsim.plugins.import_class`): a scenario received from someone else must never
    run code silently.
    """
    if name in POLICIES:
        return POLICIES[name]
    if not is_import_path(name):
        raise InputError(
            f"unknown policy {name!r}; choose one of: {', '.join(POLICIES)}, "
            "or a 'package.module:Class' import path",
            source=source,
        )
    cls = import_class(name, "policy", allow_imports=allow_imports, source=source)
    return check_facts(cls, f"policy {name!r}", source=source)


def make_policy(
    name: str, options: dict[str, Any], *, allow_imports: bool = False, source: str | None = None
) -> AssignmentPolicy:
    """Instantiate a policy with its scenario options, checking the protocol."""
    return instantiate(policy_class(name, allow_imports=allow_imports, source=source), name,
                       options, source=source)


def instantiate(
    cls: type, name: str, options: dict[str, Any], *, source: str | None = None
) -> AssignmentPolicy:
    """``cls(**options)``, checking the protocol (``name`` is how the scenario calls it)."""
    try:
        policy = cls(**options)
    except TypeError as exc:
        raise InputError(f"bad options for policy {name!r}: {exc}", source=source) from None
    except OptionError as exc:
        raise InputError(f"bad options for policy {name!r}: {exc.problem}",
                         source=source) from None
    if not isinstance(policy, AssignmentPolicy | WorkerAwarePolicy):
        raise InputError(
            f"policy {name!r} does not implement bind(info) and rank(state, rng) "
            "(or assign(worker, state, rng))", source=source
        )
    return policy  # type: ignore[return-value]


def option_values(cls: PolicyClass, options: Mapping[str, Any]) -> Options | None:
    """``options`` (a scenario's or a record's) as ``cls``'s validated ``Options``, defaults
    filled in; ``None`` when they are not valid (a record from another version)."""
    try:
        return cls.Options.model_validate(dict(options))
    except ValidationError:
        return None


#: Words that end in a period without ending a sentence (``Zheng et al. 2015``, ``e.g. a``).
ABBREVIATIONS = ("al", "e.g", "i.e", "etc", "cf", "vs", "approx", "resp", "Alg", "Fig",
                 "Eq", "Sec", "Ch", "No", "Dr", "Mr", "Ms", "St")
_SENTENCE_END = re.compile(r"(?<=[.!?])[)\]\"']*\s+(?=[A-Z0-9`\"'(\[])")


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (whitespace collapsed): up to the first ``.``, ``!`` or
    ``?`` followed by a space and a capital, a digit or an opening mark, unless the word
    before the period is an abbreviation (:data:`ABBREVIATIONS`: ``et al.``, ``e.g.``) or
    an initial (``J. Smith``); the whole text when it is one sentence."""
    text = " ".join(text.split())
    for match in _SENTENCE_END.finditer(text):
        head = text[: match.start()].rstrip(")]\"'")
        word = head[:-1].rsplit(" ", 1)[-1].lstrip("([\"'")
        if head.endswith(".") and (word in ABBREVIATIONS or len(word) == 1 and word.isalpha()):
            continue
        return text[: match.start()]
    return text


def summary(name: str) -> str:
    """The first sentence of built-in policy ``name``'s words, for ``marketsim list``."""
    return first_sentence(POLICIES[name].describe())

