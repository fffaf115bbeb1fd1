"""The options each built-in policy takes, declared once, so ``validate`` checks them as
``run`` will use them (name, type and range), before any run folder exists.

``tests/test_schema.py`` checks that every built-in policy has a schema here whose keys and
defaults are exactly its constructor's keyword arguments. A ``package.module:Class`` policy is
checked against its class's signature once imported (``--allow-imports``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import model_validator

from marketsim.errors import InputError
from marketsim.policies.registry import instantiate
from marketsim.scenario.schema import F, Table
from marketsim.scenario.validation import dotted, printable, suggest, validate


class NoOptions(Table):
    """The policy takes no options."""


class RandomForestOptions(Table):
    """``random-forest`` (Chen, Lin & Zhou's forest of bootstrap forests)."""

    ensemble_size: int = F(10, "forests, each fitted on one posterior sample of the labels",
                           ge=1)
    n_trees: int = F(10, "trees per forest", ge=1)
    max_depth: int = F(10, "depth of each tree", ge=1)
    sample_fraction: float = F(0.2, "bootstrap sample size as a fraction of the tasks", gt=0,
                               le=1)
    max_features: int = F(10, "features tried per split", ge=1)
    sim_max_iter: int = F(40, "EM iterations of each simulated inference", ge=1)
    criterion: Literal["entropy", "gini", "log_loss"] = F("entropy", "split criterion")
    n_jobs: int = F(1, "processes fitting the forests (-1: all cores)", ge=-1)

    @model_validator(mode="after")
    def _jobs(self) -> RandomForestOptions:
        if self.n_jobs == 0:
            raise ValueError("n_jobs must be -1 or >= 1")
        return self


class KnowledgeGradientOptions(Table):
    """``knowledge-gradient`` (Chen, Lin & Zhou's Opt-KG, binary tasks)."""

    a0: float = F(1.0, "Beta prior of each task's class-1 probability: a0", gt=0)
    b0: float = F(1.0, "Beta prior: b0", gt=0)
    optimistic: bool = F(True, "optimistic KG (max of the two outcomes) rather than expected")


class QascaOptions(Table):
    """``qasca`` (Zheng et al.'s quality-aware assignment)."""

    min_gain: float = F(0.0, "decline a worker whose best expected accuracy gain is below this "
                        "(0: never decline)", ge=0, le=1)
    min_tier: int = F(0, "decline workers whose qualification tier ([workers.tiers]) is below "
                      "this, as a platform's qualification requirement does, unless no "
                      "qualified worker may still work (0: everyone)", ge=0, le=100)


class ExploreExploitOptions(Table):
    """``explore-exploit`` (after Ho, Jabbari & Vaughan)."""

    explore: int = F(3, "gold questions for each new worker (label evidence without [gold])",
                     ge=0)
    threshold: float = F(0.55, "decline workers whose information per label per unit of price "
                         "is below this (0: never decline)", ge=0)
    prior_correct: float = F(1.0, "Beta prior of each worker's accuracy: correct answers", gt=0)
    prior_wrong: float = F(1.0, "Beta prior: wrong answers", gt=0)
    bound: Literal["mean", "upper", "lower"] = F(
        "mean", "the information judged against threshold: at the posterior-mean accuracy, "
        "or its largest (upper: decline only proven poor workers) or smallest (lower: accept "
        "only proven good ones) value over the central `confidence` credible interval")
    evidence: Literal["posterior", "leave-one-out"] = F(
        "posterior", "task-label evidence of a worker's accuracy: expected correct labels under "
        "the current posterior, or the likelihood of each label under its task's posterior "
        "without that label (leave-one-out, matched to a Beta)")
    confidence: float = F(0.9, "credible level of the interval used by bound = upper or lower",
                          gt=0, lt=1)
    prior: Literal["beta", "scenario"] = F(
        "scenario", "prior of each worker's accuracy: Beta(prior_correct, prior_wrong), or the "
        "scenario's ability distribution low + (1 - low) Beta(alpha, beta) ([workers.ability]; "
        "posterior on a grid of 1,000 accuracies)")
    exhausted: bool = F(
        True, "give a worker below the threshold a task that every open worker above it has "
        "already labelled, when their answer can change the task's decision (else decline)")


class OracleWorkersOptions(Table):
    """``oracle-workers`` (teaching bound)."""

    ability_cut: float = F(0.8, "decline workers whose true accuracy is below this", ge=0,
                           le=1)


#: Built-in policy name -> its option schema.
POLICY_OPTIONS: dict[str, type[Table]] = {
    "uniform": NoOptions,
    "random-forest": RandomForestOptions,
    "entropy-greedy": NoOptions,
    "oracle": NoOptions,
    "knowledge-gradient": KnowledgeGradientOptions,
    "uncertainty": NoOptions,
    "qasca": QascaOptions,
    "explore-exploit": ExploreExploitOptions,
    "oracle-workers": OracleWorkersOptions,
}


def check_builtin_options(name: str, options: Mapping[str, Any], key: str,
                          source: str) -> None:
    """Check built-in policy ``name``'s ``options`` (``key``: the policy table's dotted key)."""
    model = POLICY_OPTIONS[name]
    if model is NoOptions and options:
        first = next(iter(options))
        raise InputError(f"{key}.{dotted([first])} is not an option: policy {name!r} takes "
                         "none", source=source)
    try:
        validate(model, options, source, (key,))
    except InputError as exc:
        raise InputError(exc.detail.replace("is not a known key", "is not an option of "
                                            f"{name!r}"), source=source) from None


def check_class_options(cls: type, name: str, options: Mapping[str, Any], key: str,
                        source: str) -> None:
    """Options of an imported policy class: names its constructor accepts."""
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
        instantiate(cls, name, dict(options), source=source)
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
