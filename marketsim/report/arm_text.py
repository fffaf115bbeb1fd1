"""What each arm of a run is, in words, for ``report.md``: its policy and inference method as
the resolved scenario names them, the registries' descriptions, and the report's "Policies"
and "Inference methods" sections."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from marketsim.aggregation.registry import known_method
from marketsim.plugins import is_import_path
from marketsim.policies.base import PolicyClass
from marketsim.policies.registry import POLICIES, fact_problem, option_values
from marketsim.record.metric import Metric
from marketsim.scenario.arm_specs import ArmSpec
from marketsim.scenario.crowd_specs import AbilitySpec
from marketsim.scenario.inference_spec import ability_settings
from marketsim.scenario.specs import Scenario


def arm_specs(setup: Scenario | None) -> dict[str, ArmSpec]:
    """The resolved scenario's arms by name (empty when the setup is unknown)."""
    return {} if setup is None else {arm.name: arm for arm in setup.arms}


def policy_name(spec: ArmSpec | None) -> str | None:
    """The arm's policy name (``None`` when unknown)."""
    return None if spec is None else spec.policy.name


def method_name(spec: ArmSpec | None) -> str | None:
    """The arm's inference method (``None`` when unknown)."""
    return None if spec is None or spec.inference is None else spec.inference.method


def policy_options(spec: ArmSpec | None) -> dict[str, Any]:
    """The options the arm passes to its policy."""
    return {} if spec is None else spec.policy.options


def _loaded_class(name: str) -> PolicyClass | None:
    """The class of a built-in policy, or of a ``module:Class`` policy whose module is already
    imported (a report never imports outside code) and whose facts are sound; else ``None``."""
    if name in POLICIES:
        return POLICIES[name]
    module, _, attr = name.partition(":")
    found = vars(sys.modules[module]).get(attr) if module in sys.modules else None
    if isinstance(found, type) and fact_problem(found) is None:
        return found
    return None


def policy_description(name: str, options: Mapping[str, Any] | None = None) -> str:
    """The policy's words (its class's ``describe``, with the options it ran with when they
    are valid: a preset then says its overlap rule with their values), for a built-in policy
    or a ``module:Class`` policy whose module is already imported."""
    cls = _loaded_class(name)
    if cls is not None:
        try:
            text = cls.describe(None if options is None else option_values(cls, options))
        except Exception as exc:  # noqa: BLE001 - a report must not fail on a plug-in's words
            return f"(description unavailable: {exc})"
        text = text or "(no description)"
        return text if name in POLICIES else "User policy (loaded by import path). " + text
    if is_import_path(name):
        return "User policy, loaded by import path from outside marketsim; no description."
    return "Unknown policy."


def method_description(name: str) -> str:
    """One line on an inference method, from its class (:mod:`marketsim.aggregation.registry`;
    an import-path method's once its module is imported)."""
    cls = known_method(name)
    return cls.description if cls else "unknown method"


def method_values(spec: ArmSpec | None) -> dict[str, Any]:
    """Every setting the arm's inference method runs with (unset ones ``None``)."""
    if spec is None or spec.inference is None or known_method(spec.inference.method) is None:
        return {}
    return spec.inference.options.model_dump()


def method_text(spec: ArmSpec | None, ability: AbilitySpec | None = None) -> str:
    """The arm's inference method in words, as its class words it
    (:meth:`~marketsim.aggregation.estimator.Estimator.describe`): its description and every
    setting it runs with; an unset ability-prior setting is the scenario's recorded
    ``[workers.ability]`` value (``ability``)."""
    name = method_name(spec)
    cls = known_method(name) if name else None
    if name is None or cls is None:
        return "unknown method"
    values = method_values(spec)
    from_ability = {k: key for k, key in ability_settings(name).items()
                    if values.get(k) is None}
    ability = ability or AbilitySpec()
    values.update((k, getattr(ability, key)) for k, key in from_ability.items())
    return cls.describe(values, inherited=from_ability)


def policy_values(spec: ArmSpec | None) -> dict[str, Any]:
    """Every option the arm's policy runs with: the scenario's, and the defaults of a built-in
    policy's options model for the others (an import-path policy: the scenario's only)."""
    name = policy_name(spec)
    cls = POLICIES.get(name) if name else None
    defaults = ({k: f.get_default(call_default_factory=True)
                 for k, f in cls.Options.model_fields.items()} if cls is not None else {})
    return {**defaults, **policy_options(spec)}


def _options(values: Mapping[str, Any]) -> str:
    return ", ".join(f"`{k} = {v!r}`" for k, v in values.items())


def options_lines(arm_names: Sequence[str], specs: Mapping[str, ArmSpec]) -> list[str]:
    """The options of the arms of one policy: one line when they run alike, else the options
    they share and a line per arm with its own values of the others."""
    values = {n: policy_values(specs.get(n)) for n in arm_names}
    keys = list(dict.fromkeys(k for v in values.values() for k in v))
    if not keys:
        return []
    missing = object()
    differ = [k for k in keys if len({repr(v.get(k, missing)) for v in values.values()}) > 1]
    shared = {k: values[arm_names[0]][k] for k in keys if k not in differ}
    if not differ:
        return [f"Options (the scenario's, defaults filled in): {_options(shared)}", ""]
    lines = ["Options (the scenario's, defaults filled in), each arm's own where they differ:",
             ""]
    lines += [f"- *{n}*: " + ", ".join(
        f"`{k} = {values[n][k]!r}`" if k in values[n] else f"`{k}` not set (the policy's own "
        "default)" for k in differ) for n in arm_names]
    if shared:
        lines += [f"- every arm above: {_options(shared)}"]
    return [*lines, ""]


def policies_section(names: Sequence[str], specs: Mapping[str, ArmSpec]) -> list[str]:
    """"Policies": each policy used, its arms, description and each arm's options."""
    lines = ["## Policies", ""]
    used: dict[str, list[str]] = {}
    for name in names:
        used.setdefault(policy_name(specs.get(name)) or "?", []).append(name)
    for pol, arm_names in used.items():
        lines += [f"### `{pol}`", "", f"Arms: {', '.join(arm_names)}.", ""]
        if pol != "?":
            values = [policy_values(specs.get(n)) for n in arm_names]
            alike = all(v == values[0] for v in values)
            lines += [policy_description(pol, values[0] if alike else None), ""]
        lines += options_lines(arm_names, specs)
    return lines


def methods_section(
    names: Sequence[str], specs: Mapping[str, ArmSpec], metric: Metric,
    setup: Scenario | None = None,
) -> list[str]:
    """"Inference methods": one line per (method, settings) pair and the arms using it
    (``setup``: the resolved scenario, whose ability distribution a prior defaults to)."""
    ability = None if setup is None else setup.workers.ability
    estimate_txt = ("task's mean score (and every annotator's probability of being good)"
                    if not metric.percent else "task's class (and every worker's accuracy)")
    lines = ["## Inference methods", "",
             "The inference service turns the labels bought so far into an estimate of every "
             f"{estimate_txt}; the policy only sees this estimate.",
             ""]
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        method = method_name(specs.get(name)) or "?"
        text = method_text(specs.get(name), ability) if method != "?" \
            else "unknown (no scenario found)"
        groups.setdefault((method, text), []).append(name)
    for (method, text), arm_names in groups.items():
        lines.append(f"- `{method}` — {text}. Arms: {', '.join(arm_names)}.")
    lines.append("")
    return lines
