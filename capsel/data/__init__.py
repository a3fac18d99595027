"""Data shipped with capsel: the sample pool (every input format, bad rows of every kind), the demo's lab pool,
the real sources (GSM8K train, HumanEval; `real/`) and the real pool built from them (`real_pool/`)."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path


def sample_pool() -> tuple[Path, dict]:
    """Folder of the bundled sample pool and its manifest (which options each file needs)."""
    folder = Path(str(files("capsel.data").joinpath("sample_pool")))
    return folder, json.loads((folder / "manifest.json").read_text())
