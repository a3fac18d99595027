"""Where a benchmark's `--save` writes its JSON: benchmarks/results/<prefix><device>-<date>.json, never overwriting."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def save(text: str, device_name: str, folder: Path, prefix: str = "") -> Path:
    """Write `text` to <folder>/<prefix><device>-<date>.json (a second run the same day gets -2, -3, ...)."""
    slug = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
    folder.mkdir(parents=True, exist_ok=True)
    stem, index = f"{prefix}{slug}-{datetime.date.today().isoformat()}", 1
    path = folder / f"{stem}.json"
    while path.exists():
        index += 1
        path = folder / f"{stem}-{index}.json"
    path.write_text(text + "\n")
    return path
