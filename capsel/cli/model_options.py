"""Command-line options generated from a typed parameter model, so a command and a flow declare an option once.

Each field of the model gives one option: its flag (capsel/cli/flags.py), its help (the field's description, which
the Prefect form shows too), its choices and its default. The options carry no bounds of their own: the values
typed become the model, whose validators are the one set of bounds and messages, each problem named by its flag.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Optional, TypeVar, Union, get_args, get_origin, get_type_hints

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from capsel.cli.flags import flag, switch
from capsel.cli.specs import flag_problems
from capsel.errors import OptionError

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class OptionGroup:
    """The options of `model`'s fields, but those in `skip`; `path` is where the model sits in a flow's parameters
    (e.g. "selection"), which the flags table may use to name a field apart from a namesake elsewhere."""

    model: type[BaseModel]
    path: str = ""
    skip: frozenset[str] = frozenset()

    def fields(self) -> dict[str, FieldInfo]:
        """The fields that become options, in the model's order."""
        return {name: info for name, info in self.model.model_fields.items() if name not in self.skip}

    def flag(self, name: str) -> str:
        """The flag of field `name`."""
        return flag(f"{self.path}.{name}" if self.path else name)

    def names(self) -> set[str]:
        """The fields that are options."""
        return set(self.fields())

    def parameters(self, key: str) -> list[inspect.Parameter]:
        """The command's parameters for these options, named `key__field`."""
        return [_parameter(self, key, name, info) for name, info in self.fields().items()]

    def collect(self, typed: dict[str, Any]) -> dict[str, Any]:
        """What the command receives: the fields typed (those left out are absent, so a flow's config file or the
        model's defaults decide them)."""
        return {name: value for name, value in typed.items() if value not in (None, [])}


@dataclass(frozen=True)
class OptionBundle:
    """Options several commands share, declared once as a dataclass whose fields are typer options (an
    `Annotated[..., typer.Option(...)]` and a default each); the command receives an instance."""

    cls: type

    def names(self) -> set[str]:
        """The options' names."""
        return {field.name for field in dataclasses.fields(self.cls)}

    def parameters(self, key: str) -> list[inspect.Parameter]:
        """The command's parameters for these options, named `key__field`."""
        hints = get_type_hints(self.cls, include_extras=True)
        return [inspect.Parameter(f"{key}__{field.name}", inspect.Parameter.KEYWORD_ONLY, default=field.default,
                                  annotation=hints[field.name]) for field in dataclasses.fields(self.cls)]

    def collect(self, typed: dict[str, Any]) -> Any:
        """What the command receives: the bundle with every option's value."""
        return self.cls(**typed)


def _typed(annotation: Any) -> Any:
    """The field's type as an option takes it: None (not typed) allowed; the model's own default applies then."""
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        annotation = kept[0] if len(kept) == 1 else Union[tuple(kept)]
    return Optional[annotation]


def _help(info: FieldInfo) -> str:
    text = info.description or ""
    text += "" if text.endswith(".") else "."
    if info.is_required():
        return text + " Required."
    default = info.get_default(call_default_factory=True)
    # an off switch or an unset value needs no default said, nor a description that names its own
    if not (default is None or default is False or default in ([], "") or "default" in text.lower()):
        text += f" Default: {default}."
    return text


def _parameter(group: OptionGroup, key: str, name: str, info: FieldInfo) -> inspect.Parameter:
    typed = _typed(info.annotation)
    decls = [switch(f"{group.path}.{name}" if group.path else name)] if info.annotation is bool else [group.flag(name)]
    option = typer.Option(*decls, help=_help(info), show_default=False)
    return inspect.Parameter(f"{key}__{name}", inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[typed, option])


def generated_options(**groups: OptionGroup | OptionBundle) -> Callable[[F], F]:
    """Decorator: each keyword names a parameter of the command that is replaced, in its place, by the options of
    its group; the command then receives that parameter as the group collects it."""

    def decorate(command: F) -> F:
        hints = get_type_hints(command, include_extras=True)
        parameters: list[inspect.Parameter] = []
        for parameter in inspect.signature(command).parameters.values():
            group = groups.get(parameter.name)
            if group is None:
                parameters.append(parameter.replace(annotation=hints.get(parameter.name, parameter.annotation),
                                                    kind=inspect.Parameter.KEYWORD_ONLY))
                continue
            parameters += group.parameters(parameter.name)

        own = set(inspect.signature(command).parameters)

        def run(**values: Any) -> Any:
            for key, group in groups.items():
                prefix = f"{key}__"
                typed = {name[len(prefix):]: values.pop(name) for name in list(values) if name.startswith(prefix)}
                # called from Python rather than by typer, a field may be named plainly
                typed.update({name: values.pop(name) for name in list(values)
                              if name not in own and name in group.names()})
                values[key] = group.collect(typed)
            return command(**values)

        run.__name__, run.__doc__, run.__module__ = command.__name__, command.__doc__, command.__module__
        run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return decorate


def validated(model: type[M], values: dict, what: str = "flow parameters") -> M:
    """`values` as `model`, or one OptionError naming each problem by its flag."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise OptionError(f"invalid {what}: {flag_problems(exc)}") from exc
