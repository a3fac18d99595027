"""Where installed registry models live, and turning an installed model's name into its folder.

Naming: `NAME` is the float32 install of registry entry NAME, `NAME-bfloat16` its bfloat16 install;
each is the folder of that name in the models dir ($CAPSEL_MODELS_DIR).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

from capsel.errors import CapselError, OptionError
from capsel.models import demo_model_path
from capsel.models.registry import INSTALL_DTYPES, REGISTRY, RegistryModel

# Written last into a finished install: a folder without it is not an installed model.
MANIFEST_NAME = "capsel_install.json"
# The bundled 2.6M-parameter lab model, by name wherever --model is accepted (it knows only the lab world).
DEMO_MODEL_NAME = "demo"


@dataclass(frozen=True)
class InstalledModel:
    """One (registry entry, dtype) pair and its folder; `manifest` is None while it is not installed."""

    entry: RegistryModel
    dtype: str
    folder: Path
    manifest: dict | None

    @property
    def name(self) -> str:
        """The name that stands for this install wherever a model is accepted."""
        return install_name(self.entry.name, self.dtype)


def models_dir() -> Path:
    """The models dir from the settings ($CAPSEL_MODELS_DIR or the user's cache dir), `~` expanded."""
    from capsel.config import load_settings  # pydantic-settings: read when a model is looked up, not at --help

    return load_settings().models_dir.expanduser()


def install_name(name: str, dtype: str) -> str:
    """The install's name and folder name: the registry name, suffixed with the dtype unless float32."""
    if dtype not in INSTALL_DTYPES:
        raise OptionError(f"unknown dtype {dtype!r} for an install; use {' or '.join(INSTALL_DTYPES)}")
    return name if dtype == "float32" else f"{name}-{dtype}"


def parse_install_name(name: str) -> tuple[RegistryModel, str] | None:
    """(registry entry, dtype) that an install name stands for, or None when it names no registry model."""
    if name in REGISTRY:
        return REGISTRY[name], "float32"
    for dtype in INSTALL_DTYPES[1:]:
        base = name.removesuffix(f"-{dtype}")
        if base != name and base in REGISTRY:
            return REGISTRY[base], dtype
    return None


def is_install_name(name: str) -> bool:
    """True when `name` names the bundled demo model or a registry model (in any install dtype)."""
    return name == DEMO_MODEL_NAME or parse_install_name(name) is not None


def near_install_name(name: str) -> str | None:
    """The registry name (or `demo`) `name` looks like a slip of, e.g. smolm2-135m-instruct; None when none is close."""
    names = [DEMO_MODEL_NAME, *(install_name(entry, dtype) for entry in REGISTRY for dtype in INSTALL_DTYPES)]
    near = difflib.get_close_matches(name.lower(), names, n=1, cutoff=0.8)
    return near[0] if near else None


def installed(entry: RegistryModel, dtype: str, root: Path | None = None) -> InstalledModel:
    """The install of `entry` in `dtype` under `root` (default: the models dir), finished or not."""
    folder = (root or models_dir()) / install_name(entry.name, dtype)
    manifest_path = folder / MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else None
    return InstalledModel(entry, dtype, folder, manifest)


def installed_model_path(name_or_path: str | Path) -> str:
    """An installed model's folder for its name (`demo`: the bundled demo model); an existing path, a hub id or
    any other name unchanged.

    An existing file or folder wins over a registry name, so a local folder called like one still loads.
    """
    text = str(name_or_path)
    if Path(text).expanduser().exists():
        return text
    if text == DEMO_MODEL_NAME:
        return str(demo_model_path())
    parsed = parse_install_name(text)
    if parsed is None:
        return text
    entry, dtype = parsed
    install = installed(entry, dtype)
    if install.manifest is None:
        option = "" if dtype == "float32" else f" --dtype {dtype}"
        raise CapselError(
            f"model {text} is not installed in {install.folder.parent}: "
            f"run `capsel models install {entry.name}{option}`"
        )
    return str(install.folder)


def every_install(root: Path | None = None) -> list[InstalledModel]:
    """Every registry entry in every install dtype, installed or not, in registry order."""
    root = root or models_dir()
    return [installed(entry, dtype, root) for entry in REGISTRY.values() for dtype in INSTALL_DTYPES]
