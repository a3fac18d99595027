"""Every method capsel knows: its own modules, then the plugins other packages declare under the `capsel.methods`
entry-point group (`name = "package.module"` or `"package.module:METHOD"`, naming a `Method`)."""

from __future__ import annotations

import importlib
import warnings
from functools import cache
from importlib.metadata import entry_points
from typing import Iterable

from capsel.errors import CapselError, CapselWarning, OptionError
from capsel.methods.method import Method
from capsel.methods.spec import MethodSpec

ENTRY_POINT_GROUP = "capsel.methods"
# what a run scores and selects by when it names no method: the paper's
DEFAULT_METHOD = "cap"
# the seeded control every comparison draws beside the scored methods
CONTROL_METHOD = "random"
BUILT_IN = ("cap", "random_draw", "ppl", "ifd", "qurating", "kcenter", "less")


class PluginWarning(CapselWarning):
    """A plugin that could not be loaded, or that names a method already taken: it is skipped, nothing else is."""


@cache
def all_methods() -> dict[str, Method]:
    """name -> Method: capsel's own in a fixed order, then the installed plugins by entry-point name.

    A plugin that fails to import, declares no Method, or reuses a name already taken is named in one warning and
    skipped: one broken package never disables the commands and flows the others serve.
    """
    found: dict[str, Method] = {}
    for module in BUILT_IN:
        builtin = importlib.import_module(f"capsel.methods.{module}").METHOD
        _check_names(builtin, None)
        found[builtin.name] = builtin
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda point: point.name):
        where = f"the {ENTRY_POINT_GROUP} plugin {point.name} = {point.value!r} ({_package(point)})"
        try:
            method = _plugin(point)
        except Exception as error:  # noqa: BLE001 (whatever a third party's import raises, it costs that plugin)
            warnings.warn(f"{where} was skipped: {type(error).__name__}: {error}", PluginWarning, stacklevel=2)
            continue
        try:
            _check_names(method, point.name)
        except CapselError as error:
            warnings.warn(f"{where} was refused: {error}", PluginWarning, stacklevel=2)
            continue
        if method.name in found:
            warnings.warn(f"{where} was refused: the method name {method.name!r} is already taken", PluginWarning,
                          stacklevel=2)
            continue
        found[method.name] = method
    return found


def _check_names(method: Method, entry_point: str | None) -> None:
    """One name everywhere: the entry point's, the declaration's and the spec's must agree."""
    spec_name = method.spec.model_fields["method"].default if method.spec is not None else method.name
    for what, other in (("its entry point", entry_point), ("its spec", spec_name)):
        if other is not None and other != method.name:
            raise CapselError(f"it declares the method {method.name!r} but {what} names it {other!r}; a method's "
                              "name is written once, in its declaration")


def _package(point) -> str:
    distribution = getattr(point, "dist", None)
    return f"package {distribution.name} {distribution.version}" if distribution is not None else "unknown package"


def _plugin(point) -> Method:
    loaded = point.load()
    method = getattr(loaded, "METHOD", loaded)
    if not isinstance(method, Method):
        raise CapselError("it names no capsel.plugin.Method (a module with METHOD, or the Method itself)")
    return method


def method(name: str) -> Method:
    """The method called `name`, or an OptionError listing them."""
    methods = all_methods()
    if name not in methods:
        raise OptionError(f"unknown method {name!r}; choose one of {', '.join(methods)}")
    return methods[name]


def method_names() -> tuple[str, ...]:
    """Every method a selection can use."""
    return tuple(all_methods())


def methods_help(methods: Iterable[Method]) -> str:
    """`name: summary (help)` of each method, for an option's help or a form's description."""
    return "; ".join(f"{declared.name}: {declared.summary}" + (f" ({declared.help})" if declared.help else "")
                     for declared in methods)


def scored_methods() -> list[Method]:
    """The methods that score candidates themselves (each has a spec and a scorer), in registry order."""
    return [method for method in all_methods().values() if method.spec is not None]


def baseline_methods() -> list[Method]:
    """The scored methods `capsel score-baseline` runs: all but those with a command of their own (CAP's)."""
    return [method for method in scored_methods() if method.score_command is None]


def build_scorer(spec: MethodSpec):
    """The scorer of `spec`'s method: identity and config now, weights on first use."""
    return method(spec.method).build_scorer(spec)
