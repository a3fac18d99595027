"""Helpers for ingest tests on real DuckDB files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from capsel.db import open_db


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


@pytest.fixture
def db(tmp_path):
    """A fresh capsel database file, closed after the test."""
    con = open_db(tmp_path / "capsel.duckdb")
    yield con
    con.close()
