"""What a flow run's parameters may name, checked against what the deployment's environment allows.

Whoever starts a run (a Custom run in the Prefect UI, the API, `capsel flow ... --config FILE`) chooses its
parameters; whoever owns the deployment chooses its environment (CAPSEL_* variables, job variables). So a run's
paths must lie under roots the environment sets: outputs and databases under CAPSEL_OUTPUT_ROOT, sources under
CAPSEL_INCOMING_DIR (and CAPSEL_SOURCE_ROOTS), models installed or under CAPSEL_MODELS_DIR and CAPSEL_MODEL_ROOTS,
storage URLs under CAPSEL_STORAGE_ROOTS; and checkpoint code (trust_remote_code, allow_pickle) runs only with
CAPSEL_ALLOW_REMOTE_CODE. Each check runs before the flow reads or writes anything, and a refusal is one line
naming the parameter and the root. Paths typed at the command line are the user's own choice: `capsel flow`
runs its flow in its own process and names what was typed with `trust_typed`, which these checks let through.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

from pydantic import BaseModel

from capsel.config import Settings
from capsel.errors import CapselError
from capsel.methods.scorer_spec import ScorerSpec
from capsel.models.installed import is_install_name
from capsel.models.packaged import is_packaged
from capsel.object_storage.urls import is_url, local_path_text, under_prefix

# Values typed at this process's command line (`capsel flow` runs its flow in-process); a worker has none.
_TYPED: set[str] = set()


class RunParameterError(CapselError):
    """A run parameter names something the deployment does not allow."""


def trust_typed(*values: str | Path | None) -> None:
    """Let the flow this process runs name `values` (paths, models) wherever they are: the user typed them."""
    _TYPED.update(str(value) for value in values if value is not None)


def check_representable(parameters: BaseModel) -> None:
    """Refuse, naming the parameter, any text of a run's parameters with a NUL byte or a character the file system
    cannot encode: no path can hold one, and each check below would fail on it with a bare exception."""
    for name, value in _texts(parameters.model_dump(mode="python"), ""):
        if "\x00" in value:
            raise RunParameterError(f"run parameter {name} holds a NUL byte, which no path or name can hold")
        try:
            os.fsencode(value)
        except UnicodeEncodeError as error:
            raise RunParameterError(f"run parameter {name} holds a character the file system cannot encode "
                                    f"({error.reason})") from error


def _texts(value: object, name: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield name, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _texts(item, f"{name}.{key}" if name else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _texts(item, f"{name}[{index}]")


def check_output_root(value: str | None, allowed: Settings) -> None:
    """A run's `output_root`: a folder inside CAPSEL_OUTPUT_ROOT, or a storage URL under CAPSEL_STORAGE_ROOTS."""
    if value is not None:
        _check_location("output_root", value, [allowed.output_root], "CAPSEL_OUTPUT_ROOT", allowed)


def check_db_path(value: str | None, allowed: Settings) -> None:
    """A run's `db_path`: the deployment's own CAPSEL_DB_PATH, or a file inside CAPSEL_OUTPUT_ROOT."""
    if value is None or value in _TYPED or _resolved(value) == _resolved(allowed.db_path):
        return
    if is_url(value) or not _inside(value, [allowed.output_root]):
        raise RunParameterError(f"run parameter db_path {value!r} is outside the output root "
                                f"{str(_resolved(allowed.output_root))!r} (CAPSEL_OUTPUT_ROOT); a run's database "
                                "lies there or is the deployment's CAPSEL_DB_PATH")


def check_sources(paths: Iterable[str], allowed: Settings) -> None:
    """A run's `sources.paths`: inside CAPSEL_INCOMING_DIR, or storage URLs under CAPSEL_STORAGE_ROOTS."""
    for path in paths:
        _check_source("sources.paths", path, allowed)


def check_model(value: str | None, allowed: Settings, parameter: str, allow_pickle: bool = False,
                trust_remote_code: bool = False) -> None:
    """A run's model: the deployment's CAPSEL_MODEL, an installed model's name, or a folder under
    CAPSEL_MODELS_DIR or CAPSEL_MODEL_ROOTS (never a hub id: that would fetch from the network); and its code
    switches only where CAPSEL_ALLOW_REMOTE_CODE is set."""
    for switch, on in (("trust_remote_code", trust_remote_code), ("allow_pickle", allow_pickle)):
        if on and not allowed.allow_remote_code:
            raise RunParameterError(f"run parameter {parameter.rpartition('.')[0] or parameter}.{switch} runs code "
                                    "shipped with the checkpoint; a flow run may turn it on only where the "
                                    "deployment sets CAPSEL_ALLOW_REMOTE_CODE=true")
    if value is None or value in _TYPED or value == allowed.model or _is_registry_name(value):
        return
    roots = [allowed.models_dir, *map(Path, allowed.model_roots)]
    if is_url(value) or not _inside(value, roots):
        shown = ", ".join(repr(str(_resolved(root))) for root in roots)
        raise RunParameterError(f"run parameter {parameter} {value!r} is not an installed model, the deployment's "
                                f"CAPSEL_MODEL or a folder under {shown} (CAPSEL_MODELS_DIR, CAPSEL_MODEL_ROOTS)")


def check_scorer(spec: ScorerSpec | None, allowed: Settings, parameter: str = "scoring") -> None:
    """Every model a run's scorer spec loads (`check_model` on each)."""
    if spec is None:
        return
    for name, model in spec.models().items():
        check_model(model.path, allowed, f"{parameter}.{name}.path", model.allow_pickle, model.trust_remote_code)
    for name, path in spec.sources().items():
        _check_source(f"{parameter}.{name}", path, allowed)


def _check_source(parameter: str, value: str, allowed: Settings) -> None:
    roots = ([allowed.incoming_dir] if allowed.incoming_dir else []) + [Path(root) for root in allowed.source_roots]
    _check_location(parameter, value, roots, "CAPSEL_INCOMING_DIR, CAPSEL_SOURCE_ROOTS", allowed)


def _check_location(parameter: str, value: str, roots: list[Path], variable: str, allowed: Settings) -> None:
    if value in _TYPED:
        return
    if is_url(value):
        if not any(_under_url(value, root) for root in allowed.storage_roots):
            listed = ", ".join(allowed.storage_roots) or "none set"
            raise RunParameterError(f"run parameter {parameter} {value!r} is not under a storage root the deployment "
                                    f"allows (CAPSEL_STORAGE_ROOTS: {listed})")
    elif not roots:
        raise RunParameterError(f"run parameter {parameter} {value!r} names a folder, but the deployment sets no "
                                f"{variable} for a run's folders to lie in")
    elif not _inside(value, roots):
        raise RunParameterError(f"run parameter {parameter} {value!r} is outside "
                                f"{str(_resolved(roots[0]))!r} ({variable})")


def _resolved(path: str | Path) -> Path:
    return Path(local_path_text(str(path))).expanduser().resolve()


def _inside(value: str, roots: Iterable[Path]) -> bool:
    # resolved first, so `..` and symlinks pointing out of a root do not count as inside it
    target = _resolved(value)
    return any(target == root or root in target.parents for root in map(_resolved, roots))


def _under_url(value: str, root: str) -> bool:
    # the root itself names a place too; `..` could climb back out of it
    inside = value.rstrip("/") == root.rstrip("/") or under_prefix(value, root)
    return inside and ".." not in value.split("://", 1)[-1].split("/")


def _is_registry_name(value: str) -> bool:
    # an existing path is loaded as a path, whatever its name: it must pass the folder check
    if Path(value).expanduser().exists():
        return False
    return is_packaged(value) or is_install_name(value)
