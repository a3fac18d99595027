"""Helpers for ingest tests: write small pool files, read whole tables back."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def write_jsonl(path: Path, records: list) -> Path:
    """Write records (dicts, or raw bytes lines) as JSON Lines."""
    lines = [r if isinstance(r, bytes) else json.dumps(r, ensure_ascii=False).encode() for r in records]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def table(con, name: str, order: tuple[str, ...] = ("source_id", "source_row")) -> pd.DataFrame:
    """A whole table as a DataFrame, in a stable order (no SQL strings in Python)."""
    frame = con.table(name).df()
    keys = [key for key in order if key in frame.columns]
    return frame.sort_values(keys).reset_index(drop=True) if keys else frame
