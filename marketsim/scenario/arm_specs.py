"""One arm of a study, ``[[arms]]``: a policy (:class:`PolicySpec`) paired with an inference
service (:class:`~marketsim.scenario.inference_spec.InferenceSpec`), with its own initial graph,
gold questions and blocking rule if it has them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_serializer,
    model_validator,
)

from marketsim.errors import InputError
from marketsim.options import F
from marketsim.plugins import is_import_path
from marketsim.policies.base import AssignmentPolicy, PolicyClass, policy_type
from marketsim.policies.registry import POLICIES, instantiate, policy_class
from marketsim.scenario.inference_spec import Inferences, InferenceSpec
from marketsim.scenario.market_specs import INITIAL_GRAPHS, BlockingSpec, BudgetSpec, GoldSpec
from marketsim.scenario.validation import KeyProblem, suggest
from marketsim.tables import Table, tagged_union


class PolicySpec(Table):
    """``[arms.policy]``: a policy name, or this table whose other keys are the policy's
    options (checked against the policy's option schema, `docs/explanation/policies/`)

    The table is a union with one variant per built-in policy (:data:`POLICY_VARIANTS`: the
    name and the policy class's ``Options``, nothing else) and this class for an import path,
    whose options are kept as written and checked against the class once it is imported. The
    class that runs is resolved once, when the scenario is: the registry's class for a
    built-in name, the imported class for an import path resolved with imports allowed, none
    for an import path resolved without (``validate`` checks only its shape). A policy object
    given in Python (``name`` is then its class name) runs as a fresh deep copy in every unit,
    so units stay independent whatever the number of jobs."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, allow_inf_nan=False,
                              defer_build=True)

    name: str = Field(..., description="a built-in policy (`python -m marketsim list`) or a "
                      "`package.module:Class` import path (runs only with `--allow-imports`)",
                      json_schema_extra={"pattern": ":"})
    _cls: PolicyClass | None = PrivateAttr(default=None)
    _obj: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """A built-in policy's class is known from its name at once."""
        self._cls = POLICIES.get(self.name)

    @field_validator("name")
    @classmethod
    def _known_name(cls, name: str) -> str:
        if name in POLICIES or is_import_path(name):
            return name
        raise KeyProblem("", f"must be one of {', '.join(POLICIES)} or a "
                         f"'package.module:Class' path; got {name!r}"
                         f"{suggest(name, list(POLICIES))}")

    @model_validator(mode="before")
    @classmethod
    def _known_options(cls, data: Any) -> Any:
        """A built-in policy's unknown option, named as such (with the policy's options and a
        did-you-mean) rather than as an unknown key."""
        if cls.model_config.get("extra") != "forbid" or not isinstance(data, Mapping):
            return data
        taken = [k for k in cls.model_fields if k != "name"]
        for key in map(str, data):
            if key == "name" or key in taken:
                continue
            if not taken:
                raise KeyProblem(key, f"is not an option: policy {data.get('name')!r} takes "
                                 "none")
            raise KeyProblem(key, f"is not an option of {data.get('name')!r} (allowed here: "
                             f"{', '.join(taken)}){suggest(key, taken)}")
        return data

    @classmethod
    def of(cls, name: str, options: dict[str, Any] | None = None, *,
           policy_cls: PolicyClass | None = None, obj: Any = None) -> PolicySpec:
        """The spec of policy ``name`` with ``options``, its class (and object) known (a
        policy object's class name, or a record's: not checked as a file's name is)."""
        spec = cls.model_construct(name=name, **(options or {}))
        if policy_cls is not None:
            spec._cls = policy_cls
        spec._obj = obj
        return spec

    @property
    def options(self) -> dict[str, Any]:
        """The policy's options as the scenario gives them (sorted by name; a built-in
        policy's validated by its ``Options``)."""
        given = {k: getattr(self, k) for k in self.model_fields_set if k != "name"}
        return dict(sorted({**given, **(self.model_extra or {})}.items()))

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
        """The name alone, or the table with the options given."""
        options = self.options
        return {"name": self.name, **options} if options else self.name


def _policy_variant(cls: PolicyClass) -> type[PolicySpec]:
    """``[arms.policy]`` of built-in policy ``cls``: its name and its ``Options`` (its keys,
    defaults, ranges and rules), no other key."""
    clash = [k for k in cls.Options.model_fields if hasattr(PolicySpec, k)]
    if clash:
        raise RuntimeError(f"policy {cls.name!r}: option {clash[0]!r} is a name the policy "
                           "table's spec reads; rename the option")
    namespace = {
        "__module__": __name__, "__qualname__": f"{cls.__name__}Spec",
        "__doc__": f"``[arms.policy]`` with ``name = \"{cls.name}\"``.",
        "__annotations__": {"name": Literal[cls.name]},
        "name": Field(..., description=f"`{cls.name}`"),
        "model_config": ConfigDict(strict=True, extra="forbid", frozen=True,
                                   allow_inf_nan=False)}
    metaclass: Any = type(PolicySpec)  # pydantic's: the class statement's, made by hand
    variant: type[PolicySpec] = metaclass(f"{cls.__name__}Spec", (PolicySpec, cls.Options),
                                          namespace)
    return variant


#: Each built-in policy's ``[arms.policy]`` variant, by policy name.
POLICY_VARIANTS: dict[str, type[PolicySpec]] = {
    name: _policy_variant(cls) for name, cls in POLICIES.items()}
# each variant is a name of this module, where pickle finds it (scenarios travel to worker
# processes and Dask workers)
globals().update({v.__name__: v for v in POLICY_VARIANTS.values()})


if TYPE_CHECKING:
    Policies = PolicySpec
else:
    #: ``[arms.policy]``: a union over the built-in policies' variants and the generic
    #: :class:`PolicySpec` (an import path; an unknown name, refused there with the list),
    #: discriminated by ``name``.
    Policies = tagged_union(POLICY_VARIANTS, PolicySpec, "name")


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
Policy = Annotated[Policies, BeforeValidator(_name_or_table("name"),
                                             json_schema_input_type=Union[str, Policies])]  # noqa: UP007
#: ``inference = "method"`` or ``[arms.inference]``.
Inference = Annotated[Inferences, BeforeValidator(_name_or_table("method"),
                                                  json_schema_input_type=Union[str, Inferences])]  # noqa: UP007


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
