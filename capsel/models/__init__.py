"""Models capsel ships (the demo model), real models installed from the package registry, and model loading."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def demo_model_path() -> Path:
    """Folder of the bundled demo model (a small Llama pretrained on the lab world)."""
    return Path(str(files("capsel.models").joinpath("demo")))
