"""Write the scores of one (model, scoring config) to Parquet or JSON Lines, one row per candidate."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow.parquet as pq

from capsel.db import run_sql
from capsel.errors import CapselError

FORMATS = (".parquet", ".jsonl")


def export_scores(
    con: duckdb.DuckDBPyConnection, out: Path, model_fingerprint: str, scoring_hash: str,
    domain: str | None = None,
) -> int:
    """Write the export query's rows to `out` (format from its suffix); returns the row count."""
    if out.suffix not in FORMATS:
        raise CapselError(f"[[out]] must end in {' or '.join(FORMATS)}, got {out.name!r}")
    cursor = run_sql(con, "scoring/scores_export", {
        "model_fingerprint": model_fingerprint, "scoring_hash": scoring_hash, "domain": domain,
    })
    with warnings.catch_warnings():
        # Arrow keeps the SQL types (double[] stays a list of doubles even when all are null);
        # the extra copy it warns about is small next to writing the file.
        warnings.filterwarnings("ignore", message="Arrow output on a DB-API result")
        table: Any = cursor.to_arrow_table()
    out.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed, so a reader never sees half a file.
    partial = out.with_name(f".{out.name}.partial")
    if out.suffix == ".parquet":
        pq.write_table(table, partial)
    else:
        with open(partial, "wb") as handle:
            for row in table.to_pylist():
                handle.write(orjson.dumps(row) + b"\n")
    os.replace(partial, out)
    return table.num_rows
