"""Task: ingest source files into the pool (dedup against it; files already ingested are no-ops)."""

from __future__ import annotations

from pathlib import Path

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.ingest.pipeline import IngestOptions, ingest
from capsel.ingest.summary import IngestReport


@task(name="ingest", cache_policy=NO_CACHE)
def ingest_files(con: duckdb.DuckDBPyConnection, files: list[Path], options: IngestOptions) -> IngestReport:
    """Ingest `files` as one recorded run."""
    return ingest(con, files, options)
