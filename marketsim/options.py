"""A component's options, declared once: the pydantic model a policy (or any configurable
component) carries as its class attribute ``Options``.

The model's fields are the options, each with its type, default, range and one-line
description (:func:`F`). Everything reads it: the constructor (:class:`Configurable`
validates its keyword arguments through it), scenario validation, the generated option tables
of the site's scenario keys and ``docs/explanation/policies/``, the JSON Schema and
``marketsim list``. It sits at the bottom of the house (layer 0) so that the components
(policies, layer 3) and the scenario schema (layer 5) share it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from marketsim.errors import InputError

#: Strict types (a boolean is not a count, NaN and infinities are not numbers), no unknown
#: keys, immutable: the scenario schema's tables and every component's options. Their
#: validators are built on first use (``defer_build``), not at import: a study's worker
#: processes only unpickle tables and never validate, so they skip building them.
STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True,
                    defer_build=True)


def F(default: Any = ..., description: str = "", *, shown: str | None = None,
      **kw: Any) -> Any:
    """A documented field; ``shown`` is the default as the docs print it when it depends on
    other keys (the model's default is then ``None``). A run's record stores the whole
    resolved scenario with a ``record_version`` and reads older records through one migration
    (:mod:`marketsim.scenario.run_migration`), so a new key needs nothing more."""
    extra: dict[str, Any] = {"x-default": shown} if shown is not None else {}
    return Field(default, description=description, json_schema_extra=extra or None, **kw)


class Options(BaseModel):
    """The component takes no options."""

    model_config = STRICT


OptionsT = TypeVar("OptionsT", bound=Options)
_NoOptions = Options


class OptionError(InputError):
    """A component refused one of its options; ``problem`` is the line without the class."""

    def __init__(self, component: str, problem: str) -> None:
        super().__init__(f"{component}: {problem}")
        self.problem = problem


def option_problem(exc: ValidationError, model: type[BaseModel]) -> str:
    """The first problem of ``exc`` as ``key message, got value`` (one line)."""
    first = exc.errors(include_url=False)[0]
    key = ".".join(str(part) for part in first["loc"]) or "options"
    if first["type"] == "extra_forbidden":
        allowed = ", ".join(model.model_fields) or "none"
        return f"{key} is not an option (allowed: {allowed})"
    return f"{key}: {first['msg'].lower()}, got {first['input']!r}"


class Configurable(Generic[OptionsT]):
    """A component configured by keyword options checked against its ``Options`` model.

    ``cls(**options)`` validates the options (an :class:`OptionError` naming the option
    otherwise) and keeps them as ``self.options``; ``get_params()`` returns them, as
    scikit-learn's estimators do (a run's identity fingerprints objects by them).
    """

    #: The options model; a subclass sets its own (the default takes none).
    Options: ClassVar[type[_NoOptions]] = _NoOptions
    #: The validated options of this object.
    options: OptionsT

    def __init__(self, **options: Any) -> None:
        try:
            self.options = cast(OptionsT, self.Options.model_validate(options))
        except ValidationError as exc:
            raise OptionError(type(self).__name__, option_problem(exc, self.Options)) from None

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The options as a dict (scikit-learn's convention; ``deep`` is accepted and
        unused: options are plain values)."""
        return self.options.model_dump()
