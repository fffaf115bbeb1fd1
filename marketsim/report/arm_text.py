"""What each arm of a run is, in words, for ``report.md``: its policy and inference method as
the resolved scenario names them, the registries' descriptions, and the report's "Policies"
and "Inference methods" sections."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from marketsim.aggregation.registry import METHODS
from marketsim.policies.registry import POLICIES, describe, is_import_path
from marketsim.record.metric import Metric

#: An arm's entry of the resolved scenario (``Scenario.to_dict()["arms"][i]``).
ArmSpec = Mapping[str, Any]


def arm_specs(setup: Mapping[str, Any] | None) -> dict[str, ArmSpec]:
    """The resolved scenario's arms by name (empty when the setup is unknown)."""
    if not setup or not isinstance(setup.get("arms"), list):
        return {}
    return {str(a.get("name")): a for a in setup["arms"] if isinstance(a, Mapping)}


def _named(spec: ArmSpec | None, key: str, name_key: str) -> str | None:
    """The name of an arm's ``key`` entry, written as a table (``{name_key = …}``) or a string."""
    value = (spec or {}).get(key)
    if isinstance(value, Mapping):
        return str(value.get(name_key))
    return str(value) if isinstance(value, str) else None


def policy_name(spec: ArmSpec | None) -> str | None:
    """The arm's policy name (``None`` when unknown)."""
    return _named(spec, "policy", "name")


def method_name(spec: ArmSpec | None) -> str | None:
    """The arm's inference method (``None`` when unknown)."""
    return _named(spec, "inference", "method")


def policy_options(spec: ArmSpec | None) -> dict[str, Any]:
    """The options the arm passes to its policy."""
    pol = (spec or {}).get("policy")
    opts = pol.get("options") if isinstance(pol, Mapping) else None
    return dict(opts) if isinstance(opts, Mapping) else {}


def policy_description(name: str) -> str:
    """The registry's paragraph for a built-in policy; for a ``module:Class`` policy its class
    docstring if that module is already imported (a report never imports outside code)."""
    if name in POLICIES:
        try:
            return " ".join(describe(name).split()) or "(no description)"
        except Exception as exc:  # noqa: BLE001 - a report must not fail on a broken import
            return f"(description unavailable: {exc})"
    if is_import_path(name):
        module, _, attr = name.partition(":")
        cls = getattr(sys.modules.get(module), attr, None)
        doc = getattr(cls, "DESCRIPTION", None) or getattr(cls, "__doc__", None)
        if doc:
            return "User policy (loaded by import path). " + " ".join(str(doc).split())
        return "User policy, loaded by import path from outside marketsim; no description."
    return "Unknown policy."


def method_description(name: str) -> str:
    """One line on an inference method, from the aggregation registry."""
    spec = METHODS.get(name)
    return spec.description if spec else "unknown method"


def is_score_method(name: Any) -> bool:
    """Whether ``name`` is a registry method estimating continuous scores."""
    spec = METHODS.get(name) if isinstance(name, str) else None
    return spec is not None and spec.output == "scores"


def inference_settings(spec: ArmSpec | None) -> str:
    """The arm's inference settings in words (empty if unknown)."""
    inf = (spec or {}).get("inference")
    if not isinstance(inf, Mapping):
        return ""
    if is_score_method(inf.get("method")):  # class prior, init, warm start do not apply
        return ""
    cp = inf.get("class_prior")
    cp_txt = {"true": "the class prior is the scenario's, known to the requester",
              "estimate": "the class prior is re-estimated by EM"}.get(
                  str(cp), f"the class prior is fixed at {cp}")
    init = inf.get("init")
    init_txt = {"majority": "majority vote", "random": "a random start",
                "spectral": "a spectral estimate"}.get(str(init), str(init))
    parts = [cp_txt, f"EM starts from {init_txt}" if init else ""]
    if inf.get("warm_start"):
        parts.append("each refresh starts from the previous estimate (warm start)")
    if inf.get("spectral_rule") == "authors":
        parts.append("the spectral start is the authors' released code's (numbering-dependent)")
    return "Settings: " + "; ".join(p for p in parts if p) + ". "


def policies_section(names: Sequence[str], specs: Mapping[str, ArmSpec]) -> list[str]:
    """"Policies": each policy used, its arms, description and options."""
    lines = ["## Policies", ""]
    used: dict[str, list[str]] = {}
    for name in names:
        used.setdefault(policy_name(specs.get(name)) or "?", []).append(name)
    for pol, arm_names in used.items():
        lines += [f"### `{pol}`", "", f"Arms: {', '.join(arm_names)}.", ""]
        if pol != "?":
            lines += [policy_description(pol), ""]
        opts = {k: v for n in arm_names for k, v in policy_options(specs.get(n)).items()}
        if opts:
            lines += ["Options: " + ", ".join(f"`{k} = {v!r}`" for k, v in opts.items()), ""]
    return lines


def methods_section(
    names: Sequence[str], specs: Mapping[str, ArmSpec], metric: Metric
) -> list[str]:
    """"Inference methods": one line per (method, settings) pair and the arms using it."""
    estimate_txt = ("task's mean score (and every annotator's probability of being good)"
                    if not metric.percent else "task's class (and every worker's accuracy)")
    lines = ["## Inference methods", "",
             "The inference service turns the labels bought so far into an estimate of every "
             f"{estimate_txt}; the policy only sees this estimate.",
             ""]
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        method = method_name(specs.get(name)) or "?"
        groups.setdefault((method, inference_settings(specs.get(name))), []).append(name)
    for (method, settings), arm_names in groups.items():
        desc = method_description(method) if method != "?" else "unknown (no scenario found)"
        lines.append(f"- `{method}` — {desc}. {settings}Arms: {', '.join(arm_names)}.")
    lines.append("")
    return lines
