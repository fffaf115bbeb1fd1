"""Policy names → classes, and loading user policies by ``module:Class`` import path."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from marketsim.errors import InputError
from marketsim.options import OptionError
from marketsim.policies.base import AssignmentPolicy, WorkerAwarePolicy
from marketsim.policies.dynamic_overlap import DynamicOverlapPolicy
from marketsim.policies.explore_exploit import ExploreExploitPolicy
from marketsim.policies.fixed_overlap import FixedOverlapPolicy
from marketsim.policies.knowledge_gradient import KnowledgeGradientPolicy
from marketsim.policies.known_workers import KnownWorkersPolicy
from marketsim.policies.oracle_workers import OracleWorkersPolicy
from marketsim.policies.qasca import QascaPolicy
from marketsim.policies.random_forest import RandomForestPolicy
from marketsim.policies.simple import EntropyGreedyPolicy, OraclePolicy, UniformPolicy
from marketsim.policies.uncertainty import UncertaintyPolicy
from marketsim.policies.until_agreement import UntilAgreementPolicy

#: Built-in policies: name (each class's ``name``) -> class.
POLICIES: dict[str, type] = {cls.name: cls for cls in (
    UniformPolicy, RandomForestPolicy, EntropyGreedyPolicy, OraclePolicy,
    KnowledgeGradientPolicy, UncertaintyPolicy, QascaPolicy, ExploreExploitPolicy,
    OracleWorkersPolicy, KnownWorkersPolicy, FixedOverlapPolicy, DynamicOverlapPolicy,
    UntilAgreementPolicy)}


def markets(cls: type) -> tuple[str, ...]:
    """The markets a policy class ranks in, from its ``MARKETS`` attribute: ``"classes"``
    (class labels), ``"scores"`` (continuous scores); class markets when it says nothing."""
    return tuple(getattr(cls, "MARKETS", ("classes",)))


#: Built-in policies that work in a continuous-score market (they need no class posterior).
SCORE_POLICIES = tuple(n for n, c in POLICIES.items() if "scores" in markets(c))
#: Built-in policies that need continuous scores (posterior variance of the task means).
SCORE_ONLY_POLICIES = tuple(n for n, c in POLICIES.items() if "classes" not in markets(c))
#: Built-in policies defined for binary tasks only (class attribute ``BINARY_ONLY``).
BINARY_ONLY_POLICIES = tuple(n for n, c in POLICIES.items() if getattr(c, "BINARY_ONLY", False))


def options_model(cls: type) -> type[BaseModel] | None:
    """The policy class's options model (its ``Options`` attribute, a pydantic model), or
    ``None`` for a plug-in class that declares none (its constructor's signature is then all
    that is known of its options)."""
    model = getattr(cls, "Options", None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def market_problem(name: str, scores: bool, n_classes: int,
                   options: Mapping[str, Any] | None = None) -> str | None:
    """Why built-in policy ``name`` (with its scenario ``options``) cannot run in this market,
    or ``None`` if it can.

    Entropy-greedy, the oracle, random-forest and knowledge-gradient rank by class posteriors
    or class votes, which a continuous-score market does not have; ``uncertainty`` ranks by the
    posterior variance of continuous task means, which a class market does not have.
    """
    if scores and name not in SCORE_POLICIES:
        return ("needs class labels; a workers.model = 'gaussian-scores' market can use "
                f"{', '.join(SCORE_POLICIES)}")
    if not scores and name in SCORE_ONLY_POLICIES:
        return ("ranks by the variance of continuous task means and needs workers.model = "
                "'gaussian-scores'")
    if name in BINARY_ONLY_POLICIES and n_classes != 2:
        return f"supports binary tasks only (2 classes), got {n_classes} classes"
    binary_options = getattr(POLICIES.get(name), "BINARY_ONLY_OPTIONS", ())
    for option in binary_options:
        if n_classes != 2 and (options or {}).get(option) is True:
            return (f"supports {option} = true for binary tasks only (2 classes), got "
                    f"{n_classes} classes")
    return None


def is_import_path(name: str) -> bool:
    """``package.module:Class`` names a user policy."""
    return ":" in name


def policy_class(name: str, *, allow_imports: bool = False, source: str | None = None) -> type:
    """Resolve a policy name or import path to its class.

    Import paths run code from outside marketsim, so they need ``allow_imports``: a scenario
    received from someone else must never run code silently.
    """
    if name in POLICIES:
        return POLICIES[name]
    if not is_import_path(name):
        raise InputError(
            f"unknown policy {name!r}; choose one of: {', '.join(POLICIES)}, "
            "or a 'package.module:Class' import path",
            source=source,
        )
    if not allow_imports:
        raise InputError(
            f"policy {name!r} is an import path and would run outside code; "
            "pass --allow-imports if you trust this scenario",
            source=source,
        )
    module_name, _, attr = name.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot import policy {name!r}: {exc}", source=source) from None
    return cls


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


def describe(name: str) -> str:
    """The policy's one-paragraph description, for reports and ``list``."""
    cls = POLICIES[name]
    return getattr(cls, "DESCRIPTION", cls.__doc__ or "")


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
    """The first sentence of the policy's description, for ``marketsim list``."""
    return first_sentence(describe(name))
