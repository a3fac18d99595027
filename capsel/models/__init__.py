"""Models capsel ships (the demo model) and loading of local Hugging Face causal LMs."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def demo_model_path() -> Path:
    """Folder of the bundled demo model (a small Llama pretrained on the lab world)."""
    return Path(str(files("capsel.models").joinpath("demo")))
