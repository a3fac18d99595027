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
from typing import TYPE_CHECKING, Iterable, Iterator

from pydantic import BaseModel

from capsel.errors import CapselError
from capsel.methods.scorer_spec import ScorerSpec
from capsel.models.installed import is_install_name
from capsel.models.packaged import is_packaged
from capsel.object_storage.urls import is_url, local_path_text, under_prefix

if TYPE_CHECKING:  # the checks read settings they are given; a flow's --help reads no environment
    from capsel.config import Settings

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


def check_run(parameters: BaseModel, allowed: Settings, *, db_path: str | None = None,
              output_root: str | None = None, sources: Iterable[str] = (), models: Iterable[NamedModel] = (),
              scorer: ScorerSpec | None = None) -> None:
    """Every check of one run's parameters, in one pass: their texts representable, then each place they name
    (database, output root, sources, models, and every model and file the scorer spec loads) where the
    deployment (`allowed`) lets a run name it.

    One pass over (parameter, value, kind) rows rather than a check per parameter, so every kind of place is judged
    by the same rule (`_refusal`) and a new parameter is one more row."""
    check_representable(parameters)
    places: list[tuple[str, str | None, str]] = [
        ("db_path", db_path, "database"), ("output_root", output_root, "output"),
        *(("sources.paths", path, "source") for path in sources),
    ]
    named = list(models)
    if scorer is not None:
        named += [(f"scoring.{name}.path", model.path, model.allow_pickle, model.trust_remote_code)
                  for name, model in scorer.models().items()]
        places += [(f"scoring.{name}", path, "source") for name, path in scorer.sources().items()]
    for parameter, path, allow_pickle, trust_remote_code in named:
        for switch, on in (("trust_remote_code", trust_remote_code), ("allow_pickle", allow_pickle)):
            if on and not allowed.allow_remote_code:
                raise RunParameterError(f"run parameter {parameter.rpartition('.')[0] or parameter}.{switch} runs "
                                        "code shipped with the checkpoint; a flow run may turn it on only where the "
                                        "deployment sets CAPSEL_ALLOW_REMOTE_CODE=true")
        places.append((parameter, path, "model"))
    for parameter, value, kind in places:
        if value is not None and value not in _TYPED and (refusal := _refusal(parameter, value, kind, allowed)):
            raise RunParameterError(refusal)


# (parameter, model path, allow_pickle, trust_remote_code): a model a run loads, with its checkpoint-code switches
NamedModel = tuple[str, "str | None", bool, bool]

# the settings that name each kind of place's roots, for the refusal to point at
_ROOTS_NAMED = {"database": "CAPSEL_OUTPUT_ROOT", "output": "CAPSEL_OUTPUT_ROOT",
                "source": "CAPSEL_INCOMING_DIR, CAPSEL_SOURCE_ROOTS", "model": "CAPSEL_MODELS_DIR, CAPSEL_MODEL_ROOTS"}
# the kinds that may also be a storage URL (under CAPSEL_STORAGE_ROOTS)
_STORED = ("output", "source")


def _refusal(parameter: str, value: str, kind: str, allowed: Settings) -> str | None:
    """Why `value`, a place of `kind` a run names, lies outside what the deployment allows; None when it lies inside.

    Local paths are resolved first, so `..` and symlinks pointing out of a root do not count as inside it; a storage
    URL lies under a storage root by whole path components, and without `..` (which could climb back out). A model
    may also be the deployment's CAPSEL_MODEL or an installed model's name (never a hub id: that would download),
    a database the deployment's own CAPSEL_DB_PATH."""
    if kind == "model" and (value == allowed.model or (
            # an existing path is loaded as a path, whatever its name: it must pass the folder check
            not Path(value).expanduser().exists() and (is_packaged(value) or is_install_name(value)))):
        return None
    roots = [_resolved(root) for root in {
        "database": [allowed.output_root], "output": [allowed.output_root],
        "source": ([allowed.incoming_dir] if allowed.incoming_dir else []) + [Path(r) for r in allowed.source_roots],
        "model": [allowed.models_dir, *map(Path, allowed.model_roots)],
    }[kind]]
    variable = _ROOTS_NAMED[kind]
    if not is_url(value):
        target = _resolved(value)
        own = _resolved(allowed.db_path) if kind == "database" else None
        if target == own or any(target == root or root in target.parents for root in roots):
            return None
        if not roots:
            return (f"run parameter {parameter} {value!r} names a folder, but the deployment sets no {variable} for "
                    "a run's folders to lie in")
    elif kind in _STORED:
        if any((value.rstrip("/") == root.rstrip("/") or under_prefix(value, root))
               and ".." not in value.split("://", 1)[-1].split("/") for root in allowed.storage_roots):
            return None
        return (f"run parameter {parameter} {value!r} is not under a storage root the deployment allows "
                f"(CAPSEL_STORAGE_ROOTS: {', '.join(allowed.storage_roots) or 'none set'})")
    if kind == "database":
        return (f"run parameter db_path {value!r} is outside the output root {str(roots[0])!r} "
                "(CAPSEL_OUTPUT_ROOT); a run's database lies there or is the deployment's CAPSEL_DB_PATH")
    if kind == "model":
        return (f"run parameter {parameter} {value!r} is not an installed model, the deployment's CAPSEL_MODEL or a "
                f"folder under {', '.join(repr(str(root)) for root in roots)} ({variable})")
    return f"run parameter {parameter} {value!r} is outside {str(roots[0])!r} ({variable})"


def _resolved(path: str | Path) -> Path:
    # resolved, so `..` and symlinks pointing out of a root do not count as inside it
    return Path(local_path_text(str(path))).expanduser().resolve()
