"""Readable metavars in --help (N, FILE, 10%|800, cpu|cuda, none on flags, PATH...), set once for every command.

typer 0.29 shows an option's Python type instead (<str>, <bool>, <list[Path]>) and a required argument as
{paths}.... Apps made with `ReadableTyper` fill in each metavar an option does not spell itself: first by the
flag (the same flag reads the same in every command), then by the type.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, get_args, get_origin

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

if TYPE_CHECKING:
    from typer._click import Context

# Flags whose type alone says too little (a str budget, a Path that must be a folder); an option's own
# metavar= wins (export-scores --out is a file).
FLAG_METAVARS = {
    "--budget": "10%|800",
    "--budgets": "BUDGET,...",
    "--config": "FILE",
    "--config-hash": "HASH",
    "--db": "FILE",
    "--domain": "DOMAIN",
    "--encoder": "DIR",
    "--find-links": "DIR",
    "--generator": "hf|vllm",
    "--junk-kinds": "KIND,...",
    "--map": "FIELD=SOURCE,...",
    "--model": "MODEL",
    "--out": "DIR",
    "--pool": "world|real",
    "--ppl-guard": "PERCENTILE",
    "--prompt-format": "raw|chat|auto",
    "--ray-address": "ADDRESS",
    "--rater": "DIR",
    "--rater-label": "LABEL",
    "--source": "DIR",
    "--target": "FILE",
    "--texts": "FILE",
}
TYPE_METAVARS = {int: "N", float: "X", str: "TEXT", Path: "PATH"}
LONG_CHOICES = 24


def readable_metavar(param: TyperOption | TyperArgument) -> str:
    """What `param` shows for its value: nothing for a flag; a repeated option shows one value (its help says so)."""
    if isinstance(param, TyperOption) and (param.is_flag or param.count):
        return ""
    descriptor = param.type_descriptor
    if descriptor.choices:
        choices = [str(getattr(choice, "value", choice)) for choice in descriptor.choices]
        # rich wraps a help cell at spaces only: a long list gets them, or it is cut inside a name
        return ("|" if len("|".join(choices)) <= LONG_CHOICES else " | ").join(choices)
    if isinstance(param, TyperArgument):
        return param.name.upper() if param.name else "VALUE"
    named = next((FLAG_METAVARS[flag] for flag in param.opts if flag in FLAG_METAVARS), None)
    annotation = descriptor.annotation
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    return named or TYPE_METAVARS.get(annotation, "VALUE")


class ShownArgument(TyperArgument):
    """An argument shown as its metavar alone (PATH..., [NAME]): typer would add its type and braces."""

    @property
    def display_name_raw(self) -> str:
        name = self.metavar or (self.name or "").upper()
        return f"{name}..." if self.nargs != 1 and not name.endswith("...") else name

    def display_type_rich(self, ctx: Context) -> str | None:
        return None

    def get_usage_pieces(self, ctx: Context) -> list[str]:
        return [self.display_name_raw if self.required else f"[{self.display_name_raw}]"]


def with_readable_metavars(params: list[Any]) -> list[Any]:
    """`params` with a metavar wherever none was spelled, and arguments shown by it."""
    for param in params:
        if isinstance(param, TyperOption | TyperArgument) and param.metavar is None:
            param.metavar = readable_metavar(param)
        if type(param) is TyperArgument:
            # typer builds the argument itself and offers no hook for its help row: specialise it in place
            param.__class__ = ShownArgument
    return params


class ReadableCommand(TyperCommand):
    """A command whose --help shows readable metavars."""

    def get_params(self, ctx: Context) -> list[Any]:
        return with_readable_metavars(super().get_params(ctx))


class ReadableGroup(TyperGroup):
    """A group whose own options (--help, --version) show readable metavars."""

    def get_params(self, ctx: Context) -> list[Any]:
        return with_readable_metavars(super().get_params(ctx))


class ReadableTyper(typer.Typer):
    """A typer app whose group and commands show readable metavars; every capsel app is one."""

    def __init__(self, **options: Any) -> None:
        super().__init__(cls=ReadableGroup, **options)

    def command(self, *args: Any, **options: Any) -> Callable[[Any], Any]:
        return super().command(*args, **{"cls": ReadableCommand, **options})
