"""One arm of a study, ``[[arms]]``: a policy (:class:`PolicySpec`) paired with an inference
service (:class:`~marketsim.scenario.inference_spec.InferenceSpec`), with its own initial graph,
gold questions and blocking rule if it has them."""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, PrivateAttr, model_serializer

from marketsim.errors import InputError
from marketsim.options import F
from marketsim.policies.base import AssignmentPolicy, PolicyClass, policy_type
from marketsim.policies.registry import POLICIES, instantiate, policy_class
from marketsim.scenario.inference_spec import InferenceSpec
from marketsim.scenario.market_specs import INITIAL_GRAPHS, BlockingSpec, BudgetSpec, GoldSpec
from marketsim.scenario.validation import KeyProblem
from marketsim.tables import Table


class PolicySpec(Table):
    """``[arms.policy]``: a policy name, or this table whose other keys are the policy's
    options (checked against the policy's option schema, `docs/policies.md`)

    The class that runs is resolved once, when the scenario is: the registry's class for a
    built-in name, the imported class for an import path resolved with imports allowed, none
    for an import path resolved without (``validate`` checks only its shape). A policy object
    given in Python (``name`` is then its class name) runs as a fresh deep copy in every unit,
    so units stay independent whatever the number of jobs."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, allow_inf_nan=False)

    name: str = F(..., "a built-in policy (`python -m marketsim list`) or a "
                  "`package.module:Class` import path (runs only with `--allow-imports`)")
    _cls: PolicyClass | None = PrivateAttr(default=None)
    _obj: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """A built-in policy's class is known from its name at once."""
        self._cls = POLICIES.get(self.name)

    @classmethod
    def of(cls, name: str, options: dict[str, Any] | None = None, *,
           policy_cls: PolicyClass | None = None, obj: Any = None) -> PolicySpec:
        """The spec of policy ``name`` with ``options``, its class (and object) known."""
        spec = cls.model_validate({"name": name, **(options or {})})
        if policy_cls is not None:
            spec._cls = policy_cls
        spec._obj = obj
        return spec

    @property
    def options(self) -> dict[str, Any]:
        """The policy's options as the scenario gives them (sorted by name)."""
        return dict(sorted((self.model_extra or {}).items()))

    @property
    def cls(self) -> PolicyClass | None:
        """The class that runs, if resolved."""
        return self._cls

    @property
    def policy_type(self) -> PolicyClass | None:
        """The class whose facts describe what runs: the resolved class, or the policy
        object's; ``None`` for an import path not imported yet."""
        return policy_type(self._obj) if self._obj is not None else self._cls

    @property
    def obj(self) -> Any:
        """The policy object given in Python, or ``None``."""
        return self._obj

    def with_class(self, policy_cls: PolicyClass) -> PolicySpec:
        """This spec with its import path resolved to ``policy_cls``."""
        spec = self.model_copy()
        spec._cls = policy_cls
        return spec

    def build(self, *, allow_imports: bool = False, source: str | None = None
              ) -> AssignmentPolicy:
        """A fresh policy object with this spec's options (an import path not resolved yet
        is imported now, if allowed; a policy object is deep-copied)."""
        if self._obj is not None:
            return copy.deepcopy(self._obj)
        cls = self._cls
        if cls is None:
            cls = policy_class(self.name, allow_imports=allow_imports, source=source)
        return instantiate(cls, self.name, self.options, source=source)

    @property
    def resolved(self) -> bool:
        """The class is known (a built-in policy, or an import path imported at parse)."""
        return self._cls is not None

    def require_class(self, source: str | None) -> None:
        """Raise the one-line error of an import path that was not allowed to be imported."""
        if self._cls is None:
            raise InputError(
                f"policy {self.name!r} is an import path and would run outside code; "
                "pass --allow-imports if you trust this scenario", source=source)

    @model_serializer(mode="plain")
    def _table(self) -> str | dict[str, Any]:
        """The name alone, or the table with the options."""
        return {"name": self.name, **self.options} if self.model_extra else self.name


def _name_or_table(key: str) -> Any:
    """A before-validator: a name stands for ``{key = name}``; a table stays a table."""
    def read(value: Any) -> Any:
        if isinstance(value, str):
            return {key: value}
        if value is not None and not isinstance(value, dict | InferenceSpec | PolicySpec):
            raise KeyProblem("", f"must be a string or a table, got {value!r}"[:200])
        return value
    return read


#: ``policy = "name"`` or ``[arms.policy]``.
Policy = Annotated[PolicySpec, BeforeValidator(_name_or_table("name"),
                                               json_schema_input_type=str | PolicySpec)]
#: ``inference = "method"`` or ``[arms.inference]``.
Inference = Annotated[InferenceSpec, BeforeValidator(_name_or_table("method"),
                                                     json_schema_input_type=str | InferenceSpec)]


class ArmSpec(Table):
    """``[[arms]]`` (one table per arm, at least one)

    A policy paired with an inference service."""

    name: str = F(..., "unique label of the arm in curves and reports", min_length=1)
    policy: Policy = F(..., "a policy name or a table {name = ..., option = ...}; a built-in "
                       "policy must fit the market")
    inference: Inference = F(None, "a method name, or a table (below)",
                             shown="the market's default method")
    initial: Literal[INITIAL_GRAPHS] | None = F(  # type: ignore[valid-type]
        None, "this arm's own initial graph", shown="budget.initial")
    gold: GoldSpec | None = F(None, "this arm's own gold questions (a table like `[gold]`), "
                              "instead of the scenario's: e.g. a rule-based requester arm",
                              shown="[gold]")
    blocking: BlockingSpec | None = F(None, "this arm's own blocking rule (a table like "
                                      "`[blocking]`; needs gold questions, the arm's or the "
                                      "scenario's)", shown="[blocking]")

    def initial_graph(self, budget: BudgetSpec) -> str:
        """The initial graph this arm starts from."""
        return budget.initial if self.initial is None else self.initial
